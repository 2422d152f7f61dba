// SPDX-License-Identifier: MIT
// The device communicator's resource window layout and requirements (comm/devcomm_layout.h):
// regions disjoint and aligned, and requirements of an older header completed.
#include <gtest/gtest.h>
#include <string.h>

#include <vector>

#include "comm/devcomm_layout.h"

namespace cco {
namespace {

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
  EXPECT_EQ(l.gdaEpochs, l.flushTargets + 4 * 6 * 8);    // contexts x peers
  EXPECT_GE(l.gdaSignals, l.gdaEpochs + 3 * 8);
  EXPECT_EQ(l.gdaCounters, l.gdaSignals + (16 + 3) * (12 + 8) * 8);  // (signals + barriers) x (proxy + direct words)
  EXPECT_GE(l.bytes, l.gdaCounters + 16 * 8);
  for (size_t off : {l.barrierEpochs, l.barrierInboxes, l.shadows, l.flushTargets, l.gdaSignals})
    EXPECT_EQ(off % 256, 0u);
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
