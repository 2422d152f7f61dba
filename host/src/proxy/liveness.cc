// SPDX-License-Identifier: MIT
#include "proxy/liveness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // Linux 5.1
#endif

namespace cco {
namespace {

constexpr size_t kBytes = 4096;  // one page: the mutex, alone
// Resizing is sealed (a shrink would kill a mapping process with SIGBUS), and writes from any
// mapping made after the owner's.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;

}  // namespace

Status OwnLiveness::Create(std::unique_ptr<OwnLiveness>* out) {
  std::unique_ptr<OwnLiveness> l(new OwnLiveness());
  l->fd_ = memfd_create("cco-liveness", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (l->fd_ < 0) return ErrnoError("memfd_create (the liveness word)", errno);
  if (ftruncate(l->fd_, kBytes) != 0) return ErrnoError("sizing the liveness word's memfd", errno);
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, l->fd_, 0);
  if (p == MAP_FAILED) return ErrnoError("mapping the liveness word", errno);
  l->mutex_ = static_cast<pthread_mutex_t*>(p);
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  const int made = pthread_mutex_init(l->mutex_, &attributes);
  pthread_mutexattr_destroy(&attributes);
  if (made != 0) {
    munmap(p, kBytes);
    l->mutex_ = nullptr;
    return ErrnoError("pthread_mutex_init (the liveness word)", made);
  }
  if (fcntl(l->fd_, F_ADD_SEALS, kSeals) != 0) return ErrnoError("sealing the liveness word's memfd", errno);
  *out = std::move(l);
  return Status::Ok();
}

OwnLiveness::~OwnLiveness() {
  if (mutex_ != nullptr) {
    if (held_) pthread_mutex_unlock(mutex_);  // (Hold's thread lets go first: this is a fallback)
    pthread_mutex_destroy(mutex_);
    munmap(mutex_, kBytes);
  }
  if (fd_ >= 0) close(fd_);
}

bool OwnLiveness::Hold() {
  int r = pthread_mutex_lock(mutex_);
  if (r == EOWNERDEAD) r = pthread_mutex_consistent(mutex_);  // only this process takes it
  if (r != 0) return false;
  // Peers read the kernel's futex word at the mapping's start: it must hold this thread's id.
  const uint32_t word = __atomic_load_n(reinterpret_cast<const uint32_t*>(mutex_), __ATOMIC_RELAXED);
  if ((word & FUTEX_TID_MASK) != static_cast<uint32_t>(syscall(SYS_gettid))) {
    pthread_mutex_unlock(mutex_);
    return false;
  }
  held_ = true;
  return true;
}

void OwnLiveness::LetGo() {
  if (!held_) return;
  pthread_mutex_unlock(mutex_);
  held_ = false;
}

Status PeerLiveness::Map(int fd, std::unique_ptr<PeerLiveness>* out) {
  void* p = MAP_FAILED;
  const Status s = [&] {
    struct stat st = {};
    const int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0) return ErrnoError("fstat of a peer's liveness word", errno);
    if (!S_ISREG(st.st_mode) || seals < 0) return RemoteError("a peer's liveness word is not a memfd");
    if ((seals & kSeals) != kSeals)
      return RemoteError("a peer's liveness word is not sealed against resizing and writes");
    if (static_cast<uint64_t>(st.st_size) != kBytes)
      return RemoteError(Fmt("a peer's liveness word's memfd holds ", st.st_size, " bytes, not ", kBytes));
    p = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return ErrnoError("mapping a peer's liveness word", errno);
    return Status::Ok();
  }();
  close(fd);
  if (!s.ok()) return s;
  std::unique_ptr<PeerLiveness> l(new PeerLiveness());
  l->word_ = static_cast<const uint32_t*>(p);
  *out = std::move(l);
  return Status::Ok();
}

PeerLiveness::~PeerLiveness() {
  if (word_ != nullptr) munmap(const_cast<uint32_t*>(word_), kBytes);
}

bool PeerLiveness::Died() const { return (__atomic_load_n(word_, __ATOMIC_RELAXED) & FUTEX_OWNER_DIED) != 0; }

}  // namespace cco
