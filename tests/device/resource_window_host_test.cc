// SPDX-License-Identifier: MIT
// The communicator's resources are no data window (ranks as threads on the cpu platform): the
// resource pool (and a device communicator's own resource window) holds signal words, counters,
// barrier inboxes and epochs, which only the proxies and the device API write, at addresses
// they compute. No device call, no descriptor in a ring, no SDMA pointer and no peer's request
// over the network may name it, and nothing a peer writes there becomes a pointer a kernel
// follows (the device copy of ccoDevComm lies apart). Each test failed before the fix: the
// window was an ordinary one, and the device copy of ccoDevComm sat at its start.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "api/comm_registry.h"
#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "device/ring.hpp"
#include "device/sdma.hpp"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;

constexpr uint64_t kWaitNs = 5'000'000'000ull;

// The resource window's id, as descriptors name windows (the communicator's own table).
uint32_t ResourceWindowId(const Rank& k) {
  const std::shared_ptr<ccoComm> comm = cco::LookupComm(k.comm);
  const cco::WindowRecord* w = comm ? comm->windows.Find(k.dc.resourceWindow) : nullptr;
  return w != nullptr ? w->id : 0;
}

// This rank's copy of the resources and the peer's, as the host maps them.
const uint64_t* Resources(const Rank& k, int lsaPeer) {
  void* p = nullptr;
  if (ccoGetPeerPtr(k.comm, k.dc.resourceWindow, lsaPeer, 0, &p) != ccoSuccess) return nullptr;
  return static_cast<const uint64_t*>(p);
}

// A descriptor posted straight into ring `peer` of context 0, as a kernel that skipped the
// device API's checks would; then a flush of that ring.
int32_t PostRaw(const Rank& k, int peer, const ccoGdaDesc& d) {
  const cco::ring::View r = cco::ring::At(k.dc.gdaRingSlots, k.dc.gdaRingHost, k.dc.gdaRingDevice, k.dc.gdaRingDepth,
                                          cco_gda_ring_index(0, peer, k.dc.gdaPeerCount));
  const cco::WaitLimits limits = cco::wait_limits(k.dc, kWaitNs);
  uint64_t ticket = 0;
  const int32_t posted = cco::ring::Post<ccoGdaImmediate>(r, d, limits, &ticket);
  return posted != CCO_DEVICE_STATUS_OK ? posted : cco::ring::Flush<ccoGdaImmediate>(r, limits);
}

bool AsyncErrorSays(const Rank& k, const char* what) {
  ccoResult_t async = ccoSuccess;
  return ccoCommGetAsyncError(k.comm, &async) == ccoSuccess && async != ccoSuccess &&
         strstr(ccoGetLastError(), what) != nullptr;
}

TEST(ResourceWindow, NoDeviceCallTakesItAsAWindow) {
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_FULL,
                [](Rank& k) {
                  const int peer = 1 - k.rank;
                  const ccoWindow_t resources = k.dc.resourceWindow;
                  ccoGda<> gda(k.dc, 0, kWaitNs);
                  CHECK_OR_FAIL(gda.put(peer, resources, 0, k.win, 0, 64) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  CHECK_OR_FAIL(gda.put(peer, k.win, 0, resources, 0, 64) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  CHECK_OR_FAIL(gda.get(peer, resources, 0, k.win, 0, 64) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  CHECK_OR_FAIL(gda.get(peer, k.win, 0, resources, 0, 64) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  CHECK_OR_FAIL(gda.put_value(peer, resources, 0, 7) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  CHECK_OR_FAIL(ccoGetLsaPeerPtr(resources, peer, 0) == nullptr);
                  ccoSdma sdma(k.dc, kWaitNs);
                  CHECK_OR_FAIL(sdma.put(peer, resources, 0, k.win, 0, 64, 0) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  CHECK_OR_FAIL(sdma.get(peer, k.win, 0, resources, 0, 64, 0) == CCO_DEVICE_STATUS_INVALID_ARGUMENT);
                  // The device copy of ccoDevComm is not among the resources peers write, nor
                  // anywhere in the flat range their slices are in.
                  const uint64_t flatEnd = k.dc.lsaFlatBase + static_cast<uint64_t>(k.dc.lsaSize) * k.dc.lsaStride;
                  CHECK_OR_FAIL(k.dc.ptr + sizeof(ccoDevComm) <= k.dc.lsaFlatBase || k.dc.ptr >= flatEnd);
                  // The device API still works through the resources: a put with a signal.
                  Fill(k.mem, k.rank, 64);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  CHECK_OR_FAIL(gda.put(peer, k.win, 4096, k.win, 0, 256, CCO_SIGNAL_INC, 0) == CCO_DEVICE_STATUS_OK);
                  CHECK_OR_FAIL(gda.wait_signal(0, 1) == CCO_DEVICE_STATUS_OK);
                  CHECK_OR_FAIL(Holds(k.mem + 4096, peer, 64));
                  CHECK_OR_FAIL(gda.flush() == CCO_DEVICE_STATUS_OK);
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                1, /*sdmaQueues=*/1),
            0);
}

// A descriptor naming the resources (a put_value into the peer's, a get out of them) is
// refused by the proxy: the ring fails, nothing is written, and the error says why.
TEST(ResourceWindow, TheProxyRefusesADescriptorThatNamesIt) {
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          const int peer = 1 - k.rank;
                          const uint32_t id = ResourceWindowId(k);
                          CHECK_OR_FAIL(id != 0);
                          const uint64_t* theirs = Resources(k, peer);
                          CHECK_OR_FAIL(theirs != nullptr);
                          const uint64_t before = theirs[1];
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          ccoGdaDesc d = {};
                          d.op = k.rank == 0 ? CCO_GDA_OP_PUT_VALUE : CCO_GDA_OP_GET;
                          d.dstWindow = k.rank == 0 ? id : cco::LookupComm(k.comm)->windows.Find(k.win)->id;
                          d.srcWindow = k.rank == 0 ? 0 : id;
                          d.dstOffset = k.rank == 0 ? 8 : 0;
                          d.srcOffset = k.rank == 0 ? 0xdeadbeefull : 0;
                          d.bytes = 8;
                          CHECK_OR_FAIL(PostRaw(k, peer, d) == CCO_DEVICE_STATUS_ABORTED);
                          CHECK_OR_FAIL(AsyncErrorSays(k, "holds device communicators' resources"));
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          CHECK_OR_FAIL(Resources(k, peer)[1] == before);
                          return true;
                        }),
            0);
}

// The same over the network (every rank a node of its own, CCO_NET=tcp): the sender's proxy
// refuses it before a byte leaves (the target's refuses it too: the window table's Resolve,
// window_table_test).
TEST(ResourceWindow, OverTcpADescriptorThatNamesItIsRefused) {
  setenv("CCO_NET", "tcp", 1);
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_FULL,
                [](Rank& k) {
                  const int peer = 1 - k.rank;
                  const uint32_t id = ResourceWindowId(k);
                  CHECK_OR_FAIL(id != 0);
                  CHECK_OR_FAIL(strcmp(cco::LookupComm(k.comm)->proxy->NetName(), "tcp") == 0);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  ccoGdaDesc d = {};  // read the peer's resources into this rank's window
                  d.op = CCO_GDA_OP_GET;
                  d.dstWindow = cco::LookupComm(k.comm)->windows.Find(k.win)->id;
                  d.srcWindow = id;
                  d.bytes = 256;
                  memset(k.mem, 0x5a, 256);
                  CHECK_OR_FAIL(PostRaw(k, peer, d) == CCO_DEVICE_STATUS_ABORTED);
                  CHECK_OR_FAIL(AsyncErrorSays(k, "holds device communicators' resources"));
                  for (int i = 0; i < 256; ++i) CHECK_OR_FAIL(k.mem[i] == 0x5a);
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                /*nodesPerHost=*/2),
            0);
  unsetenv("CCO_NET");
}

// An SDMA put on resolved pointers whose destination lies in the peer's resources: the device
// sees a pointer in the peer's slice, the proxy finds it in no data window and fails the queue.
TEST(ResourceWindow, SdmaPointersIntoItAreRefused) {
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_NONE,
                [](Rank& k) {
                  const int peer = 1 - k.rank;
                  const uint64_t* theirs = Resources(k, peer);
                  CHECK_OR_FAIL(theirs != nullptr);
                  const uint64_t before = theirs[2];
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  ccoSdma sdma(k.dc, kWaitNs);
                  Fill(k.mem, k.rank, 8);
                  void* dst = const_cast<uint64_t*>(theirs + 2);
                  CHECK_OR_FAIL((sdma.put<ccoCoopThread, false>(peer, dst, k.mem, 8, 0)) == CCO_DEVICE_STATUS_OK);
                  CHECK_OR_FAIL(sdma.quiet(peer) == CCO_DEVICE_STATUS_ABORTED);
                  CHECK_OR_FAIL(AsyncErrorSays(k, "not inside one live window"));
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  CHECK_OR_FAIL(Resources(k, peer)[2] == before);
                  return true;
                },
                1, /*sdmaQueues=*/1),
            0);
}

}  // namespace
