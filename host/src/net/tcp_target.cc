// The tcp backend's target side: a peer's requests checked and applied (data, then signal, on
// the backend's stream), and the answers owed to it, in request order.
#include <string.h>

#include "net/tcp_backend.h"
#include "net/tcp_connection.h"

namespace cco {
namespace {

// Answers a target keeps for one peer (owed and queued) before it stops reading that peer's
// requests: a peer that does not read its answers cannot grow this rank's memory.
constexpr size_t kMaxAnswers = 4096;

}  // namespace

Status TcpBackend::OnRequest(Peer& p, Socket& s, NetTargetMap& map, bool* stall) {
  tcp::Inbound& in = s.in;
  const TcpHeader& h = in.header;
  if (p.owed.size() + p.answers.out.size() >= kMaxAnswers) {
    *stall = true;
    return Status::Ok();
  }
  CCO_RETURN_IF_ERROR(CheckRequest(h, p.expectSeq));
  // A get reads the window as it was when the get arrived: later writes wait until its
  // bytes are copied out.
  const bool writes = h.type == kTcpPut || h.type == kTcpPutValue;
  if (writes && p.unstagedGets > 0) {
    *stall = true;
    return Status::Ok();
  }
  in.refusal = 0;
  uint64_t signalWord = 0;
  if ((h.flags & kTcpHasSignal) && !map.SignalAddress(h.gdaId, h.signalId, p.rank, &signalWord).ok())
    in.refusal = kRefusedSignal;
  uint64_t address = 0;
  const bool touches = h.type != kTcpSignal && !(h.type == kTcpPut && h.bytes == 0);  // an empty put touches nothing
  if (touches && !map.WindowAddress(h.window, h.offset, h.bytes, &address).ok()) in.refusal = kRefusedWindow;

  if (h.type == kTcpGet) {
    ++p.expectSeq;
    if (in.refusal != 0) {
      p.owed.push_back(Peer::Answer{h.seq, kTcpRefused, 0, in.refusal, 0, 0, 0, pass_});
    } else {
      p.owed.push_back(Peer::Answer{h.seq, kTcpGetData, 0, 0, h.window, h.offset, h.bytes, pass_});
      if (h.bytes > 0) ++p.unstagedGets;
    }
    return Status::Ok();
  }
  if (h.type == kTcpPutValue && in.refusal == 0) {
    if (h.bytes == sizeof(uint64_t) && address % sizeof(uint64_t) == 0) {
      CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, address, h.value));
    } else {
      Status error;
      const int word = s.values.Acquire(&error);
      CCO_RETURN_IF_ERROR(error);
      if (word < 0) {  // every word is still landing
        *stall = true;
        return Status::Ok();
      }
      memcpy(s.values.host(word), &h.value, sizeof(h.value));
      uint64_t token = 0;
      CCO_RETURN_IF_ERROR(Land(s, s.values, word, address, h.bytes, &token));
    }
  }
  ++p.expectSeq;
  if (h.type == kTcpPut && h.bytes > 0) {
    in.payload = true;
    in.discard = in.refusal != 0;
    in.window = h.window;
    in.offset = h.offset;
    in.left = h.bytes;
    in.done = 0;
    return Status::Ok();
  }
  return FinishRequest(p, s, map);
}

// A request's data is queued: its signal goes behind it, then the acknowledgement waits for
// both. The target keeps each sender's running sum, so a refused request adds nothing.
Status TcpBackend::FinishRequest(Peer& p, Socket& s, NetTargetMap& map) {
  tcp::Inbound& in = s.in;
  const TcpHeader& h = in.header;
  uint64_t word = 0, sum = 0;
  if (in.refusal == 0 && (h.flags & kTcpHasSignal) &&
      !map.AddSignal(h.gdaId, h.signalId, p.rank, h.signalAdd, &word, &sum).ok())
    in.refusal = kRefusedSignal;  // its device communicator went away meanwhile
  if (in.refusal != 0) {
    p.owed.push_back(Peer::Answer{h.seq, kTcpRefused, 0, in.refusal, 0, 0, 0, pass_});
    return Status::Ok();
  }
  if (h.flags & kTcpHasSignal) CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, word, sum));
  uint64_t token = 0;
  CCO_RETURN_IF_ERROR(fence_->Mark(&token));
  p.owed.push_back(Peer::Answer{h.seq, kTcpAck, token, 0, 0, 0, 0, pass_});
  return Status::Ok();
}

// An ack waits one pass: the proxy's rings are drained in between, so a request the target's
// kernel makes on seeing the signal (a reply) leaves before the ack, which only gives the
// sender credit back. Gets and refusals go at once.
bool TcpBackend::PumpAnswers(Peer& p) {
  bool did = false;
  uint64_t ack = 0;
  auto flushAck = [&] {
    if (ack == 0) return;
    tcp::Outbound o;
    o.header = TcpAnswerHeader(kTcpAck, ack);
    p.answers.out.push_back(o);
    ack = 0;
  };
  while (!p.owed.empty() && fence_->Passed(p.owed.front().token) &&
         (p.owed.front().type != kTcpAck || p.owed.front().pass < pass_)) {
    const Peer::Answer a = p.owed.front();
    p.owed.pop_front();
    did = true;
    if (a.type == kTcpAck) {
      ack = a.seq;
      continue;
    }
    flushAck();
    tcp::Outbound o;
    o.header = TcpAnswerHeader(static_cast<TcpType>(a.type), a.seq);
    if (a.type == kTcpRefused) o.header.value = a.value;
    if (a.type == kTcpGetData) {
      o.header.bytes = a.bytes;
      o.window = a.window;
      o.offset = a.offset;
      o.bytes = a.bytes;
      o.getAnswer = a.bytes > 0;
    }
    p.answers.out.push_back(o);
  }
  flushAck();
  return did;
}

}  // namespace cco
