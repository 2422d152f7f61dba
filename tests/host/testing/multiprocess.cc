// SPDX-License-Identifier: MIT
#include "multiprocess.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

namespace cco_test {
namespace {

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

int ChildMain(int rank, int nRanks, const std::vector<std::vector<int>>& pipes, const RankBody& body) {
  ccoUniqueId id;
  if (rank == 0) {
    if (ccoGetUniqueId(&id) != ccoSuccess) {
      fprintf(stderr, "rank 0: ccoGetUniqueId failed: %s\n", ccoGetLastError());
      return 90;
    }
    for (int r = 1; r < nRanks; ++r)
      if (!WriteAll(pipes[r][1], &id, sizeof(id))) return 91;
  } else if (!ReadAll(pipes[rank][0], &id, sizeof(id))) {
    return 92;  // rank 0 died before handing out the id
  }
  return body(rank, nRanks, id);
}

}  // namespace

// Larger than every stack the parent's threads have (the default, which std::thread takes), so
// that glibc's cache, holding theirs, has none that fits.
void StacksOfTheirOwn() {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  size_t size = 0;
  if (pthread_attr_getstacksize(&attr, &size) == 0 && pthread_attr_setstacksize(&attr, size + (size_t{1} << 20)) == 0)
    (void)pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
}

std::vector<int> RunRanksRaw(int nRanks, const RankBody& body, int timeoutSec) {
  fflush(stdout);
  fflush(stderr);
  std::vector<std::vector<int>> pipes(nRanks, std::vector<int>(2, -1));
  for (int r = 1; r < nRanks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) abort();
    pipes[r] = {fds[0], fds[1]};
  }
  std::vector<pid_t> pids(nRanks);
  for (int r = 0; r < nRanks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      StacksOfTheirOwn();
      int code = ChildMain(r, nRanks, pipes, body);
      fflush(stdout);
      fflush(stderr);
      _exit(code);
    }
  }
  for (auto& p : pipes)
    for (int fd : p)
      if (fd >= 0) close(fd);

  std::vector<int> status(nRanks, -1);
  std::vector<bool> done(nRanks, false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSec);
  int left = nRanks;
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    for (int r = 0; r < nRanks; ++r) {
      if (done[r]) continue;
      int ws = 0;
      if (waitpid(pids[r], &ws, WNOHANG) == pids[r]) {
        done[r] = true;
        --left;
        status[r] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int r = 0; r < nRanks; ++r) {
    if (done[r]) continue;
    kill(pids[r], SIGKILL);
    waitpid(pids[r], nullptr, 0);
    status[r] = -1;
  }
  return status;
}

::testing::AssertionResult RunRanks(int nRanks, const RankBody& body, int timeoutSec) {
  std::vector<int> status = RunRanksRaw(nRanks, body, timeoutSec);
  std::string failures;
  for (int r = 0; r < nRanks; ++r) {
    if (status[r] == 0) continue;
    failures += " rank " + std::to_string(r) +
                (status[r] < 0 ? " hung (killed at the deadline)" : " exited with " + std::to_string(status[r])) + ";";
  }
  if (failures.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << nRanks << " ranks:" << failures;
}

}  // namespace cco_test
