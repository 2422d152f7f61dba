// SPDX-License-Identifier: MIT
#include "bootstrap/channel.h"

#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace cco {
namespace {

constexpr uint32_t kFrameMagic = 0x42434343;  // "CCCB"
// The most a blocking read appends at once: memory follows the bytes that really arrive.
constexpr size_t kReadChunk = size_t{1} << 20;

void MakeHeader(uint64_t length, char* header) {
  const uint32_t magic = kFrameMagic;
  memcpy(header, &magic, 4);
  memcpy(header + 4, &length, 8);
}

}  // namespace

Status ParseFrameHeader(const char* header, size_t maxSize, uint64_t* length) {
  uint32_t magic;
  memcpy(&magic, header, 4);
  memcpy(length, header + 4, 8);
  if (magic != kFrameMagic) return RemoteError("a peer sent something that is not a CCO message");
  if (*length > maxSize) return RemoteError(Fmt("a peer announced a ", *length, "-byte message (limit ", maxSize, ")"));
  return Status::Ok();
}

Status Channel::Connect(Fd fd, const Key& secret, const char* purpose, Deadline deadline, Channel* out,
                        bool* retryable) {
  bool ignored = false;
  bool& io = retryable != nullptr ? *retryable : ignored;
  ClientHandshake handshake(secret, purpose);
  std::string hello(kServerHelloBytes, '\0'), proof, reply(kServerProofBytes, '\0');
  io = true;
  CCO_RETURN_IF_ERROR(RecvAll(fd.get(), &hello[0], hello.size(), deadline).Prefixed("authentication"));
  io = false;
  CCO_RETURN_IF_ERROR(handshake.Respond(hello, &proof));
  io = true;
  CCO_RETURN_IF_ERROR(SendAll(fd.get(), proof.data(), proof.size(), deadline).Prefixed("authentication"));
  Status got = RecvAll(fd.get(), &reply[0], reply.size(), deadline);
  if (!got.ok()) {
    // A server closes on a wrong proof, and also when it pushed this connection out: only
    // a retry can tell, so the message names both.
    return got.Prefixed("authentication (the server closed: busy, or it holds a different unique id)");
  }
  io = false;
  SessionKeys keys;
  CCO_RETURN_IF_ERROR(handshake.Finish(reply, &keys));
  *out = Channel(std::move(fd), keys);
  return Status::Ok();
}

Status ConnectChannel(const SockAddr& address, const Key& secret, const char* purpose, int64_t handshakeMs,
                      Deadline deadline, Channel* out, bool* refused) {
  int delay_ms = 1;
  for (;;) {
    Fd fd;
    CCO_RETURN_IF_ERROR(ConnectTcp(address, deadline, &fd, refused));
    const Deadline attempt = std::min(deadline, DeadlineIn(handshakeMs));
    bool retryable = false;
    Status s = Channel::Connect(std::move(fd), secret, purpose, attempt, out, &retryable);
    if (s.ok() || !retryable) return s;
    if (MsLeft(deadline) <= 0) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(delay_ms, MsLeft(deadline))));
    delay_ms = std::min(delay_ms * 2, 100);
  }
}

Status Channel::Tag(const Key& key, uint64_t seq, const char* header, const std::string& payload, Mac* out) const {
  return Hmac(key, {Bytes(&seq, sizeof(seq)), Bytes(header, kFrameHeaderBytes), Bytes(payload)}, out);
}

Status Channel::Send(const std::string& payload, Deadline deadline, int fdToPass) {
  char header[kFrameHeaderBytes];
  MakeHeader(payload.size(), header);
  Mac tag;
  CCO_RETURN_IF_ERROR(Tag(keys_.send, sendSeq_, header, payload, &tag));
  ++sendSeq_;
  std::string frame;
  frame.reserve(kFrameHeaderBytes + payload.size() + kFrameTagBytes);
  frame.append(header, kFrameHeaderBytes).append(payload).append(reinterpret_cast<const char*>(tag.data()), tag.size());
  return SendAll(fd_.get(), frame.data(), frame.size(), deadline, fdToPass);
}

Status Channel::Recv(std::string* payload, size_t maxSize, Deadline deadline, int* fdReceived, bool* inStep) {
  if (inStep != nullptr) *inStep = false;
  int fd = -1;
  char header[kFrameHeaderBytes];
  Status lost;  // a descriptor that could not be taken: the frame is still read whole
  Status s = RecvAll(fd_.get(), header, sizeof(header), deadline, &fd, fdReceived != nullptr ? &lost : nullptr);
  uint64_t length = 0;
  if (s.ok()) s = ParseFrameHeader(header, maxSize, &length);
  if (s.ok() && fd >= 0 && fdReceived == nullptr) s = RemoteError("a peer passed a file descriptor nobody asked for");
  payload->clear();
  while (s.ok() && payload->size() < length) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(length - payload->size(), kReadChunk));
    const size_t at = payload->size();
    payload->resize(at + n);
    s = RecvAll(fd_.get(), &(*payload)[at], n, deadline);
  }
  Mac given, expected;
  if (s.ok()) s = RecvAll(fd_.get(), given.data(), given.size(), deadline);
  if (s.ok()) s = Tag(keys_.receive, recvSeq_, header, *payload, &expected);
  if (s.ok() && !MacEqual(given, expected)) s = RemoteError("a message failed authentication (forged or altered)");
  if (!s.ok()) {
    if (fd >= 0) close(fd);
    return s;
  }
  ++recvSeq_;
  if (inStep != nullptr) *inStep = true;
  if (!lost.ok()) {
    if (fd >= 0) close(fd);
    return lost;
  }
  if (fdReceived != nullptr) *fdReceived = fd;
  return Status::Ok();
}

Status Channel::Open(const std::string& frame, size_t maxSize, std::string* payload) {
  if (frame.size() < kFrameHeaderBytes + kFrameTagBytes) return RemoteError("a truncated CCO message");
  uint64_t length = 0;
  CCO_RETURN_IF_ERROR(ParseFrameHeader(frame.data(), maxSize, &length));
  if (frame.size() != kFrameHeaderBytes + length + kFrameTagBytes)
    return RemoteError("a CCO message of the wrong size");
  std::string body = frame.substr(kFrameHeaderBytes, length);
  Mac given, expected;
  memcpy(given.data(), frame.data() + kFrameHeaderBytes + length, given.size());
  CCO_RETURN_IF_ERROR(Tag(keys_.receive, recvSeq_, frame.data(), body, &expected));
  if (!MacEqual(given, expected)) return RemoteError("a message failed authentication (forged or altered)");
  ++recvSeq_;
  *payload = std::move(body);
  return Status::Ok();
}

}  // namespace cco
