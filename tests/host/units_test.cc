// Unit tests of the host SDK's pure parts: slot allocator, topology and teams, interface
// choice, unique-id encoding, resource layout.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/interface.h"
#include "bootstrap/unique_id.h"
#include "comm/devcomm_layout.h"
#include "common/fd_table.h"
#include "memory/slot_allocator.h"
#include "topology/topology.h"

namespace cco {
namespace {

// The descriptor table's capacity, from /proc/self/status.
long FdTableSize() {
  FILE* f = fopen("/proc/self/status", "re");
  char line[256];
  long size = -1;
  while (f != nullptr && fgets(line, sizeof(line), f) != nullptr)
    if (strncmp(line, "FDSize:", 7) == 0) size = strtol(line + 7, nullptr, 10);
  if (f != nullptr) fclose(f);
  return size;
}

// With the table nearly full, ReserveFdHeadroom grows it, so that the descriptors a
// collective call then opens land without growing it (common/fd_table.h); with room to
// spare it leaves the table alone.
TEST(FdTable, HeadroomGrowsTheTableOnlyWhenNeeded) {
  const long before = FdTableSize();
  ASSERT_GT(before, 0);
  rlimit limit = {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < static_cast<rlim_t>(before + 128))
    GTEST_SKIP() << "the descriptor limit (" << limit.rlim_cur << ") leaves no room to grow the table";
  // A second thread, as in every process with a GPU context.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread other([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  });
  // Fill the table to 4 descriptors short of its end.
  std::vector<int> held;
  for (int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); fd >= 0; fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) {
    held.push_back(fd);
    if (fd >= before - 5) break;
  }
  EXPECT_TRUE(ReserveFdHeadroom(2, "a test").ok());  // fits: unchanged
  EXPECT_EQ(FdTableSize(), before);
  EXPECT_TRUE(ReserveFdHeadroom(64, "a test").ok());  // does not fit: grown to hold the highest descriptor + 64
  const long grown = FdTableSize();
  EXPECT_GE(grown, before - 5 + 64);
  for (int fd : held) close(fd);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  other.join();
}

TEST(SlotAllocator, FirstFitRoundsAndMerges) {
  SlotAllocator a(1 << 20, 4096);
  size_t o1, s1, o2, s2, o3, s3;
  ASSERT_TRUE(a.Allocate(1, &o1, &s1).ok());
  EXPECT_EQ(o1, 0u);
  EXPECT_EQ(s1, 4096u);
  ASSERT_TRUE(a.Allocate(5000, &o2, &s2).ok());
  EXPECT_EQ(o2, 4096u);
  EXPECT_EQ(s2, 8192u);
  ASSERT_TRUE(a.Allocate(4096, &o3, &s3).ok());
  EXPECT_EQ(o3, 12288u);
  size_t start, size;
  EXPECT_TRUE(a.Find(4096 + 100, &start, &size));
  EXPECT_EQ(start, 4096u);
  EXPECT_FALSE(a.Find(1 << 19, &start, &size));
  EXPECT_TRUE(a.Free(o2).ok());
  EXPECT_EQ(a.Free(o2).code(), ccoInvalidArgument);
  EXPECT_EQ(a.Free(o1 + 1).code(), ccoInvalidArgument);
  EXPECT_TRUE(a.Free(o1).ok());
  // 0..12288 merged: a 12288-byte request fits at 0.
  size_t o4, s4;
  ASSERT_TRUE(a.Allocate(12288, &o4, &s4).ok());
  EXPECT_EQ(o4, 0u);
  EXPECT_EQ(a.used(), 12288u + 4096u);
  EXPECT_EQ(a.Allocate(0, &o4, &s4).code(), ccoInvalidArgument);
  EXPECT_EQ(a.Allocate(2 << 20, &o4, &s4).code(), ccoOutOfMemory);
}

TEST(SlotAllocator, FillsExactlyThenRefuses) {
  SlotAllocator a(16 * 4096, 4096);
  size_t o, s;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(a.Allocate(4096, &o, &s).ok());
  EXPECT_EQ(a.Allocate(1, &o, &s).code(), ccoOutOfMemory);
  for (int i = 15; i >= 0; --i) ASSERT_TRUE(a.Free(i * 4096).ok());
  ASSERT_TRUE(a.Allocate(16 * 4096, &o, &s).ok());  // fully merged again
}

std::vector<RankInfo> Hosts(const std::vector<int>& hostOfRank) {
  std::vector<RankInfo> infos(hostOfRank.size());
  for (size_t r = 0; r < infos.size(); ++r) {
    memset(&infos[r], 0, sizeof(RankInfo));
    infos[r].hostHash = 1000 + hostOfRank[r];
  }
  return infos;
}

TEST(Topology, OneHostIsOneLsaTeam) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 0}), 2, 1, &t).ok());
  EXPECT_EQ(t.nNodes, 1);
  EXPECT_EQ(t.lsaSize, 4);
  EXPECT_EQ(t.lsaRank, 2);
  EXPECT_EQ(t.rail.nRanks, 1);
  EXPECT_EQ(t.world.nRanks, 4);
}

TEST(Topology, TwoHostsGiveRailTeams) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 1, 1, 1}), 4, 1, &t).ok());
  EXPECT_EQ(t.nNodes, 2);
  EXPECT_EQ(t.node, 1);
  EXPECT_EQ(t.lsaRank, 1);
  EXPECT_EQ(t.lsaWorldBase, 3);
  EXPECT_EQ(t.lsa.worldBase, 3);
  EXPECT_EQ(t.rail.nRanks, 2);
  EXPECT_EQ(t.rail.rank, 1);
  EXPECT_EQ(t.rail.stride, 3);
  EXPECT_EQ(t.rail.worldBase, 1);  // member i of the rail is world rank 1 + 3i
}

TEST(Topology, VirtualNodesSplitAHost) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 0, 0, 0, 0, 0}), 5, 4, &t).ok());
  EXPECT_EQ(t.nNodes, 4);
  EXPECT_EQ(t.node, 2);
  EXPECT_EQ(t.lsaSize, 2);
  EXPECT_EQ(t.lsaRank, 1);
  EXPECT_EQ(t.nodeOfRank, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(ComputeTopology(Hosts({0, 0}), 0, 3, &t).code(), ccoInvalidArgument);
}

TEST(Topology, NonContiguousNodesAreRefused) {
  Topology t;
  Status s = ComputeTopology(Hosts({0, 1, 0, 1}), 0, 1, &t);
  EXPECT_EQ(s.code(), ccoInvalidUsage);
  EXPECT_NE(s.message().find("contiguous"), std::string::npos) << s.message();
}

TEST(Topology, UnevenNodesHaveNoRail) {
  Topology t;
  ASSERT_TRUE(ComputeTopology(Hosts({0, 0, 0, 1}), 3, 1, &t).ok());
  EXPECT_EQ(t.lsaSize, 1);
  EXPECT_EQ(t.rail.nRanks, 1);
  EXPECT_EQ(t.rail.worldBase, 3);
}

TEST(Topology, MixedPlatformsAreRefused) {
  auto infos = Hosts({0, 0});
  infos[1].platform = 1;
  Topology t;
  EXPECT_EQ(ComputeTopology(infos, 0, 1, &t).code(), ccoInvalidUsage);
}

InterfaceAddress V4(const char* name, uint32_t addr, bool loopback) {
  InterfaceAddress a;
  a.name = name;
  a.loopback = loopback;
  memset(&a.address, 0, sizeof(a.address));
  auto* in = reinterpret_cast<sockaddr_in*>(&a.address.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(addr);
  a.address.length = sizeof(sockaddr_in);
  return a;
}

TEST(Interface, SpecMatching) {
  EXPECT_TRUE(InterfaceMatches("", "eth0"));
  EXPECT_TRUE(InterfaceMatches("eth", "eth0"));
  EXPECT_FALSE(InterfaceMatches("eth", "ib0"));
  EXPECT_TRUE(InterfaceMatches("eth,ib", "ib0"));
  EXPECT_TRUE(InterfaceMatches("^lo", "eth0"));
  EXPECT_FALSE(InterfaceMatches("^lo", "lo"));
  EXPECT_TRUE(InterfaceMatches("=eth0", "eth0"));
  EXPECT_FALSE(InterfaceMatches("=eth", "eth0"));
}

TEST(Interface, ChoosesNonLoopbackUnlessAsked) {
  std::vector<InterfaceAddress> c = {V4("lo", 0x7f000001, true), V4("eth0", 0x0a000001, false)};
  InterfaceAddress chosen;
  ASSERT_TRUE(ChooseInterface(c, "", &chosen).ok());
  EXPECT_EQ(chosen.name, "eth0");
  ASSERT_TRUE(ChooseInterface(c, "lo", &chosen).ok());
  EXPECT_EQ(chosen.name, "lo");
  Status s = ChooseInterface(c, "ib", &chosen);
  EXPECT_EQ(s.code(), ccoInvalidArgument);
  EXPECT_NE(s.message().find("have: lo, eth0"), std::string::npos) << s.message();
  ASSERT_TRUE(ChooseInterface({c[0]}, "", &chosen).ok());  // loopback as the last resort
  EXPECT_EQ(chosen.name, "lo");
}

TEST(UniqueId, RoundTripAndCorruption) {
  UniqueIdContents in;
  ASSERT_TRUE(NewSecret(&in.secret).ok());
  in.root = V4("x", 0x0a010203, false).address;
  reinterpret_cast<sockaddr_in*>(&in.root.storage)->sin_port = htons(4242);
  ccoUniqueId id;
  EncodeUniqueId(in, &id);
  UniqueIdContents out;
  ASSERT_TRUE(DecodeUniqueId(id, &out).ok());
  EXPECT_EQ(out.secret.bytes, in.secret.bytes);
  EXPECT_EQ(out.root.ToString(), "10.1.2.3:4242");
  for (size_t byte : {0u, 9u, 30u, 100u, 127u}) {
    ccoUniqueId bad = id;
    bad.internal[byte] ^= 1;
    EXPECT_EQ(DecodeUniqueId(bad, &out).code(), ccoInvalidArgument) << "byte " << byte;
  }
  UniqueIdContents other;
  ASSERT_TRUE(NewSecret(&other.secret).ok());
  EXPECT_NE(other.secret.bytes, in.secret.bytes);
  // The public tag is stable for one secret, differs between secrets, and is not the secret.
  std::string tag1, tag2, tag3;
  ASSERT_TRUE(IdTag(in.secret, &tag1).ok());
  ASSERT_TRUE(IdTag(in.secret, &tag2).ok());
  ASSERT_TRUE(IdTag(other.secret, &tag3).ok());
  EXPECT_EQ(tag1, tag2);
  EXPECT_NE(tag1, tag3);
  EXPECT_EQ(tag1.size(), 16u);
}

TEST(ResourceLayout, RegionsAreDisjointAndAligned) {
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = 5;
  reqs.gdaBarrierCount = 3;
  ResourceLayout l = LayoutResources(reqs, 12, 8, 6);
  // The device copy of ccoDevComm is not among them (peers write here): the epochs come first.
  EXPECT_EQ(l.barrierEpochs, 0u);
  EXPECT_GE(l.barrierInboxes, l.barrierEpochs + 5 * 8);  // {epoch, verdict} per barrier
  EXPECT_GE(l.shadows, l.barrierInboxes + 5 * 8 * 4);
  EXPECT_GE(l.flushTargets, l.shadows + (16 + 16) * 8);  // signal and counter shadows
  EXPECT_EQ(l.gdaEpochs, l.flushTargets + 4 * 6 * 8);     // contexts x peers
  EXPECT_GE(l.gdaSignals, l.gdaEpochs + 3 * 8);
  EXPECT_EQ(l.gdaCounters, l.gdaSignals + (16 + 3) * (12 + 8) * 8);  // (signals + barriers) x (proxy + direct words)
  EXPECT_GE(l.bytes, l.gdaCounters + 16 * 8);
  for (size_t off : {l.barrierEpochs, l.barrierInboxes, l.shadows, l.flushTargets, l.gdaSignals}) EXPECT_EQ(off % 256, 0u);
  // Without GDA connections there are no signal or counter words.
  ResourceLayout none = LayoutResources(reqs, 12, 8, 0);
  EXPECT_EQ(none.gdaCounters, none.gdaSignals);
  EXPECT_EQ(none.bytes, none.gdaSignals);
  ccoDevCommRequirements read;
  EXPECT_TRUE(ReadRequirements(&reqs, &read).ok());
  EXPECT_EQ(memcmp(&read, &reqs, sizeof(reqs)), 0);
  reqs.version = 99;
  EXPECT_EQ(ReadRequirements(&reqs, &read).code(), ccoInvalidArgument);
}

// A caller built against an older cco.h (no gdaDirectGroupMaxBytes: 48 bytes) is served, its
// missing field at the initializer's -1, and nothing is read past its size (a heap buffer of
// exactly that size: the sanitizer builds would see an overread). Shorter is refused.
TEST(ResourceLayout, RequirementsOfAnOlderHeaderAreCompleted) {
  ASSERT_EQ(kRequirementsMinSize, 48u);
  ccoDevCommRequirements current = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  current.gdaDirectMaxBytes = 512;
  std::vector<unsigned char> older(kRequirementsMinSize);
  memcpy(older.data(), &current, older.size());
  auto* user = reinterpret_cast<ccoDevCommRequirements*>(older.data());
  user->size = older.size();
  ccoDevCommRequirements read;
  memset(&read, 0x5a, sizeof(read));
  ASSERT_TRUE(ReadRequirements(user, &read).ok());
  EXPECT_EQ(read.size, sizeof(ccoDevCommRequirements));
  EXPECT_EQ(read.gdaDirectMaxBytes, 512);
  EXPECT_EQ(read.gdaDirectGroupMaxBytes, -1);
  EXPECT_EQ(read.gdaContextCount, current.gdaContextCount);
  user->size = older.size() - 1;
  const Status shorter = ReadRequirements(user, &read);
  EXPECT_EQ(shorter.code(), ccoInvalidArgument);
  EXPECT_NE(shorter.message().find("reqs->size=47"), std::string::npos) << shorter.message();
}

}  // namespace
}  // namespace cco
