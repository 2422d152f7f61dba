// SPDX-License-Identifier: MIT
// A rank's liveness word (proxy/liveness.h): the kernel marks it when the thread holding it
// ends without letting go, and only then; a peer maps it read-only and cannot write it; a
// descriptor that is not such a word is refused before it is mapped.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "proxy/liveness.h"

namespace cco {
namespace {

std::unique_ptr<PeerLiveness> PeerView(const OwnLiveness& own) {
  std::unique_ptr<PeerLiveness> peer;
  const Status s = PeerLiveness::Map(dup(own.fd()), &peer);
  EXPECT_TRUE(s.ok()) << s.message();
  return peer;
}

TEST(Liveness, TheWordSaysDiedOnlyWhenItsHolderEndedWithoutLettingGo) {
  std::unique_ptr<OwnLiveness> own;
  ASSERT_TRUE(OwnLiveness::Create(&own).ok());
  std::unique_ptr<PeerLiveness> peer = PeerView(*own);
  ASSERT_NE(peer, nullptr);
  EXPECT_FALSE(peer->Died());  // nobody holds it yet
  bool held = false;
  std::thread([&] {
    held = own->Hold();
    EXPECT_FALSE(peer->Died());  // held by a live thread
    own->LetGo();
  }).join();
  ASSERT_TRUE(held);
  EXPECT_FALSE(peer->Died());  // let go: a rank that left
  // A process that ends holding it, as a killed one does (a process of its own: this one's
  // sanitizers would see a mutex outlive its holder).
  const pid_t child = fork();
  if (child == 0) _exit(own->Hold() ? 0 : 1);
  int status = -1;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(peer->Died());
}

TEST(Liveness, APeerCannotWriteTheWord) {
  std::unique_ptr<OwnLiveness> own;
  ASSERT_TRUE(OwnLiveness::Create(&own).ok());
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, own->fd(), 0);
  EXPECT_EQ(p, MAP_FAILED);
  if (p != MAP_FAILED) munmap(p, 4096);
  EXPECT_LT(write(own->fd(), "x", 1), 0);
  void* r = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, own->fd(), 0);
  ASSERT_NE(r, MAP_FAILED);
  EXPECT_NE(mprotect(r, 4096, PROT_READ | PROT_WRITE), 0);  // nor by making a read-only view writable
  munmap(r, 4096);
}

// A memfd of `size` bytes with `seals`.
int Memfd(size_t size, int seals) {
  const int fd = memfd_create("not-a-liveness-word", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return -1;
  if (seals != 0 && fcntl(fd, F_ADD_SEALS, seals) != 0) return -1;
  return fd;
}

TEST(Liveness, WhatIsNotALivenessWordIsRefusedBeforeItIsMapped) {
  const int all = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;
  struct Case {
    const char* what;
    int fd;
    const char* says;
  } cases[] = {
      {"writable", Memfd(4096, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), "not sealed"},
      {"resizable", Memfd(4096, 0), "not sealed"},
      {"too large", Memfd(1 << 20, all), "bytes, not 4096"},
      {"too small", Memfd(8, all), "bytes, not 4096"},
      {"a file", fileno(tmpfile()), "not a memfd"},
  };
  for (const Case& c : cases) {
    ASSERT_GE(c.fd, 0) << c.what;
    const int copy = dup(c.fd);  // Map closes what it is given
    std::unique_ptr<PeerLiveness> peer;
    const Status s = PeerLiveness::Map(copy, &peer);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.what << ": " << s.message();
    EXPECT_EQ(peer, nullptr) << c.what;
    EXPECT_EQ(fcntl(copy, F_GETFD), -1) << c.what << ": the descriptor was not closed";
    close(c.fd);
  }
}

}  // namespace
}  // namespace cco
