// SPDX-License-Identifier: MIT
#include "net/tcp_wire.h"

#include <string.h>

namespace cco {
namespace {

TcpHeader Header(TcpType type, uint64_t seq) {
  TcpHeader h;
  memset(&h, 0, sizeof(h));
  h.magic = kTcpMagic;
  h.type = type;
  h.seq = seq;
  return h;
}

Status Malformed(const TcpHeader& h, const char* why) {
  return RemoteError(Fmt("a malformed message (type ", h.type, ", seq ", h.seq, "): ", why));
}

}  // namespace

TcpHeader TcpRequestHeader(TcpType type, uint64_t seq) { return Header(type, seq); }
TcpHeader TcpAnswerHeader(TcpType type, uint64_t seq) { return Header(type, seq); }

Status CheckRequest(const TcpHeader& h, uint64_t expectedSeq, uint64_t lastSent) {
  if (h.magic != kTcpMagic) return Malformed(h, "not a CCO header");
  if (h.reserved != 0 || (h.flags & ~uint16_t{kTcpHasSignal | kTcpHasAck}) != 0) return Malformed(h, "unknown flags");
  if (h.seq != expectedSeq) return Malformed(h, "out of sequence");
  if (h.flags & kTcpHasAck) {
    if (h.ackSeq == 0 || h.ackSeq > lastSent || h.ackAfter >= h.ackSeq)
      return Malformed(h, "an ack of requests never sent");
  } else if (h.ackSeq != 0 || h.ackAfter != 0) {
    return Malformed(h, "an ack without its flag");
  }
  const bool signal = (h.flags & kTcpHasSignal) != 0;
  switch (h.type) {
    case kTcpPut:
      if (h.bytes > kTcpMaxBytes) return Malformed(h, "too large");
      break;
    case kTcpPutValue:
      if (h.bytes < 1 || h.bytes > 8) return Malformed(h, "put_value of other than 1 to 8 bytes");
      break;
    case kTcpSignal:
      if (!signal || h.bytes != 0) return Malformed(h, "a signal without its word");
      break;
    case kTcpGet:
      if (signal || h.bytes > kTcpMaxBytes) return Malformed(h, "a get with a signal, or too large");
      break;
    default: return Malformed(h, "not a request");
  }
  return Status::Ok();
}

Status CheckAnswer(const TcpHeader& h, uint64_t lastSent) {
  if (h.magic != kTcpMagic) return Malformed(h, "not a CCO header");
  if (h.flags != 0 || h.reserved != 0 || h.ackSeq != 0 || h.ackAfter != 0) return Malformed(h, "unknown flags");
  if (h.type == kTcpFailed) {  // answers no request; the rank is checked against the world by the proxy
    if (h.seq != 0 || h.bytes != 0 || h.value > static_cast<uint64_t>(INT32_MAX)) return Malformed(h, "a bad notice");
    return Status::Ok();
  }
  if (h.seq == 0 || h.seq > lastSent) return Malformed(h, "an answer to a request never sent");
  switch (h.type) {
    case kTcpAck: break;
    case kTcpGetData:
      if (h.bytes > kTcpMaxBytes) return Malformed(h, "too large");
      break;
    case kTcpRefused:
      if (h.value != kRefusedWindow && h.value != kRefusedSignal) return Malformed(h, "an unknown refusal");
      break;
    default: return Malformed(h, "not an answer");
  }
  return Status::Ok();
}

const char* RefusalText(uint64_t reason) {
  switch (reason) {
    case kRefusedWindow: return "the window is not registered there, or the range runs past it";
    case kRefusedSignal: return "the device communicator or the signal does not exist there";
  }
  return "refused";
}

}  // namespace cco
