// SPDX-License-Identifier: MIT
// A rank's liveness word, which host peers read to see it die before its sockets close.
//
// A killed process's descriptors close late: the kernel closes them in order, and the GPU
// driver's (opened first) take the time of tearing its context down: hundreds of
// milliseconds on a GPU. Robust futexes are handled earlier: when a thread ends, killed or
// not, the kernel marks every robust mutex it holds as its owner's death (FUTEX_OWNER_DIED in
// the mutex's word) before the process's memory and files go. So each rank keeps a robust
// mutex in a memfd, held by its proxy thread for as long as that thread runs, and host peers in
// other processes map the memfd and read the word: the death is seen at once.
//
// Peers only read: the memfd reaches them sealed against writes (F_SEAL_FUTURE_WRITE, after
// its owner mapped it), and what they read is one word, of which one bit counts. A peer that
// lies in its own word can only make itself look dead.
#ifndef CCO_HOST_PROXY_LIVENESS_H_
#define CCO_HOST_PROXY_LIVENESS_H_

#include <pthread.h>
#include <stdint.h>

#include <memory>

#include "common/status.h"

namespace cco {

// This rank's word: a robust, process-shared mutex in a memfd of its own.
class OwnLiveness {
 public:
  static Status Create(std::unique_ptr<OwnLiveness>* out);
  ~OwnLiveness();
  OwnLiveness(const OwnLiveness&) = delete;
  OwnLiveness& operator=(const OwnLiveness&) = delete;

  int fd() const { return fd_; }  // what host peers are sent (sealed: they map it read-only)
  // From the thread whose end is this rank's death to its peers (the proxy's): takes the mutex
  // and keeps it until LetGo. False where the mutex's word is not where peers read it (a C
  // library that lays the mutex out otherwise): then it is not held, and peers see the death
  // when the sockets close, as without it.
  bool Hold();
  void LetGo();

 private:
  OwnLiveness() = default;
  int fd_ = -1;
  pthread_mutex_t* mutex_ = nullptr;
  bool held_ = false;
};

// A host peer's word, mapped read-only.
class PeerLiveness {
 public:
  // Checks the descriptor (a memfd of the size agreed, sealed against resizing and writes)
  // and maps it; takes `fd` (closes it).
  static Status Map(int fd, std::unique_ptr<PeerLiveness>* out);
  ~PeerLiveness();
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;

  // Whether the thread that held the peer's mutex ended without letting go (its process died).
  bool Died() const;

 private:
  PeerLiveness() = default;
  const uint32_t* word_ = nullptr;
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_LIVENESS_H_
