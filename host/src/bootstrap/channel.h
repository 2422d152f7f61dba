// SPDX-License-Identifier: MIT
// An authenticated connection: the client and server halves of the handshake
// (auth/handshake.h) over a socket, then frames that each carry a MAC.
//
//   frame = header (magic "CCCB", u64 length) | payload | HMAC(direction key, seq | header | payload)
//
// seq counts the frames of one direction and is never sent: a frame that was forged,
// altered, replayed, reordered or dropped fails its MAC, and the channel is then broken.
// The receiver gives every read a bound (maxSize, per message type) and grows its buffer
// only as bytes arrive, so a header announcing a huge length costs nothing.
#ifndef CCO_HOST_BOOTSTRAP_CHANNEL_H_
#define CCO_HOST_BOOTSTRAP_CHANNEL_H_

#include <stdint.h>

#include <string>

#include "auth/handshake.h"
#include "bootstrap/socket.h"

namespace cco {

constexpr size_t kFrameHeaderBytes = 12;
constexpr size_t kFrameTagBytes = kMacBytes;

// The payload length a frame header announces, or an error when it is not a CCO header or
// announces more than maxSize.
Status ParseFrameHeader(const char* header, size_t maxSize, uint64_t* length);

class Channel {
 public:
  Channel() = default;
  Channel(Fd fd, const SessionKeys& keys) : fd_(std::move(fd)), keys_(keys) {}
  Channel(Channel&&) = default;
  Channel& operator=(Channel&&) = default;

  // The client side: answers the server's challenge on `fd` and checks its proof. On
  // failure *retryable says whether it was the connection (closed, reset, too slow: try a
  // new one) rather than the peer (not a CCO service, or one that holds another secret).
  static Status Connect(Fd fd, const Key& secret, const char* purpose, Deadline deadline, Channel* out,
                        bool* retryable = nullptr);

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  void Reset() { fd_.Reset(); }
  // The socket, for a protocol of its own after the handshake (the tcp backend).
  Fd TakeFd() { return std::move(fd_); }

  // One frame; `fdToPass` (Unix sockets only) travels with it.
  Status Send(const std::string& payload, Deadline deadline, int fdToPass = -1);
  // One frame of at most maxSize payload bytes; a descriptor that came with it goes to
  // *fdReceived (the caller owns it), and is an error when fdReceived is null. *inStep (if
  // given) says whether the stream is still in step after a failure: true where only the
  // descriptor was lost (this process's descriptor limit) and the frame itself was read whole
  // and authenticated; false after any other failure (the channel is then of no further use).
  Status Recv(std::string* payload, size_t maxSize, Deadline deadline, int* fdReceived = nullptr,
              bool* inStep = nullptr);

  // For readers that gather a frame's bytes themselves (non-blocking servers): `frame` is
  // header, payload and tag exactly; checks it as the next frame and yields the payload.
  Status Open(const std::string& frame, size_t maxSize, std::string* payload);

 private:
  Status Tag(const Key& key, uint64_t seq, const char* header, const std::string& payload, Mac* out) const;

  Fd fd_;
  SessionKeys keys_{};
  uint64_t sendSeq_ = 0;
  uint64_t recvSeq_ = 0;
};

// Connects to the TCP service `purpose` at `address` and authenticates, retrying (until
// the deadline) connections that were refused, dropped or too slow: a server under a flood
// may push a pending connection out, and an honest client simply comes back. With
// `refused`, a refused connection ends the attempt at once instead (ConnectTcp).
Status ConnectChannel(const SockAddr& address, const Key& secret, const char* purpose, int64_t handshakeMs,
                      Deadline deadline, Channel* out, bool* refused = nullptr);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_CHANNEL_H_
