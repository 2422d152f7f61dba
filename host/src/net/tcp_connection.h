// SPDX-License-Identifier: MIT
// The tcp backend's state of one peer (private to net/tcp_*.cc): its two sockets, the bytes
// on their way out and in, the initiator's requests awaiting answers and the target's
// answers owed.
#ifndef CCO_HOST_NET_TCP_CONNECTION_H_
#define CCO_HOST_NET_TCP_CONNECTION_H_

#include <stdint.h>

#include <chrono>
#include <deque>
#include <vector>

#include "bootstrap/socket.h"
#include "net/staging.h"
#include "net/tcp_backend.h"
#include "net/tcp_wire.h"

namespace cco {

namespace tcp {

constexpr size_t kHeader = sizeof(TcpHeader);
// Small reads go through a buffer, so that one recv takes a header, its payload and the next
// headers at once; a large payload is received straight into its chunks.
constexpr size_t kReadBuffer = 64 << 10;
// put_value's unaligned bytes go through small pinned words of their own.
constexpr int kValueWords = 64;

// Bytes on their way out of a socket: a header, then maybe a payload of a window, copied out
// of device memory chunk by chunk (the window is looked up again for every chunk).
struct Outbound {
  struct Chunk {
    int index;
    size_t length;
    uint64_t token;  // its copy out of device memory has passed once the fence did
    size_t sent;
  };
  TcpHeader header;
  size_t headerSent = 0;
  uint32_t window = 0;  // the payload: window and offset in this rank's memory
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t staged = 0;  // payload bytes whose copy out is queued
  uint64_t sent = 0;
  bool getAnswer = false;  // a target's GET_DATA: later writes wait until it is staged
  // At most the pool's chunks; a vector, not a deque: a deque allocates even empty, and a
  // request is made per post.
  std::vector<Chunk> chunks;
};

// Bytes coming into a socket: a header, then maybe a payload for a window.
struct Inbound {
  std::vector<char> buffer = std::vector<char>(kReadBuffer);
  size_t bufferStart = 0, bufferEnd = 0;
  bool buffered() const { return bufferStart != bufferEnd; }
  // The last recv took less than it asked for: the socket is empty until epoll says
  // otherwise (a recv that finds nothing is a system call for nothing, on the reply's path).
  bool drained = false;
  TcpHeader header;
  size_t headerGot = 0;
  bool payload = false;  // reading the payload of `header`
  bool discard = false;  // ... to drop it (refused, or its window went away)
  uint32_t window = 0;   // where the payload goes: window and offset in this rank's memory
  uint64_t offset = 0;
  uint64_t left = 0, done = 0;
  int chunk = -1;
  size_t filled = 0;
  uint64_t lastToken = 0;  // the copy of the payload's last chunk
  uint64_t refusal = 0;    // a target's request: why it is refused (0: it is not)
};

struct Socket {
  explicit Socket(const TcpOptions& o)
      : sendPool(o.chunkBytes, o.chunks), recvPool(o.chunkBytes, o.chunks), values(sizeof(uint64_t), kValueWords) {}
  Fd fd;
  std::deque<Outbound> out;
  Inbound in;
  StagingPool sendPool, recvPool, values;
  struct Landing {
    StagingPool* pool;
    int chunk;
    uint64_t token;
  };
  std::deque<Landing> landing;        // chunks whose copy into device memory is queued
  Clock::time_point lastPayloadSend;  // payload bytes last left (epoch: never)
};

struct Peer {
  Peer(int32_t r, const TcpOptions& o) : rank(r), requests(o), answers(o) {}
  // Its pools: the chunk pools, then the put_value words (only the answers socket applies
  // requests and uses its words; the requests socket's are placed all the same, 512 bytes, so
  // that no pool can ever be acquired unplaced).
  std::vector<StagingPool*> ChunkPools() {
    return {&requests.sendPool, &requests.recvPool, &answers.sendPool, &answers.recvPool};
  }
  std::vector<StagingPool*> WordPools() { return {&requests.values, &answers.values}; }
  int32_t rank;
  Socket requests;  // this rank's requests out, the peer's answers in
  Socket answers;   // the peer's requests in, this rank's answers out
  bool lost = false;
  int32_t failedBecause = -1;                   // what its kTcpFailed notice said (-1: none came)
  Clock::time_point lastAnswer = Clock::now();  // bytes of the peer's answers arrived
  Clock::time_point lastSend = Clock::now();    // bytes of this rank's requests left

  // Initiator: requests sent, oldest first (seq is consecutive).
  struct Pending {
    uint64_t seq, cookie;
    bool get;
    uint32_t localWindow;  // a get's destination
    uint64_t localOffset, bytes;
    bool done = false;
    uint64_t token = 0;  // a get: the copy of its last bytes into device memory
    Status status;
    Clock::time_point posted;
  };
  std::deque<Pending> pending;
  uint64_t lastSent = 0;
  Clock::time_point lastPost;  // the last request posted to this peer
  // An ack the peer carried on one of its requests (net/tcp_wire.h), applied once the answers
  // up to carriedAfter are in; 0: none.
  uint64_t carriedAck = 0, carriedAfter = 0;

  // Target: answers owed, in request order.
  struct Answer {
    uint64_t seq;
    uint16_t type;    // kTcpAck, kTcpGetData, kTcpRefused
    uint64_t token;   // the request's work on the stream
    uint64_t value;   // a refusal's reason
    uint32_t window;  // a get's data
    uint64_t offset, bytes;
  };
  std::deque<Answer> owed;
  uint64_t expectSeq = 1;
  // Acks whose work is done but not yet sent: up to ackDue (0: none), due since then. The
  // next request to this peer carries them, else a bare ACK goes after the delay.
  uint64_t ackDue = 0;
  uint64_t ackDuePass = 0;
  Clock::time_point ackDueSince;
  bool ackHeld = false;            // this rank was talking to the peer: the ack waits out the delay
  uint64_t lastOrderedAnswer = 0;  // the last GET_DATA or REFUSED queued (its seq)
  int unstagedGets = 0;            // GET_DATA answers whose bytes are not all copied out yet

  Pending* Find(uint64_t seq) {
    if (pending.empty() || seq < pending.front().seq || seq - pending.front().seq >= pending.size()) return nullptr;
    return &pending[seq - pending.front().seq];
  }
};

}  // namespace tcp
}  // namespace cco

#endif  // CCO_HOST_NET_TCP_CONNECTION_H_
