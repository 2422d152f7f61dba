// SPDX-License-Identifier: MIT
// What a round trip over loopback TCP costs with each way a receiver can wait for bytes, and
// what the calls a spinning proxy makes cost when they find nothing: the floor under the tcp
// backend's round trip (net/tcp_backend.cc), measured on the machine that runs it.
//
//   socket_poll_probe [ROUNDS]
//
// Two threads, one socket pair over 127.0.0.1 (TCP_NODELAY), 8-byte ping-pongs. Modes:
//   blocking     recv blocks (the bare anchor of `cco perf --suites tcp`)
//   spin-recv    recv(MSG_DONTWAIT) again and again until bytes come
//   spin-epoll   epoll_wait(timeout 0) again and again, then recv (the backend's way)
//   spin-epoll+1 the same with one more idle socket read per pass (a peer's other connection)
// and with a connection per direction (the tcp backend's requests: one connection per ordered
// pair), with TCP_QUICKACK cleared after each read or not.
// Prints one line per mode: the median of 9 blocks' mean round trip, us.
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void Die(const char* what) {
  fprintf(stderr, "socket_poll_probe: %s: %s\n", what, strerror(errno));
  exit(1);
}

// A connected pair over loopback: fds[0] connects, fds[1] accepted.
void Pair(int fds[2]) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    Die("listen");
  fds[0] = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fds[0], reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Die("connect");
  fds[1] = accept(listener, nullptr, nullptr);
  if (fds[1] < 0) Die("accept");
  close(listener);
  int one = 1;
  for (int i = 0; i < 2; ++i) setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

enum class Wait { kBlocking, kSpinRecv, kSpinEpoll };

struct Mode {
  const char* name;
  Wait wait;
  bool idleSocket;    // one more idle socket read per spin (a peer's other connection)
  bool perDirection;  // a connection per direction, as the tcp backend's requests go: no reply
                      // carries the TCP ack of the bytes it answers
  bool quickAckOff;   // TCP_QUICKACK cleared after each read (it does not stick)
};

struct Waiter {
  const Mode* mode;
  int in, out;  // read from, write to
  int idle;     // a socket with nothing to read
  int epoll;    // watches `in`

  void Receive(uint64_t* word) {
    char* p = reinterpret_cast<char*>(word);
    size_t got = 0;
    while (got < 8) {
      if (mode->wait == Wait::kSpinEpoll) {
        epoll_event e;
        while (epoll_wait(epoll, &e, 1, 0) == 0) {
          if (mode->idleSocket) {
            char c;
            (void)!recv(idle, &c, 1, MSG_DONTWAIT);
          }
        }
      }
      const ssize_t n = recv(in, p + got, 8 - got, mode->wait == Wait::kBlocking ? 0 : MSG_DONTWAIT);
      if (n > 0) got += static_cast<size_t>(n);
      else if (n == 0 || (errno != EAGAIN && errno != EINTR)) Die("recv");
    }
    if (mode->quickAckOff) {
      int zero = 0;
      setsockopt(in, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
    }
  }
  void Send(uint64_t word) {
    if (send(out, &word, 8, MSG_NOSIGNAL | MSG_DONTWAIT) != 8) Die("send");
  }
};

Waiter MakeWaiter(const Mode& mode, int in, int out, int idle) {
  Waiter w{&mode, in, out, idle, -1};
  if (mode.wait == Wait::kSpinEpoll) {
    w.epoll = epoll_create1(0);
    epoll_event e{};
    e.events = EPOLLIN;
    if (epoll_ctl(w.epoll, EPOLL_CTL_ADD, in, &e) != 0) Die("epoll_ctl");
  }
  return w;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double PingPong(const Mode& mode, int rounds) {
  int data[2], back[2], idle[2];  // back: the replies' connection where they have their own
  Pair(data);
  Pair(back);
  Pair(idle);
  Waiter a = MakeWaiter(mode, mode.perDirection ? back[0] : data[0], data[0], idle[0]);
  Waiter b = MakeWaiter(mode, data[1], mode.perDirection ? back[1] : data[1], idle[1]);
  constexpr int kBlocks = 9;
  std::vector<double> blocks;
  std::thread answerer([&] {
    uint64_t w = 0;
    for (int i = 0; i < rounds * (kBlocks + 1); ++i) b.Receive(&w), b.Send(w + 1);
  });
  uint64_t w = 0;
  for (int block = 0; block <= kBlocks; ++block) {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < rounds; ++i) a.Send(w), a.Receive(&w);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / rounds;
    if (block > 0) blocks.push_back(us);  // the first warms up
  }
  answerer.join();
  for (int fd : {data[0], data[1], back[0], back[1], idle[0], idle[1], a.epoll, b.epoll})
    if (fd >= 0) close(fd);
  return Median(blocks);
}

// What one call costs when it finds nothing, us.
template <typename Call> double IdleCall(Call call, int count) {
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < count; ++i) call();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / count;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(10, atoi(argv[1])) : 2000;
  int idle[2];
  Pair(idle);
  const int ep = epoll_create1(0);
  epoll_event e{};
  e.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, idle[0], &e);
  char c;
  printf("idle epoll_wait(0): %.3f us\n", IdleCall(
                                              [&] {
                                                epoll_event out;
                                                (void)epoll_wait(ep, &out, 1, 0);
                                              },
                                              200000));
  printf("idle recv(MSG_DONTWAIT): %.3f us\n", IdleCall([&] { (void)!recv(idle[0], &c, 1, MSG_DONTWAIT); }, 200000));
  printf("getppid (a bare syscall): %.3f us\n", IdleCall([] { (void)getppid(); }, 200000));
  printf("steady_clock::now: %.3f us\n", IdleCall([] { (void)Clock::now(); }, 200000));
  const Mode modes[] = {
      {"blocking", Wait::kBlocking, false, false, false},
      {"spin-recv", Wait::kSpinRecv, false, false, false},
      {"spin-epoll", Wait::kSpinEpoll, false, false, false},
      {"spin-epoll+1", Wait::kSpinEpoll, true, false, false},
      {"spin-epoll, a connection per direction", Wait::kSpinEpoll, false, true, false},
      {"spin-epoll, a connection per direction, quickack off", Wait::kSpinEpoll, false, true, true},
      {"blocking, a connection per direction", Wait::kBlocking, false, true, false},
  };
  for (int pass = 0; pass < 2; ++pass)
    for (const Mode& m : modes) printf("round trip, %-52s %.2f us\n", m.name, PingPong(m, rounds));
  return 0;
}
