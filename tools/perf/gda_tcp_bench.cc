// SPDX-License-Identifier: MIT
// The tcp backend's benchmark, with its anchors measured by the same two processes between
// the same endpoints (tools/perf/tcp_bench.py runs it, in two network namespaces or on
// loopback, on the cpu platform):
//
//   bare    8-byte TCP ping-pong round trip, and a TCP stream's bandwidth per size (one
//           blocking socket, TCP_NODELAY): the floor of any protocol on this path
//   gda     put+signal round trip (8 B) and signal-only round trip through both proxies, and
//           put bandwidth per size (`reps` puts back to back, then a flush: remote completion)
//
// Round trips are timed in blocks, the kinds taking turns (bare, put+signal, signal, bare,
// ...), and each figure is the median of its blocks' means (with the fastest and slowest
// block beside it): a shared machine's noise (the bare anchor moves by microseconds between
// runs) then weighs on the anchor and the figure alike.
//
//   gda_tcp_bench RANK ID_FILE PEER_ADDRESS SUITES MAX_BYTES [ROUNDS]
//
// Rank 0 mints the unique id into ID_FILE; the bare anchors use a socket of their own that
// rank 0 opens on PEER_ADDRESS's side (rank 1 listens on PEER_ADDRESS:ID_FILE's port + 1).
// Rank 0 prints one JSON object per figure on stdout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "tools/perf/id_file.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBarePort = 29731;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

void Die(const char* what) {
  fprintf(stderr, "gda_tcp_bench: %s (%s; last error: %s)\n", what, strerror(errno), ccoGetLastError());
  exit(1);
}

void Figure(const char* suite, const char* what, uint64_t bytes, double value, const char* unit) {
  printf("{\"suite\": \"%s\", \"what\": \"%s\", \"bytes\": %llu, \"value\": %.4f, \"unit\": \"%s\"}\n", suite, what,
         static_cast<unsigned long long>(bytes), value, unit);
  fflush(stdout);
}

// A figure timed in blocks: the median block, and the fastest and slowest beside it.
void Figure(const char* suite, const char* what, uint64_t bytes, std::vector<double> blocks, const char* unit) {
  std::sort(blocks.begin(), blocks.end());
  printf(
      "{\"suite\": \"%s\", \"what\": \"%s\", \"bytes\": %llu, \"value\": %.4f, \"min\": %.4f, \"max\": %.4f, "
      "\"unit\": \"%s\"}\n",
      suite, what, static_cast<unsigned long long>(bytes), blocks[blocks.size() / 2], blocks.front(), blocks.back(),
      unit);
  fflush(stdout);
}

void All(int fd, void* p, size_t n, bool send) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t k = send ? ::send(fd, c, n, MSG_NOSIGNAL) : recv(fd, c, n, 0);
    if (k <= 0) Die(send ? "bare send" : "bare recv");
    c += k;
    n -= static_cast<size_t>(k);
  }
}

// The bare anchors: rank 1 listens, rank 0 connects.
int BareSocket(int rank, const char* peerAddress) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(kBarePort);
  if (inet_pton(AF_INET, peerAddress, &a.sin_addr) != 1) Die("peer address");
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  if (rank == 1) {
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 1) != 0) Die("bare listen");
    const int c = accept(fd, nullptr, nullptr);
    close(fd);
    fd = c;
  } else {
    for (int i = 0; connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0; ++i) {
      if (i > 500) Die("bare connect");
      close(fd);
      fd = socket(AF_INET, SOCK_STREAM, 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

std::vector<uint64_t> Sizes(uint64_t maxBytes) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = 4096; s <= maxBytes; s *= 4) sizes.push_back(s);
  return sizes;
}

int Reps(uint64_t size) {
  return static_cast<int>(std::max<uint64_t>(4, std::min<uint64_t>(2000, (256ull << 20) / size)));
}

constexpr int kBlocks = 15;  // and one more first, to warm up

// One block of bare ping-pongs: its mean round trip in us.
double BarePingPong(int fd, int rank, int rounds) {
  uint64_t word = 0;
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < rounds; ++i) {
    if (rank == 0) All(fd, &word, 8, true), All(fd, &word, 8, false);
    else All(fd, &word, 8, false), All(fd, &word, 8, true);
  }
  return Seconds(t0) / rounds * 1e6;
}

void BareStream(int fd, int rank, uint64_t maxBytes) {
  uint64_t word = 0;
  std::vector<char> buffer(maxBytes);
  for (uint64_t size : Sizes(maxBytes)) {
    const int reps = Reps(size);
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < reps; ++i) All(fd, buffer.data(), size, rank == 0);
    All(fd, &word, 1, rank == 1);  // the receiver has it all
    if (rank == 0) Figure("bare", "tcp stream", size, static_cast<double>(size) * reps / Seconds(t0) / 1e9, "GB/s");
  }
}

// One block of GDA round trips (a put of 8 bytes with a signal, or the signal alone, and the
// answer): its mean in us.
double GdaPingPong(ccoGda<>& gda, ccoWindow_t win, uint64_t maxBytes, int rank, bool signalOnly, int rounds) {
  const int peer = 1 - rank;
  auto send = [&] {
    return signalOnly ? gda.signal(peer, 0) : gda.put(peer, win, maxBytes, win, 0, 8, CCO_SIGNAL_INC, 0);
  };
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < rounds; ++i) {
    if (rank == 0 && send() != CCO_DEVICE_STATUS_OK) Die("send");
    if (gda.wait_signal(0, 1) != CCO_DEVICE_STATUS_OK) Die("wait");
    if (rank == 1 && send() != CCO_DEVICE_STATUS_OK) Die("answer");
  }
  return Seconds(t0) / rounds * 1e6;
}

// The round trips, block by block, the kinds taking turns: rank 0 prints their medians.
void RoundTrips(ccoGda<>* gda, ccoWindow_t win, int bareFd, int rank, uint64_t maxBytes, int rounds) {
  const int perBlock = std::max(1, rounds / kBlocks);
  std::vector<double> bare, putSignal, signal;
  for (int b = 0; b <= kBlocks; ++b) {
    if (bareFd >= 0) bare.push_back(BarePingPong(bareFd, rank, perBlock));
    if (gda == nullptr) continue;
    putSignal.push_back(GdaPingPong(*gda, win, maxBytes, rank, false, perBlock));
    signal.push_back(GdaPingPong(*gda, win, maxBytes, rank, true, perBlock));
  }
  if (rank != 0) return;
  if (bareFd >= 0) Figure("bare", "tcp pingpong 8B", 8, {bare.begin() + 1, bare.end()}, "us/rt");
  if (gda == nullptr) return;
  Figure("gda", "put+signal round trip 8B", 8, {putSignal.begin() + 1, putSignal.end()}, "us/rt");
  Figure("gda", "signal round trip", 0, {signal.begin() + 1, signal.end()}, "us/rt");
}

// Rank 0 puts back to back, then flushes (every byte is at rank 1).
void GdaBandwidth(ccoComm* comm, ccoGda<>& gda, ccoWindow_t win, int rank, uint64_t maxBytes) {
  for (uint64_t size : Sizes(maxBytes)) {
    const int reps = Reps(size);
    if (ccoBarrierAll(comm) != ccoSuccess) Die("barrier");
    const Clock::time_point t0 = Clock::now();
    if (rank == 0) {
      for (int i = 0; i < reps; ++i)
        if (gda.put(1, win, maxBytes, win, 0, size) != CCO_DEVICE_STATUS_OK) Die("put");
      if (gda.flush() != CCO_DEVICE_STATUS_OK) Die("flush");
      Figure("gda", "put bandwidth", size, static_cast<double>(size) * reps / Seconds(t0) / 1e9, "GB/s");
    }
  }
  if (ccoBarrierAll(comm) != ccoSuccess) Die("barrier");
}

// comm null: the bare anchors alone; bareFd < 0: GDA alone.
void Run(ccoComm* comm, int bareFd, int rank, uint64_t maxBytes, int rounds) {
  if (comm == nullptr) {
    RoundTrips(nullptr, 0, bareFd, rank, maxBytes, rounds);
    BareStream(bareFd, rank, maxBytes);
    return;
  }
  void* mem = nullptr;
  ccoWindow_t win = 0;
  if (ccoWindowAllocRegister(comm, 2 * maxBytes, &mem, &win) != ccoSuccess) Die("window");
  memset(mem, 1, 2 * maxBytes);
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
  reqs.gdaContextCount = 1;
  ccoDevComm dc;
  if (ccoDevCommCreate(comm, &reqs, &dc) != ccoSuccess) Die("devcomm");
  {
    ccoGda<> gda(dc, 0, 60'000'000'000ull);
    if (ccoBarrierAll(comm) != ccoSuccess) Die("barrier");
    RoundTrips(&gda, win, bareFd, rank, maxBytes, rounds);
    if (gda.flush() != CCO_DEVICE_STATUS_OK) Die("flush");
    GdaBandwidth(comm, gda, win, rank, maxBytes);
  }
  if (ccoDevCommDestroy(comm, &dc) != ccoSuccess) Die("devcomm destroy");
  ccoWindowDeregister(comm, win);
  if (bareFd >= 0) BareStream(bareFd, rank, maxBytes);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: %s RANK ID_FILE PEER_ADDRESS bare,gda MAX_BYTES [ROUNDS]\n", argv[0]);
    return 2;
  }
  const int rank = atoi(argv[1]);
  const std::string suites = argv[4];
  const uint64_t maxBytes = strtoull(argv[5], nullptr, 10);
  const int rounds = argc == 7 ? std::max(10, atoi(argv[6])) : 2000;
  const int bareFd = suites.find("bare") != std::string::npos ? BareSocket(rank, argv[3]) : -1;
  ccoComm* comm = nullptr;
  if (suites.find("gda") != std::string::npos) {
    ccoUniqueId id;
    if (!cco_test::ShareId(argv[2], rank, &id)) Die("unique id");
    if (ccoCommCreate(id, 2, rank, 4 * maxBytes + (64 << 20), &comm) != ccoSuccess) Die("ccoCommCreate");
  }
  if (comm != nullptr || bareFd >= 0) Run(comm, bareFd, rank, maxBytes, rounds);
  if (comm != nullptr) ccoCommDestroy(comm);
  if (bareFd >= 0) close(bareFd);
  return 0;
}
