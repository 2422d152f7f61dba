// SPDX-License-Identifier: MIT
// Failures: of calls that must all be made (those that free resources), the first failure
// and how many failed, so that a teardown reports what the driver refused instead of losing it.
#include <gtest/gtest.h>

#include "common/status.h"

namespace cco {
namespace {

TEST(Failures, NoneIsOk) {
  Failures f;
  f.Note(Status::Ok());
  EXPECT_TRUE(f.Summary("freeing").ok());
}

TEST(Failures, OneIsReportedWithWhatWasDone) {
  Failures f;
  f.Note(Status::Ok());
  f.Note(PlatformError("cuMemUnmap: invalid value"));
  f.Note(Status::Ok());
  const Status s = f.Summary("freeing");
  EXPECT_EQ(s.code(), ccoPlatformError);
  EXPECT_EQ(s.message(), "freeing: cuMemUnmap: invalid value");
}

TEST(Failures, SeveralAreCountedAndTheFirstNamed) {
  Failures f;
  f.Note(PlatformError("cuMemUnmap: invalid value"));
  f.Note(SystemError("munmap: bad address"));
  f.Note(PlatformError("cuMemRelease: invalid handle"));
  const Status s = f.Summary("freeing");
  EXPECT_EQ(s.code(), ccoPlatformError);
  EXPECT_EQ(s.message(), "freeing: 3 calls failed, the first: cuMemUnmap: invalid value");
}

}  // namespace
}  // namespace cco
