// SPDX-License-Identifier: MIT
// The security layer on its own: HMAC-SHA-256 against RFC 4231, the handshake (good and
// wrong secrets, replays, other purposes), authenticated frames (tampering, replay,
// reordering, bounds that hold before any allocation, descriptors), the acceptor (strangers,
// slow and silent clients, floods, running out of descriptors) and the message decoders.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "auth/crypto.h"
#include "auth/handshake.h"
#include "bootstrap/acceptor.h"
#include "bootstrap/channel.h"
#include "bootstrap/messages.h"

namespace cco {
namespace {

Key KeyOf(uint8_t fill) {
  Key k;
  k.bytes.fill(fill);
  return k;
}

std::string Hex(const Mac& m) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : m) s += std::string{d[b >> 4], d[b & 15]};
  return s;
}

// --- crypto -----------------------------------------------------------------------------

TEST(Crypto, HmacSha256MatchesRfc4231) {
  // RFC 4231 test case 1: a 20-byte key of 0x0b, "Hi There". HMAC zero-pads keys shorter
  // than its block, so the 32-byte key 0x0b x 20 + 0x00 x 12 is the same key.
  Key key;
  for (size_t i = 0; i < 20; ++i) key.bytes[i] = 0x0b;
  Mac mac;
  ASSERT_TRUE(Hmac(key, {Bytes("Hi There")}, &mac).ok());
  EXPECT_EQ(Hex(mac), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Parts are concatenated: the same message in pieces gives the same MAC.
  Mac pieces;
  ASSERT_TRUE(Hmac(key, {Bytes("Hi "), Bytes("The"), Bytes("re")}, &pieces).ok());
  EXPECT_EQ(mac, pieces);
  Mac other;
  ASSERT_TRUE(Hmac(KeyOf(0x0b), {Bytes("Hi There")}, &other).ok());
  EXPECT_NE(mac, other);
  EXPECT_TRUE(MacEqual(mac, pieces));
  EXPECT_FALSE(MacEqual(mac, other));
}

TEST(Crypto, RandomBytesDiffer) {
  Key a, b;
  ASSERT_TRUE(RandomBytes(a.bytes.data(), a.bytes.size()).ok());
  ASSERT_TRUE(RandomBytes(b.bytes.data(), b.bytes.size()).ok());
  EXPECT_NE(a.bytes, b.bytes);
}

// --- handshake --------------------------------------------------------------------------

struct Outcome {
  Status server, client;
  SessionKeys serverKeys{}, clientKeys{};
};

Outcome Shake(const Key& serverSecret, const Key& clientSecret, const char* serverPurpose = "hub",
              const char* clientPurpose = "hub") {
  Outcome o;
  ServerHandshake server(serverSecret, serverPurpose);
  ClientHandshake client(clientSecret, clientPurpose);
  std::string hello, proof, reply;
  EXPECT_TRUE(server.Begin(&hello).ok());
  EXPECT_EQ(hello.size(), kServerHelloBytes);
  EXPECT_TRUE(client.Respond(hello, &proof).ok());
  EXPECT_EQ(proof.size(), kClientProofBytes);
  o.server = server.Answer(proof, &reply, &o.serverKeys);
  if (!o.server.ok()) reply = RejectionReply();
  o.client = client.Finish(reply, &o.clientKeys);
  return o;
}

TEST(Handshake, SameSecretAgreesOnKeys) {
  Outcome o = Shake(KeyOf(1), KeyOf(1));
  ASSERT_TRUE(o.server.ok()) << o.server.message();
  ASSERT_TRUE(o.client.ok()) << o.client.message();
  EXPECT_EQ(o.serverKeys.send.bytes, o.clientKeys.receive.bytes);
  EXPECT_EQ(o.serverKeys.receive.bytes, o.clientKeys.send.bytes);
  EXPECT_NE(o.serverKeys.send.bytes, o.serverKeys.receive.bytes);  // one key per direction
  EXPECT_NE(o.serverKeys.send.bytes, KeyOf(1).bytes);              // never the secret itself
  // Fresh nonces: a second connection has other keys.
  Outcome again = Shake(KeyOf(1), KeyOf(1));
  EXPECT_NE(again.serverKeys.send.bytes, o.serverKeys.send.bytes);
}

TEST(Handshake, WrongSecretOrPurposeIsRejected) {
  Outcome o = Shake(KeyOf(1), KeyOf(2));
  EXPECT_EQ(o.server.code(), ccoRemoteError);
  EXPECT_EQ(o.client.code(), ccoInvalidUsage);  // the rejection tells an honest rank its id is wrong
  EXPECT_NE(o.client.message().find("unique id"), std::string::npos);
  o = Shake(KeyOf(1), KeyOf(1), "hub", "root");  // a proof for one service is no proof for another
  EXPECT_EQ(o.server.code(), ccoRemoteError);
}

TEST(Handshake, ReplayedProofFailsOnAFreshChallenge) {
  ServerHandshake first(KeyOf(1), "root");
  ClientHandshake client(KeyOf(1), "root");
  std::string hello, proof, reply;
  ASSERT_TRUE(first.Begin(&hello).ok());
  ASSERT_TRUE(client.Respond(hello, &proof).ok());
  // An eavesdropper replays the proof to a new connection: its challenge differs.
  ServerHandshake second(KeyOf(1), "root");
  std::string hello2;
  ASSERT_TRUE(second.Begin(&hello2).ok());
  SessionKeys keys;
  EXPECT_EQ(second.Answer(proof, &reply, &keys).code(), ccoRemoteError);
  // A server that is not a server: a forged proof fails on the client.
  EXPECT_EQ(client.Finish(std::string(kServerProofBytes, 'x'), &keys).code(), ccoRemoteError);
}

TEST(Handshake, MalformedMessagesAreErrors) {
  ClientHandshake client(KeyOf(1), "hub");
  std::string proof;
  EXPECT_FALSE(client.Respond("", &proof).ok());
  EXPECT_FALSE(client.Respond(std::string(kServerHelloBytes, '\0'), &proof).ok());
  ServerHandshake server(KeyOf(1), "hub");
  std::string hello, reply;
  SessionKeys keys;
  ASSERT_TRUE(server.Begin(&hello).ok());
  EXPECT_FALSE(server.Answer(std::string(kClientProofBytes - 1, 'p'), &reply, &keys).ok());
  EXPECT_FALSE(server.Answer(std::string(kClientProofBytes, 'p'), &reply, &keys).ok());
}

// --- channel ----------------------------------------------------------------------------

// Two ends of an authenticated stream (a socketpair) with matching keys.
void ChannelPair(Channel* a, Channel* b, int type = SOCK_STREAM) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
  SessionKeys ka{KeyOf(7), KeyOf(8)}, kb{KeyOf(8), KeyOf(7)};
  *a = Channel(Fd(sv[0]), ka);
  *b = Channel(Fd(sv[1]), kb);
}

TEST(Channel, FramesRoundTripInOrder) {
  Channel a, b;
  ChannelPair(&a, &b);
  const Deadline d = DeadlineIn(2000);
  ASSERT_TRUE(a.Send("first", d).ok());
  ASSERT_TRUE(a.Send(std::string(100000, 'x'), d).ok());
  ASSERT_TRUE(a.Send("", d).ok());
  std::string got;
  ASSERT_TRUE(b.Recv(&got, 1 << 20, d).ok());
  EXPECT_EQ(got, "first");
  ASSERT_TRUE(b.Recv(&got, 1 << 20, d).ok());
  EXPECT_EQ(got, std::string(100000, 'x'));
  ASSERT_TRUE(b.Recv(&got, 1 << 20, d).ok());
  EXPECT_EQ(got, "");
}

// Raw bytes of the frame `a` sends for `payload` (captured by a third channel end).
std::string FrameBytes(Channel& sender, int receiverFd, const std::string& payload) {
  EXPECT_TRUE(sender.Send(payload, DeadlineIn(1000)).ok());
  std::string bytes(kFrameHeaderBytes + payload.size() + kFrameTagBytes, '\0');
  EXPECT_TRUE(RecvAll(receiverFd, &bytes[0], bytes.size(), DeadlineIn(1000)).ok());
  return bytes;
}

TEST(Channel, TamperedReplayedAndReorderedFramesFail) {
  Channel a, b;
  ChannelPair(&a, &b);
  const std::string f0 = FrameBytes(a, b.fd(), "zero");
  const std::string f1 = FrameBytes(a, b.fd(), "one");
  std::string payload;
  // Reordered: frame 1 first.
  {
    Channel x, y;
    ChannelPair(&x, &y);
    SessionKeys same{KeyOf(8), KeyOf(7)};
    Channel reader(Fd(dup(y.fd())), same);
    EXPECT_EQ(reader.Open(f1, 64, &payload).code(), ccoRemoteError);
    ASSERT_TRUE(reader.Open(f0, 64, &payload).ok());
    EXPECT_EQ(payload, "zero");
    EXPECT_EQ(reader.Open(f0, 64, &payload).code(), ccoRemoteError);  // replayed
    ASSERT_TRUE(reader.Open(f1, 64, &payload).ok());
    EXPECT_EQ(payload, "one");
  }
  // Tampered: any bit of header, payload or tag.
  for (size_t at : {size_t{0}, size_t{5}, kFrameHeaderBytes + 1, f0.size() - 1}) {
    Channel x, y;
    ChannelPair(&x, &y);
    Channel reader(Fd(dup(y.fd())), SessionKeys{KeyOf(8), KeyOf(7)});
    std::string bad = f0;
    bad[at] ^= 0x20;
    EXPECT_FALSE(reader.Open(bad, 64, &payload).ok()) << "flipped byte " << at;
  }
  // Truncated, and a frame under another key.
  {
    Channel x, y;
    ChannelPair(&x, &y);
    Channel reader(Fd(dup(y.fd())), SessionKeys{KeyOf(8), KeyOf(9)});
    EXPECT_FALSE(reader.Open(f0.substr(0, f0.size() - 1), 64, &payload).ok());
    EXPECT_FALSE(reader.Open(f0, 64, &payload).ok());
  }
}

TEST(Channel, AHugeAnnouncedLengthAllocatesNothing) {
  Channel a, b;
  ChannelPair(&a, &b);
  // A header announcing 1 GiB, then nothing: refused at the header, before any buffer.
  char header[kFrameHeaderBytes];
  const uint32_t magic = 0x42434343;
  const uint64_t length = uint64_t{1} << 30;
  memcpy(header, &magic, 4);
  memcpy(header + 4, &length, 8);
  ASSERT_TRUE(SendAll(a.fd(), header, sizeof(header), DeadlineIn(1000)).ok());
  std::string payload;
  Status s = b.Recv(&payload, 4096, DeadlineIn(1000));
  EXPECT_EQ(s.code(), ccoRemoteError);
  EXPECT_NE(s.message().find("1073741824-byte message (limit 4096)"), std::string::npos) << s.message();
  EXPECT_EQ(payload.capacity() < 4096u, true);
  // Within the bound but never sent: the reader times out having kept only what arrived.
  Channel c, d;
  ChannelPair(&c, &d);
  const uint64_t big = 64 << 20;
  memcpy(header + 4, &big, 8);
  ASSERT_TRUE(SendAll(c.fd(), header, sizeof(header), DeadlineIn(1000)).ok());
  ASSERT_TRUE(SendAll(c.fd(), "abc", 3, DeadlineIn(1000)).ok());
  s = d.Recv(&payload, size_t{1} << 30, DeadlineIn(200));
  EXPECT_EQ(s.code(), ccoTimeout);
  EXPECT_LE(payload.capacity(), (size_t{1} << 20) + 64);  // one read chunk, not 64 MiB
}

TEST(Channel, DescriptorsTravelOnlyWhereAskedFor) {
  Channel a, b;
  ChannelPair(&a, &b);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ASSERT_TRUE(a.Send("fd", DeadlineIn(1000), pipe_fds[0]).ok());
  std::string payload;
  int got = -1;
  ASSERT_TRUE(b.Recv(&payload, 64, DeadlineIn(1000), &got).ok());
  ASSERT_GE(got, 0);
  EXPECT_NE(got, pipe_fds[0]);
  ASSERT_EQ(write(pipe_fds[1], "z", 1), 1);
  char c = 0;
  EXPECT_EQ(read(got, &c, 1), 1);  // the same pipe
  EXPECT_EQ(c, 'z');
  close(got);
  // A descriptor nobody asked for is closed and refused.
  ASSERT_TRUE(a.Send("fd", DeadlineIn(1000), pipe_fds[0]).ok());
  EXPECT_EQ(b.Recv(&payload, 64, DeadlineIn(1000)).code(), ccoRemoteError);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

// --- acceptor ---------------------------------------------------------------------------

struct Server {
  Fd listener;
  SockAddr address;
  Server() {
    SockAddr local{};
    auto* in = reinterpret_cast<sockaddr_in*>(&local.storage);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    local.length = sizeof(sockaddr_in);
    EXPECT_TRUE(ListenTcp(local, &listener, &address).ok());
  }
};

// An honest client: authenticates and introduces itself with `name`.
Status Client(const SockAddr& at, const Key& secret, const std::string& name, int64_t ms = 3000) {
  Channel ch;
  CCO_RETURN_IF_ERROR(ConnectChannel(at, secret, "hub", 1000, DeadlineIn(ms), &ch));
  CCO_RETURN_IF_ERROR(ch.Send(name, DeadlineIn(ms)));
  std::string echo;
  CCO_RETURN_IF_ERROR(ch.Recv(&echo, 64, DeadlineIn(ms)));
  return echo == "ok:" + name ? Status::Ok() : RemoteError("wrong echo");
}

// Serves `count` arrivals, answering each.
std::vector<std::string> Serve(Acceptor& acceptor, size_t count, int64_t ms) {
  std::vector<std::string> names;
  const Deadline d = DeadlineIn(ms);
  while (names.size() < count) {
    Arrival a;
    if (!acceptor.Next(d, &a).ok()) break;
    names.push_back(a.firstFrame);
    a.channel.Send("ok:" + a.firstFrame, DeadlineIn(1000));
  }
  return names;
}

TEST(Acceptor, AStrangerAndASilentClientDoNotDelayHonestOnes) {
  Server server;
  const Key secret = KeyOf(3);
  Acceptor acceptor(server.listener.get(), secret, AcceptorOptions{"hub", 300, 16, 64, false});
  // A silent client (connects, sends one byte, then nothing) and a stranger with another key.
  Fd silent;
  ASSERT_TRUE(ConnectTcp(server.address, DeadlineIn(1000), &silent).ok());
  ASSERT_TRUE(SendAll(silent.get(), "x", 1, DeadlineIn(1000)).ok());
  Status stranger;
  std::atomic<bool> strangerDone{false};
  std::thread t1([&] {
    stranger = Client(server.address, KeyOf(4), "stranger");
    strangerDone = true;
  });
  Status honest;
  std::thread t2([&] { honest = Client(server.address, secret, "honest"); });
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> names = Serve(acceptor, 1, 3000);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Keep serving until the stranger has its answer (it may come after the honest one).
  Arrival extra;
  for (int i = 0; i < 100 && !strangerDone; ++i) EXPECT_FALSE(acceptor.Next(DeadlineIn(20), &extra).ok());
  t1.join();
  t2.join();
  EXPECT_EQ(names, std::vector<std::string>{"honest"});
  EXPECT_TRUE(honest.ok()) << honest.message();
  EXPECT_EQ(stranger.code(), ccoInvalidUsage) << stranger.message();  // told, not left hanging
  EXPECT_LT(ms, 1000.0) << "an honest client waited for the silent one";
  // The silent one is dropped at its deadline.
  Arrival a;
  EXPECT_EQ(acceptor.Next(DeadlineIn(600), &a).code(), ccoTimeout);
  EXPECT_EQ(acceptor.pending(), 0u);
  EXPECT_GE(acceptor.stats().expired, 1u);
  EXPECT_EQ(acceptor.stats().failedAuthentication, 1u);
}

TEST(Acceptor, AFloodIsCappedAndHonestClientsStillGetIn) {
  Server server;
  const Key secret = KeyOf(5);
  Acceptor acceptor(server.listener.get(), secret, AcceptorOptions{"hub", 2000, 8, 64, false});
  std::atomic<bool> stop{false};
  std::atomic<int> opened{0};
  std::thread flood([&] {
    std::vector<Fd> held;
    while (!stop) {
      Fd fd;
      if (ConnectTcp(server.address, DeadlineIn(200), &fd).ok()) {
        held.push_back(std::move(fd));
        ++opened;
      }
      if (held.size() > 200) held.erase(held.begin(), held.begin() + 100);
    }
  });
  // The honest clients come while the flood is in full swing (the acceptor is served
  // meanwhile, as a server would be).
  Arrival none;
  for (int i = 0; i < 100 && opened < 100; ++i) acceptor.Next(DeadlineIn(20), &none);
  ASSERT_GE(opened.load(), 100);
  std::vector<Status> honest(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&, i] { honest[i] = Client(server.address, secret, "c" + std::to_string(i), 5000); });
  std::vector<std::string> names = Serve(acceptor, 4, 6000);
  stop = true;
  flood.join();
  for (auto& t : clients) t.join();
  EXPECT_EQ(names.size(), 4u);
  for (const Status& s : honest) EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_LE(acceptor.pending(), 8u);
  EXPECT_GT(acceptor.stats().evicted, 0u);
}

// Out of descriptors: the acceptor makes room and rests instead of spinning on accept.
TEST(Acceptor, RunningOutOfDescriptorsNeitherSpinsNorStarves) {
  Server server;
  const Key secret = KeyOf(6);
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Hold strangers' connections until this process has no descriptor left.
  std::vector<Fd> strangers;
  int spare = dup(0);
  ASSERT_GE(spare, 0);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(spare + 24);
  close(spare);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  Acceptor acceptor(server.listener.get(), secret, AcceptorOptions{"hub", 5000, 64, 64, false});
  // The strangers connect from another process, so only the acceptor's side costs ours.
  pid_t child = fork();
  if (child == 0) {
    std::vector<Fd> held;
    for (int i = 0; i < 64; ++i) {
      Fd fd;
      if (ConnectTcp(server.address, DeadlineIn(500), &fd).ok()) held.push_back(std::move(fd));
    }
    sleep(3);
    _exit(0);
  }
  // Let the strangers fill this process's descriptors, timing the acceptor's CPU use.
  rusage before, after;
  getrusage(RUSAGE_THREAD, &before);
  Arrival a;
  EXPECT_EQ(acceptor.Next(DeadlineIn(1000), &a).code(), ccoTimeout);
  getrusage(RUSAGE_THREAD, &after);
  const double cpu =
      (after.ru_utime.tv_sec - before.ru_utime.tv_sec) + (after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
      1e-6 * ((after.ru_utime.tv_usec - before.ru_utime.tv_usec) + (after.ru_stime.tv_usec - before.ru_stime.tv_usec));
  EXPECT_GT(acceptor.stats().descriptorShortages, 0u);
  EXPECT_LT(cpu, 0.5) << "the acceptor spun for " << cpu << " s of CPU in 1 s";
  // An honest client (from another process too) still gets in: room is made for it.
  pid_t honest = fork();
  if (honest == 0) _exit(Client(server.address, secret, "late", 4000).ok() ? 0 : 1);
  std::vector<std::string> names = Serve(acceptor, 1, 5000);
  int status = 0;
  waitpid(honest, &status, 0);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(names, std::vector<std::string>{"late"});
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Acceptor, AnOversizedFirstFrameIsDropped) {
  Server server;
  const Key secret = KeyOf(9);
  Acceptor acceptor(server.listener.get(), secret, AcceptorOptions{"hub", 2000, 8, 16, false});
  Status s;
  std::thread t([&] { s = Client(server.address, secret, std::string(17, 'n'), 1500); });
  Arrival a;
  EXPECT_EQ(acceptor.Next(DeadlineIn(1500), &a).code(), ccoTimeout);
  t.join();
  EXPECT_FALSE(s.ok());
}

// --- messages ---------------------------------------------------------------------------

TEST(Messages, DecodersRefuseTruncatedTrailingAndOversized) {
  RootHello h{4, 2, SockAddr{}};
  std::string bytes = EncodeHello(h);
  RootHello out;
  ASSERT_TRUE(DecodeHello(bytes, &out).ok());
  EXPECT_EQ(out.rank, 2);
  EXPECT_FALSE(DecodeHello(bytes.substr(0, bytes.size() - 1), &out).ok());
  EXPECT_FALSE(DecodeHello(bytes + "x", &out).ok());
  EXPECT_FALSE(DecodeHello(EncodeHello(RootHello{kMaxRanks + 1, 0, SockAddr{}}), &out).ok());
  RootHello badAddress{2, 0, SockAddr{}};
  badAddress.hub.storage.ss_family = AF_UNIX;
  badAddress.hub.length = 999;
  EXPECT_FALSE(DecodeHello(EncodeHello(badAddress), &out).ok());

  Contribution c{3, "op", std::string(kMaxContribution + 1, 'p')};
  Contribution got;
  EXPECT_FALSE(DecodeContribution(EncodeContribution(c), &got).ok());
  c.payload.resize(kMaxContribution);
  EXPECT_TRUE(DecodeContribution(EncodeContribution(c), &got).ok());

  std::vector<std::string> all;
  EXPECT_EQ(DecodeAnswer(EncodeAnswer(Status::Ok(), {"a", "b"}), 3, &all).code(), ccoRemoteError);
  ASSERT_TRUE(DecodeAnswer(EncodeAnswer(Status::Ok(), {"a", "b"}), 2, &all).ok());
  EXPECT_EQ(all, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(DecodeAnswer(EncodeAnswer(Timeout("slow"), {}), 2, &all).code(), ccoTimeout);
  Status st;
  std::string unknown = EncodeStatus(Status(ccoSuccess, ""));
  unknown[0] = 77;
  EXPECT_FALSE(DecodeStatus(unknown, &st).ok());
  // A status message is cut to its bound when sent.
  ASSERT_TRUE(DecodeStatus(EncodeStatus(RemoteError(std::string(100000, 'm'))), &st).ok());
  EXPECT_EQ(st.message().size(), kMaxStatusText);
}

}  // namespace
}  // namespace cco
