// SPDX-License-Identifier: MIT
// A detached thread of ours (the rendezvous root's) that used libcrypto may still be ending
// when the process exits. libcrypto's own cleanup at exit drops its thread keys first, so
// such a thread's state is never freed, and LeakSanitizer reports 904 bytes. This test makes
// that order certain: a thread computes an HMAC, gives its libcrypto state back, and ends
// only after libcrypto's exit cleanup (held by an exit handler registered before libcrypto
// was loaded, so it runs after libcrypto's). It fails under ASan (.ci/run runs it there)
// if ReleaseThreadCryptoState frees nothing.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "auth/crypto.h"

namespace {

std::atomic<bool> g_exiting{false};
std::thread* g_late = nullptr;

void EndLateThread() {
  g_exiting = true;
  if (g_late != nullptr) g_late->join();
}

// Before main, before any libcrypto: exit handlers run in reverse order, so this one runs
// after the one libcrypto registers when it is first used.
const int kRegistered = atexit(EndLateThread);

TEST(CryptoExit, AThreadEndingAfterLibcryptosExitCleanupLeavesNothing) {
  ASSERT_EQ(kRegistered, 0);
  std::atomic<int> macOk{-1};
  std::atomic<bool> released{false};
  g_late = new std::thread([&macOk, &released] {
    cco::Key key;
    cco::Mac mac;
    macOk = cco::Hmac(key, {cco::Bytes("message")}, &mac).ok() ? 1 : 0;
    cco::ReleaseThreadCryptoState();
    released = true;
    while (!g_exiting) usleep(1000);  // ends only inside the exit handler, after libcrypto's cleanup
  });
  // Until the thread has given its state back: a release still running when the process exits
  // races libcrypto's own cleanup (ASan once saw a double free in .ci/run).
  while (!released.load()) usleep(1000);
  EXPECT_EQ(macOk.load(), 1);
  // Hmac still works on a thread after a release.
  cco::ReleaseThreadCryptoState();
  cco::Mac again;
  EXPECT_TRUE(cco::Hmac(cco::Key{}, {cco::Bytes("message")}, &again).ok());
}

}  // namespace
