// SPDX-License-Identifier: MIT
// The tcp backend against a peer the test plays by hand (raw sockets on loopback, the
// protocol of net/tcp_wire.h): what an authenticated but misbehaving or unlucky peer can and
// cannot make this rank do. The backend runs on the cpu platform; its map is one window and
// one signal word of the test's.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "tests/host/testing/counting_platform.h"
#include "net/tcp_backend.h"
#include "net/tcp_wire.h"
#include "platform/platform.h"

namespace cco {
namespace {

constexpr uint32_t kWindow = 1, kGda = 7;

class Map : public NetTargetMap {
 public:
  std::vector<unsigned char> window = std::vector<unsigned char>(size_t{4} << 20, 0);
  bool live = true;
  int lookupsLeft = -1;  // >= 0: the window is deregistered after that many more look-ups
  uint64_t word = 0, sum = 0;

  Status WindowAddress(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* address) override {
    if (lookupsLeft >= 0 && lookupsLeft-- == 0) live = false;
    if (!live || id != kWindow || offset > window.size() || bytes > window.size() - offset)
      return InvalidArgument("no such window range");
    *address = reinterpret_cast<uint64_t>(window.data()) + offset;
    return Status::Ok();
  }
  Status SignalAddress(uint32_t gda, uint32_t signal, int32_t, uint64_t* address) override {
    if (gda != kGda || signal >= 4) return InvalidArgument("no such signal");
    *address = reinterpret_cast<uint64_t>(&word);
    return Status::Ok();
  }
  Status AddSignal(uint32_t gda, uint32_t signal, int32_t sender, uint64_t add, uint64_t* address,
                   uint64_t* newSum) override {
    CCO_RETURN_IF_ERROR(SignalAddress(gda, signal, sender, address));
    *newSum = sum += add;
    return Status::Ok();
  }
};

// A connected pair of TCP sockets on loopback: {ours, theirs}.
void Pair(Fd* ours, Fd* theirs) {
  Fd listener(socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(a);
  ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener.get(), 1), 0);
  ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &length), 0);
  theirs->Reset(socket(AF_INET, SOCK_STREAM, 0));
  ASSERT_EQ(connect(theirs->get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ours->Reset(accept(listener.get(), nullptr, nullptr));
  ASSERT_TRUE(ours->valid());
  timeval t{10, 0};  // the test's own reads never hang
  setsockopt(theirs->get(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
}

// Each test runs twice: the backend reading its sockets as epoll reports them, and reading
// every socket each pass (what it does with one or two peers).
class TcpPeer : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    Platform* cpu = nullptr;
    ASSERT_TRUE(CreateCpuPlatform(&cpu).ok());
    cpu_.reset(cpu);  // this fixture's own (GetPlatform's is the process's, never freed)
    counting_.reset(new CountingPlatform(cpu));
    platform_ = counting_.get();
    TcpOptions o;
    o.timeoutMs = 300;
    o.chunkBytes = 64 << 10;
    o.ackDelayUs = 200000;  // long enough that a carried ack is never beaten by a bare one
    ASSERT_NO_FATAL_FAILURE(Connect(o));
  }
  // A backend with options `o` (and the test's way of polling) on new connections to the peer.
  void Connect(TcpOptions o) {
    backend_.reset();
    std::vector<Fd> out(2), in(2);
    Pair(&out[1], &requestsOfMine_);   // this rank's requests go out on out[1]
    Pair(&in[1], &requestsOfTheirs_);  // the peer's requests come in on in[1]
    o.pollEverySocketPeers = GetParam() ? 1 : 0;
    ASSERT_TRUE(TcpBackend::Create(platform_, 0, o, std::move(out), std::move(in), &backend_).ok());
    ASSERT_EQ(backend_->readsEverySocket(), GetParam());
  }

  // Runs the backend until `until` holds (at most 5 s); the completions collected.
  bool Run(const std::function<bool()>& until) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
      backend_->Progress(map_, &done_);
      if (until()) return true;
    }
    return false;
  }
  void SendRequest(TcpHeader h, const std::string& payload = "") {
    std::string bytes(reinterpret_cast<const char*>(&h), sizeof(h));
    bytes += payload;
    ASSERT_EQ(send(requestsOfTheirs_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next answer on the peer's request connection (its payload in *data).
  TcpHeader ReadAnswer(std::string* data = nullptr) { return ReadHeader(requestsOfTheirs_, data); }
  // The next request of this rank's, as the peer receives it.
  TcpHeader ReadRequest() { return ReadHeader(requestsOfMine_, nullptr); }
  // The peer answers this rank's requests.
  void SendAnswer(TcpHeader h) {
    ASSERT_EQ(send(requestsOfMine_.get(), &h, sizeof(h), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(h)));
  }
  TcpHeader ReadHeader(const Fd& fd, std::string* data) {
    TcpHeader h;
    memset(&h, 0, sizeof(h));
    RecvExactly(fd, reinterpret_cast<char*>(&h), sizeof(h));
    if (data != nullptr) {
      data->assign(h.bytes, '\0');
      RecvExactly(fd, &(*data)[0], h.bytes);
    }
    return h;
  }
  // At most 5 s, so a missing message fails the test instead of hanging it.
  void RecvExactly(const Fd& fd, char* p, size_t n) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (n > 0 && std::chrono::steady_clock::now() < end) {
      backend_->Progress(map_, &done_);
      const ssize_t k = recv(fd.get(), p, n, MSG_DONTWAIT);
      if (k > 0) p += k, n -= static_cast<size_t>(k);
      else if (k == 0) return;
    }
  }
  // Bytes waiting on `fd` after the backend ran for `passes` more passes.
  bool AnythingArrives(const Fd& fd, int passes) {
    for (int i = 0; i < passes; ++i) backend_->Progress(map_, &done_);
    char c;
    return recv(fd.get(), &c, 1, MSG_DONTWAIT | MSG_PEEK) > 0;
  }
  // This rank posts a signal to the peer.
  void PostSignal(uint64_t cookie) {
    NetOp op;
    op.kind = NetOpKind::kSignal;
    op.peer = 1;
    op.gdaId = kGda;
    op.signal = true;
    op.signalAdd = 1;
    op.cookie = cookie;
    backend_->Post(op, map_);
  }
  // This rank posts a get of `bytes` from the peer's window, or a put of as many into it.
  void PostGet(uint64_t cookie, uint64_t bytes) { PostCopy(NetOpKind::kGet, cookie, bytes); }
  void PostPut(uint64_t cookie, uint64_t bytes) { PostCopy(NetOpKind::kPut, cookie, bytes); }
  void PostCopy(NetOpKind kind, uint64_t cookie, uint64_t bytes) {
    NetOp op;
    op.kind = kind;
    op.peer = 1;
    op.window = kWindow;
    op.localWindow = kWindow;
    op.bytes = bytes;
    op.cookie = cookie;
    backend_->Post(op, map_);
  }
  TcpHeader Signal(uint64_t seq) {
    TcpHeader h = TcpRequestHeader(kTcpSignal, seq);
    h.flags = kTcpHasSignal;
    h.gdaId = kGda;
    h.signalAdd = 1;
    return h;
  }
  // The peer's signal `seq`, carrying its ack of this rank's requests up to ackSeq (once it
  // holds the answers up to ackAfter).
  TcpHeader SignalCarryingAck(uint64_t seq, uint64_t ackSeq, uint64_t ackAfter = 0) {
    TcpHeader h = Signal(seq);
    h.flags |= kTcpHasAck;
    h.ackSeq = ackSeq;
    h.ackAfter = ackAfter;
    return h;
  }
  const NetCompletion* Completion(uint64_t cookie) {
    for (const auto& c : done_)
      if (c.cookie == cookie) return &c;
    return nullptr;
  }
  TcpHeader Put(uint64_t seq, uint64_t offset, uint64_t bytes) {
    TcpHeader h = TcpRequestHeader(kTcpPut, seq);
    h.window = kWindow;
    h.offset = offset;
    h.bytes = bytes;
    return h;
  }

  // Declared first, destroyed last: the backend and the counting platform use it to the end.
  std::unique_ptr<Platform> cpu_;
  std::unique_ptr<CountingPlatform> counting_;
  Platform* platform_ = nullptr;
  Fd requestsOfMine_, requestsOfTheirs_;
  std::unique_ptr<TcpBackend> backend_;
  Map map_;
  std::vector<NetCompletion> done_;
};

// An allocation (or a free, or a stream made) while kernels run can deadlock (net/staging.h):
// every chunk and word is allocated by Create, and a put sent, a put received, a get
// answered, an unaligned put_value applied and a get's data landed make no such call.
TEST_P(TcpPeer, NothingIsAllocatedOnceTheBackendIsMade) {
  const int made = counting_->callsThatMayWait;
  EXPECT_EQ(counting_->pinnedAllocations, 2);  // the fence's word, one slab for every chunk and word
  for (size_t i = 0; i < 4096; ++i) map_.window[i] = static_cast<unsigned char>(i * 7);
  PostPut(1, 3000);  // out through a send chunk
  std::string data;
  TcpHeader request = ReadHeader(requestsOfMine_, &data);
  EXPECT_EQ(request.bytes, 3000u);
  EXPECT_EQ(data, std::string(reinterpret_cast<const char*>(map_.window.data()), 3000));
  SendAnswer(TcpAnswerHeader(kTcpAck, request.seq));
  SendRequest(Put(1, 8192, 100), std::string(100, 'x'));  // in through a receive chunk
  TcpHeader get = TcpRequestHeader(kTcpGet, 2);
  get.window = kWindow;
  get.bytes = 13;
  SendRequest(get);
  TcpHeader value = TcpRequestHeader(kTcpPutValue, 3);
  value.window = kWindow;
  value.offset = 9001;  // unaligned: through a pinned word
  value.bytes = 3;
  value.value = 0xABCDEF;
  SendRequest(value);
  ASSERT_TRUE(Run([&] { return Completion(1) != nullptr; }));
  EXPECT_TRUE(Completion(1)->status.ok());
  EXPECT_EQ(ReadAnswer().type, kTcpAck);
  TcpHeader answer = ReadAnswer(&data);
  EXPECT_EQ(answer.type, kTcpGetData);
  EXPECT_EQ(data, std::string(reinterpret_cast<const char*>(map_.window.data()), 13));
  ASSERT_TRUE(Run([&] { return map_.window[9001] == 0xEF && map_.window[9003] == 0xAB; }));
  EXPECT_EQ(map_.window[8192], 'x');
  PostGet(2, 100);  // its data lands here through a receive chunk of the requests socket
  TcpHeader ours = ReadRequest();
  TcpHeader getData = TcpAnswerHeader(kTcpGetData, ours.seq);
  getData.bytes = 100;
  std::string wire(reinterpret_cast<const char*>(&getData), sizeof(getData));
  wire += std::string(100, 'g');
  ASSERT_EQ(send(requestsOfMine_.get(), wire.data(), wire.size(), MSG_NOSIGNAL), static_cast<ssize_t>(wire.size()));
  ASSERT_TRUE(Run([&] { return Completion(2) != nullptr; }));
  EXPECT_TRUE(Completion(2)->status.ok()) << Completion(2)->status.message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(map_.window.data()), 100), std::string(100, 'g'));
  EXPECT_EQ(counting_->callsThatMayWait, made);
}

TEST(TcpStaging, ChunksShrinkSoThatEveryPeerFitsTheBudget) {
  TcpOptions o;
  o.chunkBytes = 1 << 20;
  o.chunks = 4;
  o.stagingBytes = 64 << 20;  // 16 chunk pools of 1 MiB: 4 peers
  EXPECT_EQ(StagingChunkBytes(o, 0), size_t{1} << 20);
  EXPECT_EQ(StagingChunkBytes(o, 1), size_t{1} << 20);
  EXPECT_EQ(StagingChunkBytes(o, 4), size_t{1} << 20);
  for (size_t peers : {5, 8, 100, 1000}) {
    const size_t chunk = StagingChunkBytes(o, peers);
    EXPECT_EQ(chunk % 4096, 0u) << peers;
    EXPECT_LE(peers * 4 * 4 * chunk, o.stagingBytes) << peers;
    EXPECT_GT(peers * 4 * 4 * (chunk + 4096), o.stagingBytes) << peers;  // the most that fits
  }
  EXPECT_EQ(StagingChunkBytes(o, 100000), 4096u);  // the least, whatever the budget
  o.chunkBytes = 12344;                            // a chunk below the budget's stays what it was asked to be
  EXPECT_EQ(StagingChunkBytes(o, 2), 12344u);
}

TEST(TcpStaging, TheBudgetComesFromTheEnvironmentWithinItsBounds) {
  setenv("CCO_TCP_STAGING_BYTES", "12345", 1);
  EXPECT_EQ(TcpOptionsFromEnv(1000).stagingBytes, size_t{1} << 20);
  setenv("CCO_TCP_STAGING_BYTES", "999999999999999", 1);
  EXPECT_EQ(TcpOptionsFromEnv(1000).stagingBytes, size_t{64} << 30);
  setenv("CCO_TCP_STAGING_BYTES", "268435456", 1);
  EXPECT_EQ(TcpOptionsFromEnv(1000).stagingBytes, size_t{256} << 20);
  unsetenv("CCO_TCP_STAGING_BYTES");
  EXPECT_EQ(TcpOptionsFromEnv(1000).stagingBytes, size_t{64} << 20);
}

// A bound of 9.3e12 ms would overflow the clock, failing every pending op at once as
// unanswered: it is clamped like CCO_TIMEOUT_MS (and 0 means the least bound, not none).
TEST(TcpStaging, TheNetworkTimeoutIsClamped) {
  setenv("CCO_NET_TIMEOUT_MS", "9300000000000", 1);
  const int64_t ms = TcpOptionsFromEnv(1000).timeoutMs;
  EXPECT_EQ(ms, int64_t{1} << 41);
  const auto later = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  EXPECT_GT(later, std::chrono::steady_clock::now());  // no wrap
  setenv("CCO_NET_TIMEOUT_MS", "0", 1);
  EXPECT_EQ(TcpOptionsFromEnv(1000).timeoutMs, 1);
  unsetenv("CCO_NET_TIMEOUT_MS");
  EXPECT_EQ(TcpOptionsFromEnv(1000).timeoutMs, 1000);
}

// Two peers under a budget of 1 MiB: their chunks, all allocated at once, fit it.
TEST(TcpStaging, ABackendAllocatesItsBudgetAtMost) {
  Platform* cpu = nullptr;
  ASSERT_TRUE(CreateCpuPlatform(&cpu).ok());
  std::unique_ptr<Platform> owned(cpu);  // the test's own; outlives the backend and the counter
  CountingPlatform counting(cpu);
  std::vector<Fd> out(3), in(3), theirs(4);
  for (int q = 1; q < 3; ++q) {
    ASSERT_NO_FATAL_FAILURE(Pair(&out[q], &theirs[2 * q - 2]));
    ASSERT_NO_FATAL_FAILURE(Pair(&in[q], &theirs[2 * q - 1]));
  }
  TcpOptions o;
  o.stagingBytes = 1 << 20;
  std::unique_ptr<TcpBackend> backend;
  ASSERT_TRUE(TcpBackend::Create(&counting, 0, o, std::move(out), std::move(in), &backend).ok());
  // Besides the chunks: the fence's word and each peer's 1 KiB of put_value words.
  EXPECT_EQ(counting.pinnedAllocations.load(), 2);
  EXPECT_LE(counting.pinnedBytes.load(), o.stagingBytes + 8 + 2 * 1024);
  EXPECT_GE(counting.pinnedBytes.load(), o.stagingBytes / 2);
}

TEST_P(TcpPeer, AGetReadsTheWindowAsItWasBeforeALaterPut) {
  memcpy(map_.window.data(), "OLDOLDOL", 8);
  TcpHeader get = TcpRequestHeader(kTcpGet, 1);
  get.window = kWindow;
  get.bytes = 8;
  SendRequest(get);
  SendRequest(Put(2, 0, 8), "NEWNEWNE");  // right behind it
  std::string data;
  TcpHeader answer = ReadAnswer(&data);
  EXPECT_EQ(answer.type, kTcpGetData);
  EXPECT_EQ(data, "OLDOLDOL");
  answer = ReadAnswer();
  EXPECT_EQ(answer.type, kTcpAck);
  EXPECT_EQ(answer.seq, 2u);
  EXPECT_EQ(memcmp(map_.window.data(), "NEWNEWNE", 8), 0);
}

// The window a get reads is deregistered while its answer is being staged (misuse: a get
// outstanding against it). Its missing chunks must not go out as zeros for the peer's get to
// succeed with: the connection fails, and the peer sees it end before the whole answer.
TEST_P(TcpPeer, AWindowGoneWhileAGetIsAnsweredFailsTheConnection) {
  const uint64_t bytes = 4 * (64 << 10);  // four chunks
  TcpHeader get = TcpRequestHeader(kTcpGet, 1);
  get.window = kWindow;
  get.bytes = bytes;
  map_.lookupsLeft = 2;  // the request's check and the first chunk find it
  SendRequest(get);
  ASSERT_TRUE(Run([&] { return !backend_->lastError().empty(); }));
  EXPECT_NE(backend_->lastError().find("answering a get"), std::string::npos) << backend_->lastError();
  // What the peer receives before the connection ends (it ends: the backend closed it).
  std::string got(sizeof(TcpHeader) + bytes, '\0');
  size_t n = 0;
  for (ssize_t k; n < got.size() && (k = recv(requestsOfTheirs_.get(), &got[n], got.size() - n, 0)) > 0;)
    n += static_cast<size_t>(k);
  EXPECT_LT(n, got.size());  // never the whole answer
}

TEST_P(TcpPeer, APeerThatNeverReadsItsAnswersCannotGrowOurMemory) {
  // Zero-byte gets, each owed an answer; the peer never reads one. The backend must stop
  // reading its requests (so the kernel's buffers fill and the peer's sends block) instead of
  // queueing answers without end.
  const int requests = 400000;  // 25.6 MB of headers
  std::string burst;
  for (int i = 1; i <= requests; ++i) {
    TcpHeader h = TcpRequestHeader(kTcpGet, static_cast<uint64_t>(i));
    h.window = kWindow;
    burst.append(reinterpret_cast<const char*>(&h), sizeof(h));
  }
  size_t sent = 0;
  int idle = 0;
  while (sent < burst.size() && idle < 2000) {
    backend_->Progress(map_, &done_);
    const ssize_t k =
        send(requestsOfTheirs_.get(), burst.data() + sent, burst.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k > 0) sent += static_cast<size_t>(k), idle = 0;
    else ++idle;
  }
  EXPECT_LT(sent, burst.size()) << "the backend read every request of a peer that reads no answer";
}

TEST_P(TcpPeer, NothingLandsInAWindowDeregisteredMidPayload) {
  const uint64_t bytes = 1 << 20;
  SendRequest(Put(1, 0, bytes), std::string(bytes / 2, 'a'));
  ASSERT_TRUE(Run([&] { return map_.window[0] == 'a'; }));  // the first chunks landed
  map_.live = false;                                        // the window goes away
  const std::string rest(bytes / 2, 'b');
  ASSERT_EQ(send(requestsOfTheirs_.get(), rest.data(), rest.size(), MSG_NOSIGNAL), static_cast<ssize_t>(rest.size()));
  const TcpHeader answer = ReadAnswer();
  EXPECT_EQ(answer.type, kTcpRefused);
  EXPECT_EQ(answer.value, kRefusedWindow);
  for (size_t i = bytes / 2; i < bytes; ++i) ASSERT_EQ(map_.window[i], 0) << "byte " << i << " landed";
}

TEST_P(TcpPeer, ARefusedSignalAddsNothing) {
  TcpHeader bad = TcpRequestHeader(kTcpSignal, 1);
  bad.flags = kTcpHasSignal;
  bad.gdaId = kGda;
  bad.signalId = 9;  // no such signal
  bad.signalAdd = 100;
  SendRequest(bad);
  TcpHeader good = bad;
  good.seq = 2;
  good.signalId = 1;
  good.signalAdd = 5;
  SendRequest(good);
  EXPECT_EQ(ReadAnswer().type, kTcpRefused);
  EXPECT_EQ(ReadAnswer().type, kTcpAck);
  EXPECT_EQ(map_.word, 5u);
}

TEST_P(TcpPeer, MalformedRequestsBreakTheConnection) {
  TcpHeader h = Put(5, 0, 8);  // out of sequence
  SendRequest(h, "xxxxxxxx");
  ASSERT_TRUE(Run([&] { return !backend_->lastError().empty(); }));
  EXPECT_NE(backend_->lastError().find("out of sequence"), std::string::npos) << backend_->lastError();
  EXPECT_EQ(memcmp(map_.window.data(), "\0\0\0\0\0\0\0\0", 8), 0);
}

TEST_P(TcpPeer, APeerThatOnlyTalksButNeverAnswersIsDeclaredLost) {
  // This rank puts to the peer; the peer never answers, but keeps sending requests of its
  // own (which this rank answers): those must not keep the put alive past the bound.
  PostSignal(77);
  uint64_t seq = 0;
  const bool lost = Run([&] {
    const TcpHeader chatter = Signal(++seq);
    send(requestsOfTheirs_.get(), &chatter, sizeof(chatter), MSG_DONTWAIT | MSG_NOSIGNAL);
    for (const auto& c : done_)
      if (c.cookie == 77) return true;
    return false;
  });
  ASSERT_TRUE(lost);
  EXPECT_TRUE(done_.back().peerLost);
  EXPECT_NE(done_.back().status.message().find("answered nothing"), std::string::npos) << done_.back().status.message();
}

// A request to an idle connection leaves from Post itself, not at the next Progress (a reply
// would otherwise wait for the rest of the proxy's pass).
TEST_P(TcpPeer, ARequestToAnIdleConnectionLeavesFromPost) {
  PostSignal(1);  // no Progress from here on
  TcpHeader h;
  ASSERT_EQ(recv(requestsOfMine_.get(), &h, sizeof(h), MSG_WAITALL), static_cast<ssize_t>(sizeof(h)));
  EXPECT_EQ(h.type, kTcpSignal);
  EXPECT_EQ(h.seq, 1u);
}

// The pass that applied a request a kernel may wait on (a signal, a put_value), whose socket
// it read empty, tells the proxy to give the kernel's reply a moment (Proxy::AwaitReply); one
// that applied only a plain put, or left bytes to read, does not, nor does the pass after.
TEST_P(TcpPeer, AReplyIsAwaitedOnlyWhereTheSocketsReadWereEmptied) {
  SendRequest(Signal(1));
  ASSERT_TRUE(Run([&] { return map_.word == 1; }));
  EXPECT_TRUE(backend_->AwaitsReply());
  backend_->Progress(map_, &done_);
  EXPECT_FALSE(backend_->AwaitsReply());
  TcpHeader value = TcpRequestHeader(kTcpPutValue, 2);
  value.window = kWindow;
  value.offset = 64;
  value.bytes = 8;
  value.value = 0x5555;
  SendRequest(value);
  ASSERT_TRUE(Run([&] { return map_.window[64] == 0x55; }));
  EXPECT_TRUE(backend_->AwaitsReply());
  backend_->Progress(map_, &done_);  // the pass the last one deferred its bookkeeping to
  SendRequest(Put(3, 128, 64), std::string(64, 'p'));
  ASSERT_TRUE(Run([&] { return map_.window[128 + 63] == 'p'; }));
  EXPECT_FALSE(backend_->AwaitsReply()) << "a plain put awaits no reply";

  // One chunk of 4 KiB to land a 64 KiB put in: the pass applies the signal before it, then
  // stops reading with the put's bytes still in the socket.
  TcpOptions o;
  o.chunkBytes = 4096;
  o.chunks = 1;
  ASSERT_NO_FATAL_FAILURE(Connect(o));
  map_.word = map_.sum = 0;
  SendRequest(Signal(1));
  SendRequest(Put(2, 0, 64 << 10), std::string(64 << 10, 'x'));
  ASSERT_TRUE(Run([&] { return map_.word == 1; }));
  EXPECT_FALSE(backend_->AwaitsReply());
  ASSERT_TRUE(Run([&] { return map_.window[(64 << 10) - 1] == 'x'; }));
}

// A ping-pong: the peer's request, then one of this rank's to the peer. The ack of the
// peer's request rides on this rank's request; no bare ACK follows.
TEST_P(TcpPeer, ARequestToThePeerCarriesItsAck) {
  PostSignal(1);  // this rank talks to the peer
  EXPECT_EQ(ReadRequest().seq, 1u);
  SendRequest(Signal(1));
  ASSERT_TRUE(Run([&] { return map_.word == 1; }));
  PostSignal(2);  // the reply
  const TcpHeader reply = ReadRequest();
  EXPECT_EQ(reply.seq, 2u);
  EXPECT_EQ(reply.flags, kTcpHasSignal | kTcpHasAck);
  EXPECT_EQ(reply.ackSeq, 1u);
  EXPECT_EQ(reply.ackAfter, 0u);
  EXPECT_FALSE(AnythingArrives(requestsOfTheirs_, 2000)) << "a bare ACK as well as the carried one";
}

// Acks do not ride behind payload: not on a put, nor on a request right behind one (its bytes
// may still fill the kernel's buffer); they go bare on the answers socket.
TEST_P(TcpPeer, NoAckRidesBehindPayload) {
  PostSignal(1);
  ReadRequest();
  SendAnswer(TcpAnswerHeader(kTcpAck, 1));  // answered: nothing of ours waits past the liveness bound
  SendRequest(Signal(1));
  ASSERT_TRUE(Run([&] { return map_.word == 1; }));
  PostPut(2, 64);
  PostSignal(3);
  std::string payload;
  const TcpHeader first = ReadHeader(requestsOfMine_, &payload);
  ASSERT_EQ(first.type, kTcpPut);
  const TcpHeader second = ReadRequest();
  EXPECT_EQ(first.flags & kTcpHasAck, 0);
  EXPECT_EQ(second.type, kTcpSignal);
  EXPECT_EQ(second.flags & kTcpHasAck, 0);
  SendAnswer(TcpAnswerHeader(kTcpAck, 3));
  const TcpHeader ack = ReadAnswer();  // after the fixture's delay
  EXPECT_EQ(ack.type, kTcpAck);
  EXPECT_EQ(ack.seq, 1u);
}

// Nothing to carry the ack within the delay: it goes bare. And a rank that has not talked to
// the peer acks at once (the fixture's delay would fail the test otherwise).
TEST_P(TcpPeer, WithoutARequestTheAckGoesBare) {
  SendRequest(Signal(1));
  const TcpHeader ack = ReadAnswer();
  EXPECT_EQ(ack.type, kTcpAck);
  EXPECT_EQ(ack.seq, 1u);
  TcpOptions o;
  o.ackDelayUs = 1000;
  ASSERT_NO_FATAL_FAILURE(Connect(o));
  PostSignal(1);
  ReadRequest();
  // Timed from before the request leaves: a test thread the OS holds after its send, while the
  // backend waits out the delay, must not read the ack as early.
  const auto start = std::chrono::steady_clock::now();
  SendRequest(Signal(1));
  const TcpHeader held = ReadAnswer();
  EXPECT_EQ(held.type, kTcpAck);
  EXPECT_EQ(held.seq, 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::microseconds(1000)) << "the ack was not held";
}

TEST_P(TcpPeer, AnAckTheTargetCarriesCompletesOurRequest) {
  PostSignal(7);
  ReadRequest();
  SendRequest(SignalCarryingAck(1, 1));
  ASSERT_TRUE(Run([&] { return Completion(7) != nullptr; }));
  EXPECT_TRUE(Completion(7)->status.ok()) << Completion(7)->status.message();
  EXPECT_EQ(map_.word, 1u);
}

// The peer refused request 1 and acked 2 on its own request: the refusal, on the other
// connection, may arrive later, and request 1 must not complete as applied meanwhile.
TEST_P(TcpPeer, ACarriedAckWaitsForTheAnswersBeforeIt) {
  PostSignal(1);
  PostSignal(2);
  ReadRequest();
  ReadRequest();
  SendRequest(SignalCarryingAck(1, 2, 1));
  ASSERT_TRUE(Run([&] { return map_.word == 1; }));
  for (int i = 0; i < 2000; ++i) backend_->Progress(map_, &done_);
  EXPECT_TRUE(done_.empty()) << "completed before the refusal arrived";
  TcpHeader refused = TcpAnswerHeader(kTcpRefused, 1);
  refused.value = kRefusedSignal;
  SendAnswer(refused);
  ASSERT_TRUE(Run([&] { return done_.size() == 2; }));
  EXPECT_FALSE(done_[0].status.ok());
  EXPECT_NE(done_[0].status.message().find("refused"), std::string::npos) << done_[0].status.message();
  EXPECT_TRUE(done_[1].status.ok()) << done_[1].status.message();
}

// Acks carried on the other connection may arrive after a later answer: an answer to request
// s acknowledges the earlier ones still open.
TEST_P(TcpPeer, AnAnswerAcknowledgesTheRequestsBeforeIt) {
  PostSignal(1);
  PostGet(2, 0);
  ReadRequest();
  ReadRequest();
  SendAnswer(TcpAnswerHeader(kTcpGetData, 2));
  ASSERT_TRUE(Run([&] { return done_.size() == 2; }));
  EXPECT_TRUE(done_[0].status.ok() && done_[1].status.ok());
}

TEST_P(TcpPeer, ACarriedAckOfAGetWithoutItsDataBreaksTheConnection) {
  PostGet(3, 8);
  ReadRequest();
  SendRequest(SignalCarryingAck(1, 1));
  ASSERT_TRUE(Run([&] { return Completion(3) != nullptr; }));
  EXPECT_TRUE(Completion(3)->peerLost);
  EXPECT_NE(backend_->lastError().find("without its data"), std::string::npos) << backend_->lastError();
}

TEST_P(TcpPeer, ACarriedAckOfRequestsNeverSentBreaksTheConnection) {
  SendRequest(SignalCarryingAck(1, 1));  // this rank sent nothing
  ASSERT_TRUE(Run([&] { return !backend_->lastError().empty(); }));
  EXPECT_NE(backend_->lastError().find("never sent"), std::string::npos) << backend_->lastError();
  EXPECT_EQ(map_.word, 0u);
}

// A peer's kTcpFailed notice (net/tcp_wire.h) names the rank it blames. It comes from an
// authenticated peer, which may still lie: it changes nothing but what the loss of that peer
// reports (the proxy takes the rank only within the world), and out of bounds it breaks the
// connection.
TcpHeader Notice(uint64_t blamed) {
  TcpHeader h = TcpAnswerHeader(kTcpFailed, 0);
  h.value = blamed;
  return h;
}
std::vector<NetLoss> LostPeers(TcpBackend& b) {
  std::vector<NetLoss> lost;
  b.TakeLostPeers(&lost);
  return lost;
}
// Their ends of both connections, closed with a reset (as a process that exits with bytes
// unread): this rank's next send fails.
void Reset(Fd* fd) {
  linger l{1, 0};
  setsockopt(fd->get(), SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  fd->Reset();
}

TEST_P(TcpPeer, AFailureNoticeChangesNothingButWhatThePeersLossSays) {
  SendAnswer(Notice(999999));  // no such rank: the proxy will not take it
  SendRequest(Signal(1));
  EXPECT_EQ(ReadAnswer().type, kTcpAck);  // the connection lives on
  EXPECT_EQ(map_.word, 1u);
  EXPECT_TRUE(backend_->lastError().empty()) << backend_->lastError();
  EXPECT_TRUE(LostPeers(*backend_).empty());
  requestsOfMine_.Reset();
  requestsOfTheirs_.Reset();
  ASSERT_TRUE(Run([&] { return !backend_->lastError().empty(); }));
  const std::vector<NetLoss> lost = LostPeers(*backend_);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].peer, 1);
  EXPECT_EQ(lost[0].blamedByPeer, 999999);
}

TEST_P(TcpPeer, ANoticeOutOfBoundsBreaksTheConnection) {
  for (const TcpHeader& bad : {Notice(uint64_t{1} << 31), [] {
                                 TcpHeader h = Notice(2);
                                 h.seq = 1;  // a notice answers no request
                                 return h;
                               }()}) {
    ASSERT_NO_FATAL_FAILURE(Connect(TcpOptions{}));
    SendAnswer(bad);
    ASSERT_TRUE(Run([&] { return !backend_->lastError().empty(); }));
    EXPECT_NE(backend_->lastError().find("a bad notice"), std::string::npos) << backend_->lastError();
    const std::vector<NetLoss> lost = LostPeers(*backend_);
    ASSERT_EQ(lost.size(), 1u);
    EXPECT_EQ(lost[0].blamedByPeer, -1);  // what it said is not taken
  }
}

// The end shows first where this rank writes (a post to the peer fails on the reset), on a
// connection an earlier pass read empty: the notice waiting there is still read.
TEST_P(TcpPeer, ANoticeBeforeTheEndIsReadWhenASendShowsTheEnd) {
  for (int i = 0; i < 4; ++i) backend_->Progress(map_, &done_);  // both sockets read empty
  SendAnswer(Notice(2));
  Reset(&requestsOfMine_);
  Reset(&requestsOfTheirs_);
  PostPut(5, 8);  // written at once: the connection is idle
  ASSERT_TRUE(Run([&] { return Completion(5) != nullptr; }));
  EXPECT_TRUE(Completion(5)->peerLost);
  const std::vector<NetLoss> lost = LostPeers(*backend_);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].blamedByPeer, 2) << lost[0].why.message();
}

INSTANTIATE_TEST_SUITE_P(Polling, TcpPeer, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "EverySocket" : "Epoll"; });

}  // namespace
}  // namespace cco
