// SPDX-License-Identifier: MIT
// The GDA tcp mesh's connections against an id holder who is no rank (internal API, threads
// of one process on loopback): it completes the handshake (it holds the secret) and claims a
// rank before the honest rank connects. Its claim must be dropped (it cannot prove the rank's
// join key), the honest connection taken, and no rank stalled: before join keys, the first
// claim took the rank's place, and the honest rank's connection was dropped.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "auth/crypto.h"
#include "bootstrap/channel.h"
#include "bootstrap/wire.h"
#include "net/tcp_mesh.h"

namespace cco {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kJoinMagic = 0x4a4e4343;  // the join frame's (net/tcp_mesh.cc)
constexpr int64_t kTimeoutMs = 10000;

// The impostor: authenticated (it has the secret), then a claim to be `rank`, as `frame`;
// holds the connection open until told.
struct Impostor {
  Channel channel;
  bool Claim(const SockAddr& to, const Key& secret, const std::string& frame) {
    return ConnectChannel(to, secret, "gda-tcp", 5000, DeadlineIn(5000), &channel).ok() &&
           channel.Send(frame, DeadlineIn(5000)).ok();
  }
};

TEST(TcpMesh, AClaimWithoutTheRanksJoinKeyTakesNoPlace) {
  Key secret;
  ASSERT_TRUE(RandomBytes(secret.bytes.data(), secret.bytes.size()).ok());
  constexpr int n = 2;
  std::vector<Fd> listeners(n);
  std::vector<TcpMeshAnnouncement> announced(n);
  std::vector<SockAddr> addresses(n);
  std::vector<Key> joinKeys(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(ListenForTcpMesh(&listeners[r], &announced[r]).ok());
    ASSERT_TRUE(CheckListenAddress(announced[r].address, r, &addresses[r]).ok());
    joinKeys[r] = announced[r].joinKey;
  }
  const std::vector<std::vector<bool>> remote = {{false, true}, {true, false}};  // each rank's peers

  // Rank 1 accepts first; two impostors claim rank 0 there before rank 0 begins: one with the
  // frame of old (magic and rank), one with a proof made without rank 0's key.
  std::vector<std::vector<Fd>> out(n), in(n);
  std::vector<Status> result(n);
  const auto start = Clock::now();
  std::thread one([&] {
    result[1] =
        ConnectTcpPeers(secret, 1, remote[1], addresses, joinKeys, listeners[1].get(), kTimeoutMs, &out[1], &in[1]);
  });
  Impostor plain, forged;
  WireWriter old;
  old.Put(kJoinMagic).Put(int32_t{0});
  ASSERT_TRUE(plain.Claim(addresses[1], secret, old.bytes()));
  Key guess;
  ASSERT_TRUE(RandomBytes(guess.bytes.data(), guess.bytes.size()).ok());
  Mac wrong;
  const int32_t zero = 0, target = 1;
  ASSERT_TRUE(
      Hmac(guess, {Bytes("cco/1 gda-tcp join"), Bytes(&zero, sizeof(zero)), Bytes(&target, sizeof(target))}, &wrong)
          .ok());
  WireWriter bad;
  bad.Put(kJoinMagic).Put(zero).Put(wrong);
  ASSERT_TRUE(forged.Claim(addresses[1], secret, bad.bytes()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 1 has read both claims
  result[0] =
      ConnectTcpPeers(secret, 0, remote[0], addresses, joinKeys, listeners[0].get(), kTimeoutMs, &out[0], &in[0]);
  one.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(result[0].ok()) << result[0].message();
  ASSERT_TRUE(result[1].ok()) << result[1].message();
  EXPECT_LT(seconds, 5.0) << "a rank waited for the bound";
  // Rank 1's connection from rank 0 is rank 0's: what rank 0 sends arrives there.
  ASSERT_TRUE(out[0][1].valid() && in[1][0].valid());
  const char ping = 'p';
  ASSERT_EQ(send(out[0][1].get(), &ping, 1, MSG_NOSIGNAL), 1);
  timeval t{5, 0};
  setsockopt(in[1][0].get(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
  char got = 0;
  EXPECT_EQ(recv(in[1][0].get(), &got, 1, 0), 1);
  EXPECT_EQ(got, 'p');
  // The impostors were turned away: their connections are closed.
  for (Impostor* i : {&plain, &forged}) {
    std::string frame;
    EXPECT_FALSE(i->channel.Recv(&frame, 64, DeadlineIn(2000)).ok());
  }
}

}  // namespace
}  // namespace cco
