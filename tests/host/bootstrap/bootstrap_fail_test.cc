// SPDX-License-Identifier: MIT
// Bootstrap failures that must be said at once rather than at CCO_TIMEOUT_MS (internal API,
// one process): a rank whose rank 0 is gone after the rendezvous (its hub refuses the
// connection) learns it at once, with a message that says so. And what unused unique ids
// cost: their listeners until their bound, one thread for all of them, nothing after.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/channel.h"
#include "bootstrap/messages.h"
#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "cco/cco.h"

namespace cco {
namespace {

using Clock = std::chrono::steady_clock;

// A loopback address nobody listens on (bound, then closed: connecting is refused).
SockAddr ClosedPort() {
  SockAddr a{};
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  socklen_t length = sizeof(in);
  EXPECT_EQ(bind(fd.get(), reinterpret_cast<sockaddr*>(&in), sizeof(in)), 0);
  EXPECT_EQ(getsockname(fd.get(), reinterpret_cast<sockaddr*>(&in), &length), 0);
  memcpy(&a.storage, &in, sizeof(in));
  a.length = sizeof(in);
  return a;  // fd closes here
}

// Rank 0 greets the root with its hub's address and is gone before anyone connects there
// (its process exited after a failure of its own): rank 1's ccoCommCreate fails at once.
TEST(BootstrapFailures, AHubThatRefusesIsSaidAtOnce) {
  setenv("CCO_TIMEOUT_MS", "20000", 1);
  ccoUniqueId raw;
  ASSERT_EQ(ccoGetUniqueId(&raw), ccoSuccess);
  UniqueIdContents id;
  ASSERT_TRUE(DecodeUniqueId(raw, &id).ok());
  std::thread rankZero([&] {  // says hello as rank 0, then goes
    Channel root;
    ASSERT_TRUE(ConnectChannel(id.root, id.secret, "root", 5000, DeadlineIn(5000), &root).ok());
    ASSERT_TRUE(root.Send(EncodeHello(RootHello{2, 0, ClosedPort()}), DeadlineIn(5000)).ok());
    std::string welcome;
    ASSERT_TRUE(root.Recv(&welcome, kMaxWelcomeBytes, DeadlineIn(5000)).ok());
  });
  const auto start = Clock::now();
  std::unique_ptr<Bootstrap> b;
  const Status s = Bootstrap::Create(id, 2, 1, 20000, &b);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  rankZero.join();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 0 refused the connection to its hub"), std::string::npos) << s.message();
  EXPECT_LT(ms, 5000) << "it waited for the bound";
}

int Entries(const char* dir) {
  DIR* d = opendir(dir);
  int n = 0;
  for (dirent* e; (e = readdir(d)) != nullptr;) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Sixteen ids minted and never used: one thread watches all their listeners (each held a
// thread of its own for the whole bound before); one of them still makes a communicator; at
// their bound the listeners close and the watch ends.
TEST(BootstrapFailures, UnusedIdsShareOneThreadAndEndAtTheirBound) {
  setenv("CCO_PLATFORM", "cpu", 1);
  setenv("CCO_TIMEOUT_MS", "1000", 1);
  // The test before may leave a thread on its way out (its rendezvous root, once it answered):
  // the count this process settles at.
  int threads = Entries("/proc/self/task");
  for (const auto settle = Clock::now(); Clock::now() - settle < std::chrono::milliseconds(300);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    threads = std::min(threads, Entries("/proc/self/task"));
  }
  const int fds = Entries("/proc/self/fd");
  std::vector<ccoUniqueId> ids(16);
  for (auto& id : ids) ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
  EXPECT_LE(Entries("/proc/self/task"), threads + 1);
  // The listeners, and the watch's eventfd unless an earlier id made it.
  EXPECT_GE(Entries("/proc/self/fd"), fds + 16);
  EXPECT_LE(Entries("/proc/self/fd"), fds + 16 + 1);
  ccoComm* comm = nullptr;
  ASSERT_EQ(ccoCommCreate(ids[7], 1, 0, 16 << 20, &comm), ccoSuccess) << ccoGetLastError();
  ASSERT_EQ(ccoCommDestroy(comm), ccoSuccess);
  const auto start = Clock::now();
  while ((Entries("/proc/self/task") > threads || Entries("/proc/self/fd") > fds + 1) &&
         Clock::now() - start < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(Entries("/proc/self/task"), threads);
  EXPECT_LE(Entries("/proc/self/fd"), fds + 1);  // the watch's eventfd stays for the next ids
  setenv("CCO_TIMEOUT_MS", "20000", 1);
}

}  // namespace
}  // namespace cco
