// SPDX-License-Identifier: MIT
// CPU affinity at communicator creation: the decision over fake sysfs trees, and the
// environment switches of the call that applies it.
#include "topology/cpu_affinity.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cco {
namespace {

CpuList Range(int first, int last) {
  CpuList cpus;
  for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  return cpus;
}

// A sysfs tree in a fresh temporary directory, removed afterwards.
class FakeSysfs {
 public:
  FakeSysfs() {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/cco_fake_sysfs_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) root_ = pattern;
  }
  ~FakeSysfs() {
    std::error_code ignored;
    if (!root_.empty()) std::filesystem::remove_all(root_, ignored);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }

  void Write(const std::string& relativePath, const std::string& contents) {
    const std::filesystem::path path = std::filesystem::path(root_) / relativePath;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << contents;
  }

  // A GPU's PCI directory; numaNode unset leaves the numa_node file out.
  void AddGpu(const std::string& busId, std::optional<int> numaNode, const std::string& localCpulist) {
    Write("bus/pci/devices/" + busId + "/local_cpulist", localCpulist + "\n");
    if (numaNode) Write("bus/pci/devices/" + busId + "/numa_node", std::to_string(*numaNode) + "\n");
  }

  // `cores` physical cores with two SMT threads each, numbered the way Linux usually does:
  // core i is CPUs first+i and first+cores+i.
  void AddSmtCores(int first, int cores) {
    for (int i = 0; i < cores; ++i) {
      const std::string siblings = std::to_string(first + i) + "," + std::to_string(first + cores + i) + "\n";
      WriteSiblings(first + i, siblings);
      WriteSiblings(first + cores + i, siblings);
    }
  }

  // One CPU per core, no SMT.
  void AddPlainCores(int first, int last) {
    for (int cpu = first; cpu <= last; ++cpu) WriteSiblings(cpu, std::to_string(cpu) + "\n");
  }

  void WriteSiblings(int cpu, const std::string& siblings) {
    Write("devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list", siblings);
  }

 private:
  std::string root_;
};

class CpuAffinityTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(sysfs_.root().empty()) << "mkdtemp failed"; }

  CpuAffinityDecision Decide(const std::string& busId, const std::vector<std::string>& all, const CpuList& current,
                             bool noSplit = false) {
    CpuAffinityQuery query;
    query.sysfsRoot = sysfs_.root();
    query.busId = busId;
    query.allBusIds = all;
    query.current = current;
    query.noSplit = noSplit;
    CpuAffinityDecision decision;
    Status status = DecideCpuAffinity(query, &decision);
    EXPECT_TRUE(status.ok()) << status.message();
    return decision;
  }

  FakeSysfs sysfs_;
};

// ----------------------------------------------------------------------------------------
// The cpulist format.

TEST(CpuListTest, ParsesRangesAndSingles) {
  CpuList cpus;
  ASSERT_TRUE(ParseCpuList("0-3,8,10-11\n", &cpus).ok());
  EXPECT_EQ(cpus, (CpuList{0, 1, 2, 3, 8, 10, 11}));
  ASSERT_TRUE(ParseCpuList("7", &cpus).ok());
  EXPECT_EQ(cpus, (CpuList{7}));
  ASSERT_TRUE(ParseCpuList("5-5", &cpus).ok());
  EXPECT_EQ(cpus, (CpuList{5}));
}

TEST(CpuListTest, ToleratesBlanksAndSortsOverlaps) {
  CpuList cpus;
  ASSERT_TRUE(ParseCpuList("  4 - 6 ,\t0 , 5-7 \n", &cpus).ok());
  EXPECT_EQ(cpus, (CpuList{0, 4, 5, 6, 7}));
}

TEST(CpuListTest, BlankTextIsTheEmptySet) {
  CpuList cpus = {1};
  ASSERT_TRUE(ParseCpuList("", &cpus).ok());
  EXPECT_TRUE(cpus.empty());
  ASSERT_TRUE(ParseCpuList("\n", &cpus).ok());
  EXPECT_TRUE(cpus.empty());
}

TEST(CpuListTest, RejectsGarbage) {
  for (const char* bad :
       {"a", "0-3,x", "1-", "-1", "3-1", "1,,2", "0,", ",0", "1 2", "0-7:2", "1.5", "99999999999", "0-4000000000"}) {
    CpuList cpus;
    Status status = ParseCpuList(bad, &cpus);
    EXPECT_FALSE(status.ok()) << '"' << bad << '"';
    EXPECT_EQ(status.code(), ccoInvalidArgument) << '"' << bad << '"';
  }
}

TEST(CpuListTest, FormatsRuns) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({3}), "3");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  CpuList back;
  ASSERT_TRUE(ParseCpuList(FormatCpuList({0, 2, 4, 5, 6}), &back).ok());
  EXPECT_EQ(back, (CpuList{0, 2, 4, 5, 6}));
}

TEST(PciBusIdTest, Normalizes) {
  std::string id;
  ASSERT_TRUE(NormalizePciBusId("0000:3B:00.0", &id).ok());
  EXPECT_EQ(id, "0000:3b:00.0");
  ASSERT_TRUE(NormalizePciBusId("00000000:18:00.0", &id).ok());  // NVML's 8-digit domain
  EXPECT_EQ(id, "0000:18:00.0");
  ASSERT_TRUE(NormalizePciBusId("18:00.0", &id).ok());
  EXPECT_EQ(id, "0000:18:00.0");
  ASSERT_TRUE(NormalizePciBusId("10000:01:00.0", &id).ok());  // VMD domains have 5 digits
  EXPECT_EQ(id, "10000:01:00.0");
  for (const char* bad :
       {"", "0000:18:00", "../../etc:00.0", "0000:18:00.0/..", "0000:1:00.0", "0000:18:00.0:1", "zzzz:18:00.0"}) {
    EXPECT_EQ(NormalizePciBusId(bad, &id).code(), ccoInvalidArgument) << '"' << bad << '"';
  }
}

// ----------------------------------------------------------------------------------------
// The decision.

TEST_F(CpuAffinityTest, OneGpuOnItsNodeGetsTheWholeNode) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:af:00.0", 1, "8-15");
  sysfs_.AddSmtCores(0, 4);
  sysfs_.AddSmtCores(8, 4);
  CpuAffinityDecision d = Decide("0000:18:00.0", {"0000:18:00.0", "0000:af:00.0"}, Range(0, 15));
  EXPECT_TRUE(d.bind);
  EXPECT_EQ(d.cpus, Range(0, 7));
  EXPECT_NE(d.description.find("only GPU"), std::string::npos) << d.description;
}

TEST_F(CpuAffinityTest, TwoGpusOnANodeSplitByPhysicalCore) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-7");
  sysfs_.AddSmtCores(0, 4);  // cores (0,4) (1,5) (2,6) (3,7)
  // Bus ids in any order and case: the slices follow bus id order.
  const std::vector<std::string> all = {"0000:3B:00.0", "0000:18:00.0"};
  CpuAffinityDecision first = Decide("0000:18:00.0", all, Range(0, 7));
  CpuAffinityDecision second = Decide("0000:3B:00.0", all, Range(0, 7));
  EXPECT_TRUE(first.bind);
  EXPECT_TRUE(second.bind);
  EXPECT_EQ(first.cpus, (CpuList{0, 1, 4, 5}));
  EXPECT_EQ(second.cpus, (CpuList{2, 3, 6, 7}));
  EXPECT_NE(second.description.find("GPU 2 of 2"), std::string::npos) << second.description;
  EXPECT_NE(second.description.find("CPUs 2-3,6-7"), std::string::npos) << second.description;
}

TEST_F(CpuAffinityTest, FourGpusOnANodeGetOneWholeCoreEach) {
  const std::vector<std::string> gpus = {"0000:18:00.0", "0000:2a:00.0", "0000:3b:00.0", "0000:5d:00.0"};
  for (const std::string& gpu : gpus) sysfs_.AddGpu(gpu, 0, "0-7");
  sysfs_.AddSmtCores(0, 4);
  const std::vector<CpuList> expected = {{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  CpuList seen;
  for (size_t i = 0; i < gpus.size(); ++i) {
    CpuAffinityDecision d = Decide(gpus[i], gpus, Range(0, 7));
    EXPECT_TRUE(d.bind);
    EXPECT_EQ(d.cpus, expected[i]) << gpus[i];
    seen.insert(seen.end(), d.cpus.begin(), d.cpus.end());
  }
  // Disjoint and covering: every CPU exactly once.
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, Range(0, 7));
}

TEST_F(CpuAffinityTest, UnevenCoreCountsGiveTheFirstSlicesTheExtraCore) {
  const std::vector<std::string> gpus = {"0000:18:00.0", "0000:2a:00.0", "0000:3b:00.0"};
  for (const std::string& gpu : gpus) sysfs_.AddGpu(gpu, 0, "0-7");
  sysfs_.AddSmtCores(0, 4);  // 4 cores over 3 GPUs: 2, 1, 1
  EXPECT_EQ(Decide(gpus[0], gpus, Range(0, 7)).cpus, (CpuList{0, 1, 4, 5}));
  EXPECT_EQ(Decide(gpus[1], gpus, Range(0, 7)).cpus, (CpuList{2, 6}));
  EXPECT_EQ(Decide(gpus[2], gpus, Range(0, 7)).cpus, (CpuList{3, 7}));
}

TEST_F(CpuAffinityTest, UnevenCoreCountsWithoutSmt) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-4");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-4");
  sysfs_.AddPlainCores(0, 4);  // 5 cores over 2 GPUs: 3, 2
  const std::vector<std::string> all = {"0000:18:00.0", "0000:3b:00.0"};
  EXPECT_EQ(Decide("0000:18:00.0", all, Range(0, 4)).cpus, (CpuList{0, 1, 2}));
  EXPECT_EQ(Decide("0000:3b:00.0", all, Range(0, 4)).cpus, (CpuList{3, 4}));
}

TEST_F(CpuAffinityTest, FewerCoresThanGpusBindsTheWholeNode) {
  const std::vector<std::string> gpus = {"0000:18:00.0", "0000:2a:00.0", "0000:3b:00.0", "0000:5d:00.0"};
  for (const std::string& gpu : gpus) sysfs_.AddGpu(gpu, 0, "0-3");
  sysfs_.AddSmtCores(0, 2);  // 4 CPUs but only 2 physical cores for 4 GPUs
  for (const std::string& gpu : gpus) {
    CpuAffinityDecision d = Decide(gpu, gpus, Range(0, 3));
    EXPECT_TRUE(d.bind);
    EXPECT_EQ(d.cpus, Range(0, 3)) << gpu;
    EXPECT_NE(d.description.find("too few cores"), std::string::npos) << d.description;
  }
}

TEST_F(CpuAffinityTest, RestrictedCpusetIsIntersectedFirst) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-7");
  sysfs_.AddSmtCores(0, 4);
  const std::vector<std::string> all = {"0000:18:00.0", "0000:3b:00.0"};
  // The cgroup allows CPUs 0-2,4-5 and 9 (elsewhere): cores (0,4) (1,5) (2) remain.
  const CpuList cpuset = {0, 1, 2, 4, 5, 9};
  EXPECT_EQ(Decide("0000:18:00.0", all, cpuset).cpus, (CpuList{0, 1, 4, 5}));
  EXPECT_EQ(Decide("0000:3b:00.0", all, cpuset).cpus, (CpuList{2}));
  // Unsorted input is fine too.
  EXPECT_EQ(Decide("0000:3b:00.0", all, {9, 5, 4, 2, 1, 0}).cpus, (CpuList{2}));
}

TEST_F(CpuAffinityTest, NoOverlapWithTheCpusetLeavesAffinityAlone) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddSmtCores(0, 4);
  CpuAffinityDecision d = Decide("0000:18:00.0", {"0000:18:00.0"}, Range(8, 15));
  EXPECT_FALSE(d.bind);
  EXPECT_EQ(d.cpus, Range(8, 15));
  EXPECT_NE(d.description.find("outside the allowed CPUs 8-15"), std::string::npos) << d.description;
}

TEST_F(CpuAffinityTest, NoSplitBindsTheWholeGpuLocalSet) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-7");
  sysfs_.AddSmtCores(0, 4);
  const std::vector<std::string> all = {"0000:18:00.0", "0000:3b:00.0"};
  CpuAffinityDecision d = Decide("0000:3b:00.0", all, Range(0, 15), /*noSplit=*/true);
  EXPECT_TRUE(d.bind);
  EXPECT_EQ(d.cpus, Range(0, 7));
  EXPECT_NE(d.description.find("NO_SPLIT"), std::string::npos) << d.description;
}

TEST_F(CpuAffinityTest, EachGpuSharesOnlyWithItsOwnNode) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:86:00.0", 1, "8-15");
  sysfs_.AddGpu("0000:af:00.0", 1, "8-15");
  sysfs_.AddSmtCores(0, 4);
  sysfs_.AddSmtCores(8, 4);  // cores (8,12) (9,13) (10,14) (11,15)
  const std::vector<std::string> all = {"0000:af:00.0", "0000:86:00.0", "0000:3b:00.0", "0000:18:00.0"};
  EXPECT_EQ(Decide("0000:18:00.0", all, Range(0, 15)).cpus, (CpuList{0, 1, 4, 5}));
  EXPECT_EQ(Decide("0000:3b:00.0", all, Range(0, 15)).cpus, (CpuList{2, 3, 6, 7}));
  EXPECT_EQ(Decide("0000:86:00.0", all, Range(0, 15)).cpus, (CpuList{8, 9, 12, 13}));
  CpuAffinityDecision last = Decide("0000:af:00.0", all, Range(0, 15));
  EXPECT_EQ(last.cpus, (CpuList{10, 11, 14, 15}));
  EXPECT_NE(last.description.find("NUMA node 1, GPU 2 of 2"), std::string::npos) << last.description;
}

TEST_F(CpuAffinityTest, WithoutNumaNodesIdenticalLocalCpusFormANode) {
  sysfs_.AddGpu("0000:18:00.0", -1, "0-7");
  sysfs_.AddGpu("0000:3b:00.0", std::nullopt, "0-7");  // numa_node file missing
  sysfs_.AddGpu("0000:86:00.0", -1, "8-15");
  sysfs_.AddSmtCores(0, 4);
  sysfs_.AddSmtCores(8, 4);
  const std::vector<std::string> all = {"0000:18:00.0", "0000:3b:00.0", "0000:86:00.0"};
  EXPECT_EQ(Decide("0000:18:00.0", all, Range(0, 15)).cpus, (CpuList{0, 1, 4, 5}));
  EXPECT_EQ(Decide("0000:3b:00.0", all, Range(0, 15)).cpus, (CpuList{2, 3, 6, 7}));
  EXPECT_EQ(Decide("0000:86:00.0", all, Range(0, 15)).cpus, Range(8, 15));
}

TEST_F(CpuAffinityTest, MissingGpuDirectoryLeavesAffinityAlone) {
  CpuAffinityDecision d = Decide("0000:18:00.0", {"0000:18:00.0"}, {3, 1, 2});
  EXPECT_FALSE(d.bind);
  EXPECT_EQ(d.cpus, (CpuList{1, 2, 3}));
  EXPECT_NE(d.description.find("local_cpulist"), std::string::npos) << d.description;
}

TEST_F(CpuAffinityTest, MissingPeerDirectoryDoesNotShareTheNode) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddSmtCores(0, 4);
  CpuAffinityDecision d = Decide("0000:18:00.0", {"0000:18:00.0", "0000:3b:00.0"}, Range(0, 7));
  EXPECT_TRUE(d.bind);
  EXPECT_EQ(d.cpus, Range(0, 7));
}

TEST_F(CpuAffinityTest, MissingSiblingListsMakeEachCpuACore) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-3");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-3");
  const std::vector<std::string> all = {"0000:18:00.0", "0000:3b:00.0"};
  EXPECT_EQ(Decide("0000:18:00.0", all, Range(0, 3)).cpus, (CpuList{0, 1}));
  EXPECT_EQ(Decide("0000:3b:00.0", all, Range(0, 3)).cpus, (CpuList{2, 3}));
}

TEST_F(CpuAffinityTest, ThisGpuMayBeLeftOutOfTheList) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7");
  sysfs_.AddGpu("0000:3b:00.0", 0, "0-7");
  sysfs_.AddSmtCores(0, 4);
  EXPECT_EQ(Decide("0000:3b:00.0", {"0000:18:00.0"}, Range(0, 7)).cpus, (CpuList{2, 3, 6, 7}));
}

TEST_F(CpuAffinityTest, MalformedSysfsIsAnError) {
  sysfs_.AddGpu("0000:18:00.0", 0, "0-7,garbage");
  CpuAffinityQuery query;
  query.sysfsRoot = sysfs_.root();
  query.busId = "0000:18:00.0";
  query.current = Range(0, 7);
  CpuAffinityDecision d;
  Status status = DecideCpuAffinity(query, &d);
  EXPECT_EQ(status.code(), ccoSystemError);
  EXPECT_NE(status.message().find("local_cpulist"), std::string::npos) << status.message();
  EXPECT_FALSE(d.bind);
}

TEST_F(CpuAffinityTest, MalformedBusIdIsAnInvalidArgument) {
  CpuAffinityQuery query;
  query.sysfsRoot = sysfs_.root();
  query.busId = "../../etc";
  query.current = Range(0, 7);
  CpuAffinityDecision d;
  EXPECT_EQ(DecideCpuAffinity(query, &d).code(), ccoInvalidArgument);
}

// ----------------------------------------------------------------------------------------
// Applying it to the calling thread.

CpuList ThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  CpuList cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

// Sets (or, with nullptr, unsets) a variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old != nullptr) old_ = old;
    if (value != nullptr) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class ApplyCpuAffinityTest : public CpuAffinityTest {
 protected:
  // A GPU whose only local CPU is the first one this thread may use, so binding is visible
  // as a change (unless the thread may only use one CPU anyway).
  void SetUp() override {
    CpuAffinityTest::SetUp();
    before_ = ThreadCpus();
    ASSERT_FALSE(before_.empty());
    sysfs_.AddGpu("0000:18:00.0", 0, std::to_string(before_.front()));
  }

  CpuList before_;
  ScopedEnv noIgnore_{"CCO_IGNORE_CPU_AFFINITY", nullptr};
  ScopedEnv noIgnoreAlias_{"MORI_IGNORE_CPU_AFFINITY", nullptr};
  ScopedEnv noNoSplit_{"CCO_CPU_AFFINITY_NO_SPLIT", nullptr};
  ScopedEnv noNoSplitAlias_{"MORI_CPU_AFFINITY_NO_SPLIT", nullptr};
};

TEST_F(ApplyCpuAffinityTest, IgnoreFlagLeavesTheThreadAlone) {
  ScopedEnv ignore("CCO_IGNORE_CPU_AFFINITY", "1");
  // In a thread of its own, so a wrong binding could not leak into later tests.
  std::thread([&] {
    std::string description;
    Status status = ApplyCpuAffinityFromSysfs(sysfs_.root(), "0000:18:00.0", {}, &description);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_NE(description.find("CCO_IGNORE_CPU_AFFINITY"), std::string::npos) << description;
    EXPECT_EQ(ThreadCpus(), before_);

    status = ApplyCpuAffinity("0000:18:00.0", {"0000:18:00.0"}, &description);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(ThreadCpus(), before_);
  }).join();
}

TEST_F(ApplyCpuAffinityTest, IgnoreFlagAliasWorksToo) {
  ScopedEnv ignore("MORI_IGNORE_CPU_AFFINITY", "1");
  std::thread([&] {
    EXPECT_TRUE(ApplyCpuAffinityFromSysfs(sysfs_.root(), "0000:18:00.0", {}, nullptr).ok());
    EXPECT_EQ(ThreadCpus(), before_);
  }).join();
}

// CCO_CPU_AFFINITY_NO_SPLIT, and the guide's MORI_CPU_AFFINITY_NO_SPLIT, as the call that
// applies the decision reads them: two GPUs on one node share its two cores without it, and
// each gets both with it.
TEST_F(ApplyCpuAffinityTest, NoSplitFlagAndItsAliasBindTheWholeLocalSet) {
  if (before_.size() < 2) GTEST_SKIP() << "this thread may use one CPU only: nothing to split";
  const CpuList pair = {before_[0], before_[1]};
  for (const auto& gpu : {"0000:3b:00.0", "0000:5e:00.0"})
    sysfs_.AddGpu(gpu, 1, std::to_string(pair[0]) + "," + std::to_string(pair[1]));
  for (int cpu : pair) sysfs_.WriteSiblings(cpu, std::to_string(cpu) + "\n");
  const std::vector<std::string> node = {"0000:3b:00.0", "0000:5e:00.0"};
  auto boundTo = [&] {
    CpuList cpus;
    std::thread([&] {
      std::string description;
      Status status = ApplyCpuAffinityFromSysfs(sysfs_.root(), "0000:5e:00.0", node, &description);
      EXPECT_TRUE(status.ok()) << status.message();
      cpus = ThreadCpus();
    }).join();
    return cpus;
  };
  EXPECT_EQ(boundTo(), (CpuList{pair[1]}));  // the second GPU's half
  for (const char* name : {"CCO_CPU_AFFINITY_NO_SPLIT", "MORI_CPU_AFFINITY_NO_SPLIT"}) {
    ScopedEnv noSplit(name, "1");
    EXPECT_EQ(boundTo(), pair) << name;
  }
}

TEST_F(ApplyCpuAffinityTest, BindsOnlyTheCallingThread) {
  std::thread([&] {
    std::string description;
    Status status = ApplyCpuAffinityFromSysfs(sysfs_.root(), "0000:18:00.0", {}, &description);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(ThreadCpus(), (CpuList{before_.front()})) << description;
    // A thread started afterwards inherits the binding.
    std::thread([&] { EXPECT_EQ(ThreadCpus(), (CpuList{before_.front()})); }).join();
  }).join();
  EXPECT_EQ(ThreadCpus(), before_);
}

TEST_F(ApplyCpuAffinityTest, MissingSysfsLeavesTheThreadAlone) {
  std::thread([&] {
    std::string description;
    Status status = ApplyCpuAffinityFromSysfs(sysfs_.root(), "0000:99:00.0", {}, &description);
    EXPECT_TRUE(status.ok()) << status.message();
    EXPECT_NE(description.find("left as it is"), std::string::npos) << description;
    EXPECT_EQ(ThreadCpus(), before_);
  }).join();
}

}  // namespace
}  // namespace cco
