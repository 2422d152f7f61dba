// SPDX-License-Identifier: MIT
// Hostile peers against real jobs (ranks as processes, cpu platform, loopback only): while
// a job is being created, an attacker process finds every socket rank 0 listens on (the
// rendezvous root, the hub, the descriptor mesh) through /proc and attacks it as a process
// of another user, or of the same user without the unique id: strangers answering the
// challenge with garbage, truncated and replayed proofs, silent clients, floods, and
// squatters on the mesh's names. Each time the job must complete with exact data, promptly,
// the attacker must get nothing (no descriptor, nothing beyond the public challenge), and no
// rank may leak a descriptor. Ranks killed at each step of the job leave the others with a
// bounded error that names them.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cco/cco.h"
#include "tests/host/testing/multiprocess.h"

namespace {

using cco_test::RunRanksRaw;
using Clock = std::chrono::steady_clock;

constexpr int kTimeoutMs = 8000;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int CountFds() {
  DIR* d = opendir("/proc/self/fd");
  int n = 0;
  for (dirent* e; (e = readdir(d)) != nullptr;) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// --- what a process listens on, read from /proc -----------------------------------------

struct Listeners {
  std::vector<sockaddr_in> tcp;
  std::vector<std::string> unixNames;  // abstract names, without the leading '@'
};

std::set<unsigned long> SocketInodes(pid_t pid) {
  std::set<unsigned long> inodes;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return inodes;
  for (dirent* e; (e = readdir(d)) != nullptr;) {
    char target[128] = {};
    if (readlink((dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1) <= 0) continue;
    unsigned long inode = 0;
    if (sscanf(target, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
  }
  closedir(d);
  return inodes;
}

Listeners ListeningSockets(pid_t pid) {
  Listeners out;
  const std::set<unsigned long> inodes = SocketInodes(pid);
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // header
  while (std::getline(tcp, line)) {
    unsigned int ip = 0, port = 0, state = 0;
    unsigned long inode = 0;
    char rest[512];
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    if (sscanf(line.c_str(), " %*d: %x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %lu %511[^\n]", &ip, &port, &state,
               &inode, rest) < 4)
      continue;
    if (state != 0x0A || inodes.count(inode) == 0) continue;  // LISTEN, and this process's
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = ip;  // /proc prints the address in host order of the raw bytes
    out.tcp.push_back(a);
  }
  std::ifstream unx("/proc/net/unix");
  std::getline(unx, line);
  while (std::getline(unx, line)) {
    unsigned long flags = 0, inode = 0;
    char path[256] = {};
    if (sscanf(line.c_str(), "%*s %*x %*x %lx %*x %*x %lu %255s", &flags, &inode, path) < 2) continue;
    if (!(flags & 0x10000) || inodes.count(inode) == 0 || path[0] != '@') continue;  // __SO_ACCEPTCON
    out.unixNames.push_back(path + 1);
  }
  return out;
}

// --- the attacker -----------------------------------------------------------------------

enum Attack { kStrangers, kSilent, kFlood, kSquatters };

struct Findings {
  int connections = 0;   // connections the attacker made
  int extraBytes = 0;    // bytes beyond the public challenge / rejection it received
  int descriptors = 0;   // descriptors it received: must stay 0
  int squatterHits = 0;  // ranks that connected to a name the attacker bound
};

int ConnectTo(const sockaddr* a, socklen_t len, int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{0, 300000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, a, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int ConnectUnixName(const std::string& name) {
  sockaddr_un a = {};
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path + 1, name.data(), std::min(name.size(), sizeof(a.sun_path) - 2));
  return ConnectTo(reinterpret_cast<sockaddr*>(&a), offsetof(sockaddr_un, sun_path) + 1 + name.size(), AF_UNIX);
}

// Reads what the server says, counting descriptors and bytes past `allowed`.
void Drain(int fd, size_t allowed, Findings* f) {
  size_t total = 0;
  for (int i = 0; i < 8; ++i) {
    char buf[512];
    char control[CMSG_SPACE(8 * sizeof(int))];
    iovec iov = {buf, sizeof(buf)};
    msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n <= 0) break;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_type == SCM_RIGHTS) ++f->descriptors;
    total += static_cast<size_t>(n);
  }
  if (total > allowed) f->extraBytes += static_cast<int>(total - allowed);
}

// One stranger at one listener: takes the challenge, answers it with garbage of several
// kinds (a forged proof, a truncated one, a replay of an earlier answer, a fake frame).
void Stranger(const sockaddr* a, socklen_t len, int family, int kind, Findings* f) {
  int fd = ConnectTo(a, len, family);
  if (fd < 0) return;
  ++f->connections;
  char challenge[40];
  ssize_t got = recv(fd, challenge, sizeof(challenge), MSG_WAITALL);
  std::string answer;
  switch (kind % 4) {
    case 0: answer.assign(72, 'F'); break;  // forged proof
    case 1: answer.assign(36, 'T'); break;  // truncated proof
    case 2:
      answer.assign(challenge, got > 0 ? got : 0);
      answer.resize(72, 'R');
      break;  // reflected challenge
    default: answer = std::string("CCCB") + std::string(8, '\x7f') + std::string(64, 'D'); break;  // a fake frame
  }
  send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
  Drain(fd, 32, f);  // at most the rejection
  close(fd);
}

// Runs in its own process until killed: attacks rank 0's listeners, and releases the
// other ranks (one byte each on `go`) once the attack is under way. Reports its findings
// through `report` every round.
[[noreturn]] void Attacker(pid_t rank0, Attack attack, bool otherUser, int go, int report, int nOthers) {
  Listeners l;
  const auto until = Clock::now() + std::chrono::seconds(10);
  // Rank 0 listens on the root, then the hub, with its mesh listener open meanwhile.
  while ((l = ListeningSockets(rank0), l.tcp.size() < 2 || l.unixNames.empty()) && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (l.tcp.size() < 2 || l.unixNames.empty()) _exit(4);
  // Found as this user (another user may not read rank 0's /proc entries); attacked as the other.
  if (otherUser) {
    setgroups(0, nullptr);
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
  }
  Findings f;
  std::vector<int> held;
  std::vector<int> squatters;
  for (int round = 0;; ++round) {
    for (size_t i = 0; i < l.tcp.size(); ++i) {
      const sockaddr* a = reinterpret_cast<const sockaddr*>(&l.tcp[i]);
      if (attack == kStrangers) Stranger(a, sizeof(sockaddr_in), AF_INET, round + static_cast<int>(i), &f);
      if ((attack == kSilent && round == 0) || (attack == kFlood && held.size() < 600)) {
        int fd = ConnectTo(a, sizeof(sockaddr_in), AF_INET);
        if (fd >= 0) {
          ++f.connections;
          send(fd, "x", 1, MSG_NOSIGNAL);  // one byte, then silence
          held.push_back(fd);
        }
      }
    }
    for (const std::string& name : l.unixNames) {
      if (attack == kStrangers) {
        sockaddr_un a = {};
        a.sun_family = AF_UNIX;
        memcpy(a.sun_path + 1, name.data(), name.size());
        Stranger(reinterpret_cast<sockaddr*>(&a), offsetof(sockaddr_un, sun_path) + 1 + name.size(), AF_UNIX, round,
                 &f);
      } else if (attack == kSilent && round == 0) {
        int fd = ConnectUnixName(name);
        if (fd >= 0) {
          ++f.connections;
          held.push_back(fd);
        }
      } else if (attack == kSquatters) {
        // Bind every mesh name seen, and a crowd of plausible ones: nobody may come.
        for (int k = 0; k < (round == 0 ? 50 : 1); ++k) {
          int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
          sockaddr_un a = {};
          a.sun_family = AF_UNIX;
          const std::string n = k == 0 ? name : name.substr(0, 9) + std::to_string(getpid()) + "-" + std::to_string(k);
          memcpy(a.sun_path + 1, n.data(), std::min(n.size(), sizeof(a.sun_path) - 2));
          if (bind(s, reinterpret_cast<sockaddr*>(&a), offsetof(sockaddr_un, sun_path) + 1 + n.size()) == 0 &&
              listen(s, 8) == 0)
            squatters.push_back(s);
          else close(s);
        }
      }
    }
    for (int s : squatters) {
      int c = accept(s, nullptr, nullptr);
      if (c >= 0) {
        ++f.squatterHits;
        close(c);
      }
    }
    for (int fd : held) Drain(fd, 40, &f);  // whatever the servers sent the held ones
    if (round == 0)
      for (int i = 0; i < nOthers; ++i) (void)!write(go, "g", 1);
    (void)!write(report, &f, sizeof(f));
    Listeners now = ListeningSockets(rank0);
    if (!now.tcp.empty()) l = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(attack == kFlood ? 1 : 10));
  }
}

// --- the job ----------------------------------------------------------------------------

// Creation, a window whose peers' copies are written and checked, a device communicator,
// teardown; with the descriptors of the process counted before and after.
int Job(int rank, int n, const ccoUniqueId& id, int go, double* createSeconds) {
  if (rank != 0) {
    pollfd p = {go, POLLIN, 0};
    if (poll(&p, 1, 15000) != 1) return 70;  // the attacker never got going
    char b;
    if (read(go, &b, 1) != 1) return 71;
  }
  const int fdsBefore = CountFds();
  const auto start = Clock::now();
  ccoComm* comm = nullptr;
  RANK_OK(ccoCommCreate(id, n, rank, 16 << 20, &comm));
  *createSeconds = SecondsSince(start);
  void* mem = nullptr;
  ccoWindow_t win = 0;
  RANK_OK(ccoWindowAllocRegister(comm, 1 << 16, &mem, &win));
  void* right = nullptr;
  RANK_OK(ccoGetPeerPtr(comm, win, (rank + 1) % n, 0, &right));
  *static_cast<volatile int*>(right) = 1000 + rank;
  RANK_OK(ccoBarrierAll(comm));
  RANK_CHECK(*static_cast<volatile int*>(mem) == 1000 + (rank + n - 1) % n);
  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
  reqs.lsaBarrierCount = 2;
  ccoDevComm dc;
  RANK_OK(ccoDevCommCreate(comm, &reqs, &dc));
  RANK_OK(ccoDevCommDestroy(comm, &dc));
  RANK_OK(ccoWindowDeregister(comm, win));
  RANK_OK(ccoCommDestroy(comm));
  // Rank 0 had the rendezvous root's listener open before (it minted the id), and the eventfd
  // of the process's rendezvous watch that waited on it: both are gone now.
  RANK_CHECK(rank == 0 ? CountFds() == fdsBefore - 2 : CountFds() == fdsBefore);
  return 0;
}

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
    setenv("CCO_SOCKET_IFNAME", "=lo", 1);
  }

  // Runs a 3-rank job under `attack`; returns what the attacker found.
  Findings UnderAttack(Attack attack, bool otherUser) {
    constexpr int kRanks = 3;
    int goPipe[2], reportPipe[2], pidPipe[2];
    EXPECT_EQ(pipe(goPipe), 0);
    EXPECT_EQ(pipe2(reportPipe, O_NONBLOCK), 0);
    EXPECT_EQ(pipe(pidPipe), 0);
    // The attacker learns rank 0's pid from rank 0 itself.
    pid_t attacker = fork();
    if (attacker == 0) {
      cco_test::StacksOfTheirOwn();
      pid_t rank0 = 0;
      if (read(pidPipe[0], &rank0, sizeof(rank0)) != sizeof(rank0)) _exit(5);
      Attacker(rank0, attack, otherUser, goPipe[1], reportPipe[1], kRanks - 1);
    }
    close(reportPipe[1]);
    const auto start = Clock::now();
    std::vector<int> st = RunRanksRaw(
        kRanks,
        [&](int rank, int n, const ccoUniqueId& id) {
          if (rank == 0) {
            const pid_t me = getpid();
            (void)!write(pidPipe[1], &me, sizeof(me));
          }
          double createSeconds = 0;
          int rc = Job(rank, n, id, goPipe[0], &createSeconds);
          if (rc == 0 && createSeconds > 4.0) {
            fprintf(stderr, "rank %d: ccoCommCreate took %.2f s under attack\n", rank, createSeconds);
            return 80;
          }
          return rc;
        },
        40);
    const double seconds = SecondsSince(start);
    kill(attacker, SIGKILL);
    int attackerStatus = 0;
    waitpid(attacker, &attackerStatus, 0);
    Findings f, last;
    while (read(reportPipe[0], &last, sizeof(last)) == sizeof(last)) f = last;
    for (int fd : {goPipe[0], goPipe[1], reportPipe[0], pidPipe[0], pidPipe[1]}) close(fd);
    EXPECT_EQ(st, (std::vector<int>{0, 0, 0})) << "the job failed under attack";
    EXPECT_TRUE(WIFSIGNALED(attackerStatus))
        << "the attacker gave up early (exit " << WEXITSTATUS(attackerStatus) << ")";
    EXPECT_LT(seconds, 15.0);
    EXPECT_GT(f.connections + f.squatterHits + (attack == kSquatters ? 1 : 0), 0) << "the attack never connected";
    EXPECT_EQ(f.descriptors, 0) << "the attacker received memory descriptors";
    EXPECT_EQ(f.extraBytes, 0) << "the attacker received more than the public challenge";
    EXPECT_EQ(f.squatterHits, 0) << "a rank connected to a squatter";
    return f;
  }
};

TEST_F(HostileTest, StrangersOfTheSameUserWithoutTheId) { UnderAttack(kStrangers, false); }

// Whether a child of this process can become user 65534 (root, outside a user namespace
// that maps no other user).
bool CanBecomeAnotherUser() {
  if (geteuid() != 0) return false;
  pid_t child = fork();
  if (child == 0) _exit(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0 ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_F(HostileTest, StrangersOfAnotherUser) {
  if (!CanBecomeAnotherUser()) GTEST_SKIP() << "needs root (outside a user namespace) to become another user";
  UnderAttack(kStrangers, true);
}

TEST_F(HostileTest, SilentClientsOnEveryListener) { UnderAttack(kSilent, false); }

TEST_F(HostileTest, SilentClientsOfAnotherUser) {
  if (!CanBecomeAnotherUser()) GTEST_SKIP() << "needs root (outside a user namespace) to become another user";
  UnderAttack(kSilent, true);
}

TEST_F(HostileTest, AFloodOfConnections) { UnderAttack(kFlood, false); }

TEST_F(HostileTest, SquattersOnTheMeshNames) { UnderAttack(kSquatters, false); }

// --- ranks killed at each step ----------------------------------------------------------

enum Step { kInCreate, kAfterCreate, kInRegister, kInDevComm };

class KilledRankTest : public ::testing::TestWithParam<Step> {
 protected:
  void SetUp() override {
    setenv("CCO_PLATFORM", "cpu", 1);
    setenv("CCO_TIMEOUT_MS", "3000", 1);
    setenv("CCO_SOCKET_IFNAME", "=lo", 1);
  }
};

TEST_P(KilledRankTest, OthersFailInBoundNamingIt) {
  const Step step = GetParam();
  const auto start = Clock::now();
  std::vector<int> st = RunRanksRaw(
      4,
      [step](int rank, int n, const ccoUniqueId& id) {
        const bool victim = rank == 2;
        if (victim && step == kInCreate) raise(SIGKILL);  // never arrives
        ccoComm* comm = nullptr;
        ccoResult_t r = ccoCommCreate(id, n, rank, 16 << 20, &comm);
        if (step == kInCreate) {
          RANK_CHECK(r == ccoTimeout && strstr(ccoGetLastError(), "rank 2") != nullptr);
          return 0;
        }
        RANK_OK(r);
        if (victim && step == kAfterCreate) raise(SIGKILL);
        void* mem = nullptr;
        ccoWindow_t win = 0;
        if (victim && step == kInRegister) {
          RANK_OK(ccoMemAlloc(comm, 1 << 16, &mem));
          raise(SIGKILL);
        }
        r = ccoWindowAllocRegister(comm, 1 << 16, &mem, &win);
        if (step != kInDevComm) {
          RANK_CHECK(r != ccoSuccess && strstr(ccoGetLastError(), "rank 2") != nullptr);
          ccoCommDestroy(comm);
          return 0;
        }
        RANK_OK(r);
        if (victim) raise(SIGKILL);
        ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
        reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
        ccoDevComm dc;
        r = ccoDevCommCreate(comm, &reqs, &dc);
        RANK_CHECK(r != ccoSuccess && strstr(ccoGetLastError(), "rank 2") != nullptr);
        ccoCommDestroy(comm);
        return 0;
      },
      30);
  EXPECT_EQ(st[0], 0);
  EXPECT_EQ(st[1], 0);
  EXPECT_EQ(st[2], 128 + SIGKILL);
  EXPECT_EQ(st[3], 0);
  // The bound: one CCO_TIMEOUT_MS (3 s) plus margins, whatever the step.
  EXPECT_LT(SecondsSince(start), 9.0);
}

std::string StepName(const ::testing::TestParamInfo<Step>& info) {
  static const char* const kNames[] = {"InCreate", "AfterCreate", "InRegister", "InDevComm"};
  return kNames[info.param];
}

INSTANTIATE_TEST_SUITE_P(Steps, KilledRankTest, ::testing::Values(kInCreate, kAfterCreate, kInRegister, kInDevComm),
                         StepName);

}  // namespace
