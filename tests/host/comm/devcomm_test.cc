// SPDX-License-Identifier: MIT
// The device communicator on the cpu platform: the struct ccoDevCommCreate fills, its
// device copy, the resource window's layout as peers see it, and requirement checks.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include "cco/cco.h"
#include "tests/host/testing/multiprocess.h"

namespace {

using cco_test::RunRanks;

class DevCommTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "10000", 1);
  }
};

int FieldsDeviceCopyAndInboxes(int rank, int n, const ccoUniqueId& id) {
  ccoComm* comm = nullptr;
  RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  RANK_CHECK(reqs.gdaConnectionType == CCO_GDA_CONNECTION_CROSSNODE && reqs.gdaContextCount == 4 &&
             reqs.gdaSignalCount == 16 && reqs.gdaCounterCount == 16 && reqs.lsaBarrierCount == 0);
  reqs.lsaBarrierCount = 3;
  ccoDevComm dc;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_CHECK(dc.magic == CCO_DEV_COMM_MAGIC && dc.abiVersion == CCO_ABI_VERSION && dc.size == sizeof(ccoDevComm));
  RANK_CHECK(dc.rank == rank && dc.worldSize == n && dc.lsaRank == rank && dc.lsaSize == n);
  RANK_CHECK(dc.node == 0 && dc.nNodes == 1);
  RANK_CHECK(dc.teamWorld.nRanks == n && dc.teamWorld.rank == rank && dc.teamWorld.stride == 1);
  RANK_CHECK(dc.teamLsa.nRanks == n && dc.teamLsa.rank == rank && dc.teamLsa.worldBase == 0);
  RANK_CHECK(dc.teamRail.nRanks == 1 && dc.teamRail.rank == 0 && dc.teamRail.stride == n);
  RANK_CHECK(dc.lsaBarrierCount == 3 && dc.gdaSignalCount == 16 && dc.gdaCounterCount == 16);
  RANK_CHECK(dc.lsaBarrierInboxOffset >= dc.lsaBarrierEpochOffset + 3 * 8);
  RANK_CHECK(dc.gdaShadowOffset >= dc.lsaBarrierInboxOffset + 3 * 4 * n);
  RANK_CHECK(dc.gdaFlushOffset >= dc.gdaShadowOffset + (16 + 16) * 8 && dc.resourceSize >= dc.gdaFlushOffset);
  // One node: the default CROSSNODE connects nobody, so no rings.
  RANK_CHECK(dc.gdaPeerCount == 0 && dc.gdaRingSlots == 0 && dc.gdaSignals == 0 && dc.gdaDirectMaxBytes == 0);
  // The device copy (host memory here) equals what the call returned.
  RANK_CHECK(memcmp(reinterpret_cast<const void*>(dc.ptr), &dc, sizeof(dc)) == 0);
  // Every counter and inbox starts at zero.
  const auto* base = reinterpret_cast<const unsigned char*>(dc.lsaFlatBase + rank * dc.lsaStride + dc.resourceOffset);
  for (uint64_t i = dc.lsaBarrierEpochOffset; i < dc.resourceSize; ++i) RANK_CHECK(base[i] == 0);
  RANK_OK(ccoBarrierAll(comm));  // everyone checked before anyone writes
  // Write barrier 2's inbox slot for this rank in every peer's resource window, as
  // the device barrier does, and find every peer's word in our own inboxes.
  for (int p = 0; p < n; ++p) {
    auto* peer =
        reinterpret_cast<uint32_t*>(dc.lsaFlatBase + p * dc.lsaStride + dc.resourceOffset + dc.lsaBarrierInboxOffset);
    peer[2 * n + rank] = 100 + rank;
  }
  RANK_OK(ccoBarrierAll(comm));
  const auto* mine = reinterpret_cast<const uint32_t*>(base + dc.lsaBarrierInboxOffset);
  for (int p = 0; p < n; ++p) RANK_CHECK(mine[2 * n + p] == static_cast<uint32_t>(100 + p));
  // The resources lie in a window (the communicator's resource pool): ccoGetPeerPtr finds
  // its start in the peer's slice, at or before the resources, and users cannot take it away.
  void* viaApi = nullptr;
  const uint64_t right = dc.lsaFlatBase + ((rank + 1) % n) * dc.lsaStride;
  RANK_OK(ccoGetPeerPtr(comm, dc.resourceWindow, (rank + 1) % n, 0, &viaApi));
  RANK_CHECK(reinterpret_cast<uint64_t>(viaApi) >= right &&
             reinterpret_cast<uint64_t>(viaApi) <= right + dc.resourceOffset);
  RANK_CHECK(ccoWindowDeregister(comm, dc.resourceWindow) == ccoInvalidArgument);
  RANK_CHECK(strstr(ccoGetLastError(), "ccoDevCommDestroy"));
  RANK_OK(ccoBarrierAll(comm));
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  RANK_CHECK(dc.magic == 0);
  RANK_CHECK(ccoDevCommDestroy(comm, &dc) == ccoInvalidArgument);  // twice
  RANK_OK(ccoCommDestroy(comm));
  return 0;
}

int BadRequirementsFailEverywhere(int rank, int n, const ccoUniqueId& id) {
  ccoComm* comm = nullptr;
  RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
  ccoDevComm dc;
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  RANK_CHECK(ccoDevCommCreate(comm, nullptr, &dc) == ccoInvalidArgument || n > 1);
  ccoDevCommRequirements zeroed = {};
  ccoResult_t r = ccoDevCommCreate(comm, &zeroed, &dc);
  RANK_CHECK(r == ccoInvalidArgument && strstr(ccoGetLastError(), "INITIALIZER"));
  reqs.lsaBarrierCount = -1;
  RANK_CHECK(ccoDevCommCreate(comm, &reqs, &dc) == ccoInvalidArgument);
  RANK_CHECK(strstr(ccoGetLastError(), "lsaBarrierCount=-1"));
  // Only rank 0 asks for something wrong: the others fail too, naming rank 0.
  reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  if (rank == 0) reqs.gdaSignalCount = -5;
  r = ccoDevCommCreate(comm, &reqs, &dc);
  RANK_CHECK(r != ccoSuccess);
  if (rank != 0) RANK_CHECK(r == ccoRemoteError && strstr(ccoGetLastError(), "rank 0"));
  // GDA between the ranks of this host (the local backend): rings for every peer, and
  // signal words the device can read.
  reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_CHECK(dc.gdaPeerCount == n && dc.gdaRingDepth == CCO_GDA_RING_DEPTH_DEFAULT && dc.gdaRingSlots != 0 &&
             dc.gdaRingHost == dc.gdaRingSlots + 4ull * n * dc.gdaRingDepth * (sizeof(ccoGdaDesc) + sizeof(uint64_t)) &&
             dc.gdaSignals != 0 &&
             dc.gdaCounters == dc.gdaSignals + 8 * (16 + 1) * (n + dc.lsaSize));  // (signals + barrier) x senders
  // Signal and counter words are in the resource window, zeroed. The device copy of
  // ccoDevComm is not, nor anywhere in the flat range: peers write there.
  const uint64_t resources = dc.lsaFlatBase + static_cast<uint64_t>(dc.lsaRank) * dc.lsaStride + dc.resourceOffset;
  RANK_CHECK(dc.gdaSignals >= resources && dc.gdaCounters + 8 * 16 <= resources + dc.resourceSize);
  RANK_CHECK(dc.ptr + sizeof(ccoDevComm) <= dc.lsaFlatBase ||
             dc.ptr >= dc.lsaFlatBase + static_cast<uint64_t>(dc.lsaSize) * dc.lsaStride);
  for (int i = 0; i < 17 * n + 16; ++i) RANK_CHECK(reinterpret_cast<const uint64_t*>(dc.gdaSignals)[i] == 0);
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.sdmaQueueCount = 2;
  RANK_CHECK(ccoDevCommCreate(comm, &reqs, &dc) == ccoInvalidUsage);
  // The communicator is still good after refused requests.
  reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  RANK_OK(ccoCommDestroy(comm));
  return 0;
}

// Device communicators' resources come from the communicator's pool: side by side while
// alive, zeroed when given back (a new one reads zero wherever the old one was written), and a
// window of their own when the pool has no room; every path leaves the ranks in step.
int PoolCarvesZeroedReusedAndOverflow(int rank, int n, const ccoUniqueId& id) {
  ccoComm* comm = nullptr;
  RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
  // The pool lives beside the heap: the whole perRankVmmSize is still the caller's.
  void* heap = nullptr;
  RANK_OK(ccoMemAlloc(comm, 16 << 20, &heap));
  RANK_OK(ccoMemFree(comm, heap));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = 5;
  ccoDevComm a, b;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &a));
  RANK_OK(ccoDevCommCreate(comm, &reqs, &b));
  RANK_CHECK(a.resourceWindow == b.resourceWindow);  // one pool
  RANK_CHECK(a.resourceOffset + a.resourceSize <= b.resourceOffset ||
             b.resourceOffset + b.resourceSize <= a.resourceOffset);
  // Every rank scribbles over every peer's copy of a's words, as kernels would.
  RANK_OK(ccoBarrierAll(comm));
  for (int p = 0; p < n; ++p)
    memset(reinterpret_cast<void*>(a.lsaFlatBase + p * a.lsaStride + a.resourceOffset + a.lsaBarrierEpochOffset), 0xa5,
           a.resourceSize - a.lsaBarrierEpochOffset);
  RANK_OK(ccoBarrierAll(comm));
  const uint64_t aOffset = a.resourceOffset;
  RANK_OK(ccoDevCommDestroy(comm, &a));
  // The next one of the same size takes a's place, and reads zero there.
  ccoDevComm c;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &c));
  RANK_CHECK(c.resourceOffset == aOffset);
  const auto* words = reinterpret_cast<const unsigned char*>(c.lsaFlatBase + rank * c.lsaStride + c.resourceOffset);
  for (uint64_t i = c.lsaBarrierEpochOffset; i < c.resourceSize; ++i) RANK_CHECK(words[i] == 0);
  RANK_CHECK(memcmp(reinterpret_cast<const void*>(c.ptr), &c, sizeof(c)) == 0);
  // Too large for the pool (4 MiB of inboxes): a window of its own, zeroed, that works the same.
  ccoDevCommRequirements big = reqs;
  big.lsaBarrierCount = (4 << 20) / 4 / n;
  ccoDevComm d;
  RANK_OK(ccoDevCommCreate(comm, &big, &d));
  RANK_CHECK(d.resourceWindow != c.resourceWindow && d.lsaBarrierCount == static_cast<uint32_t>(big.lsaBarrierCount));
  void* start = nullptr;
  RANK_OK(ccoGetPeerPtr(comm, d.resourceWindow, rank, 0, &start));
  RANK_CHECK(reinterpret_cast<uint64_t>(start) == d.lsaFlatBase + rank * d.lsaStride + d.resourceOffset);
  const auto* inbox = reinterpret_cast<const uint32_t*>(reinterpret_cast<uint64_t>(start) + d.lsaBarrierInboxOffset);
  for (int i = 0; i < big.lsaBarrierCount * n; i += 4099) RANK_CHECK(inbox[i] == 0);
  RANK_CHECK(ccoWindowDeregister(comm, d.resourceWindow) == ccoInvalidArgument);
  RANK_OK(ccoDevCommDestroy(comm, &d));
  if (n > 1) {
    // Ranks that name different device communicators are refused, all of them, and nothing
    // is destroyed (zeroing one rank's copy while a peer still uses it would go unseen).
    ccoDevComm& mismatched = rank == 0 ? c : b;
    RANK_CHECK(ccoDevCommDestroy(comm, &mismatched) == ccoInvalidUsage);
    RANK_CHECK(strstr(ccoGetLastError(), "different device communicators"));
    RANK_CHECK(mismatched.magic == CCO_DEV_COMM_MAGIC);
  }
  RANK_OK(ccoDevCommDestroy(comm, &c));
  RANK_OK(ccoDevCommDestroy(comm, &b));
  // Everything went back: a device communicator still fits where the first one was.
  ccoDevComm e;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &e));
  RANK_CHECK(e.resourceOffset == aOffset);
  RANK_OK(ccoDevCommDestroy(comm, &e));
  RANK_OK(ccoCommDestroy(comm));
  return 0;
}

// The guide's default: sdmaQueueCount 0 means two SDMA queues per peer where SDMA is on (here
// through the guide's MORI_ENABLE_SDMA), a count asked for is kept (up to 16), and one out of
// range is refused.
int SdmaQueueCountZeroMeansTwo(int rank, int n, const ccoUniqueId& id) {
  setenv("MORI_ENABLE_SDMA", "1", 1);
  ccoComm* comm = nullptr;
  RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  RANK_CHECK(reqs.sdmaQueueCount == 0);
  ccoDevComm dc;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_CHECK(CCO_SDMA_QUEUES_DEFAULT == 2 && dc.sdmaQueueCount == 2);
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  reqs.sdmaQueueCount = 3;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_CHECK(dc.sdmaQueueCount == 3);
  // Two alive at once, with other counts: their queues share the proxy's streams.
  ccoDevComm more;
  reqs.sdmaQueueCount = 16;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &more));
  RANK_CHECK(more.sdmaQueueCount == 16);
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  RANK_OK(ccoDevCommDestroy(comm, &more));
  // A count out of range is refused on every rank, and the communicator stays good.
  for (int count : {-1, 17}) {
    reqs.sdmaQueueCount = count;
    RANK_CHECK(ccoDevCommCreate(comm, &reqs, &dc) == ccoInvalidArgument);
  }
  reqs.sdmaQueueCount = 1;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  RANK_OK(ccoCommDestroy(comm));
  return 0;
}

TEST_P(DevCommTest, FieldsDeviceCopyAndInboxes) { EXPECT_TRUE(RunRanks(GetParam(), FieldsDeviceCopyAndInboxes)); }
TEST_P(DevCommTest, BadRequirementsFailEverywhere) { EXPECT_TRUE(RunRanks(GetParam(), BadRequirementsFailEverywhere)); }
TEST_P(DevCommTest, SdmaQueueCountZeroMeansTwo) { EXPECT_TRUE(RunRanks(GetParam(), SdmaQueueCountZeroMeansTwo)); }
TEST_P(DevCommTest, PoolCarvesZeroedReusedAndOverflow) {
  EXPECT_TRUE(RunRanks(GetParam(), PoolCarvesZeroedReusedAndOverflow));
}

INSTANTIATE_TEST_SUITE_P(Ranks, DevCommTest, ::testing::Values(1, 2, 4), [](const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "ranks";
});

}  // namespace
