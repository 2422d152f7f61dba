// Bootstrap failures that must be said at once rather than at CCO_TIMEOUT_MS (internal API,
// one process): a rank whose rank 0 is gone after the rendezvous (its hub refuses the
// connection) learns it at once, with a message that says so.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

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

}  // namespace
}  // namespace cco
