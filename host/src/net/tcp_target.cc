// SPDX-License-Identifier: MIT
// The tcp backend's target side: a peer's requests checked and applied (data, then signal, on
// the backend's stream), and the answers owed to it, in request order.
#include <string.h>

#include <algorithm>

#include "net/tcp_backend.h"
#include "net/tcp_connection.h"

namespace cco {
namespace {

// Answers a target keeps for one peer (owed and queued) before it stops reading that peer's
// requests: a peer that does not read its answers cannot grow this rank's memory.
constexpr size_t kMaxAnswers = 4096;
// This rank talks to a peer (and may soon carry its acks) if it posted a request to it this
// recently.
constexpr auto kTalkingWithin = std::chrono::milliseconds(1);

}  // namespace

Status TcpBackend::OnRequest(Peer& p, Socket& s, NetTargetMap& map, bool* stall) {
  tcp::Inbound& in = s.in;
  const TcpHeader& h = in.header;
  if (p.owed.size() + p.answers.out.size() >= kMaxAnswers) {
    *stall = true;
    return Status::Ok();
  }
  CCO_RETURN_IF_ERROR(CheckRequest(h, p.expectSeq, p.lastSent));
  if (h.flags & kTcpHasAck) {  // applied once the answers before it are in (ApplyCarriedAck)
    p.carriedAck = std::max(p.carriedAck, h.ackSeq);
    p.carriedAfter = std::max(p.carriedAfter, h.ackAfter);
  }
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
      p.owed.push_back(Peer::Answer{h.seq, kTcpRefused, 0, in.refusal, 0, 0, 0});
    } else {
      p.owed.push_back(Peer::Answer{h.seq, kTcpGetData, 0, 0, h.window, h.offset, h.bytes});
      if (h.bytes > 0) ++p.unstagedGets;
    }
    return Status::Ok();
  }
  if (h.type == kTcpPutValue && in.refusal == 0) {
    if (h.bytes == sizeof(uint64_t) && address % sizeof(uint64_t) == 0) {
      CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, address, h.value));
    } else {
      const int word = s.values.Acquire();
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
    p.owed.push_back(Peer::Answer{h.seq, kTcpRefused, 0, in.refusal, 0, 0, 0});
    return Status::Ok();
  }
  if (h.flags & kTcpHasSignal) CCO_RETURN_IF_ERROR(platform_->StreamWriteValue64(device_, stream_, word, sum));
  uint64_t token = 0;
  CCO_RETURN_IF_ERROR(fence_->Mark(&token));
  p.owed.push_back(Peer::Answer{h.seq, kTcpAck, token, 0, 0, 0, 0});
  appliedThisPass_ = true;
  // What a kernel waits on (a signal, or a word it polls) may have it answer at once.
  answerableThisPass_ |= (h.flags & kTcpHasSignal) != 0 || h.type == kTcpPutValue;
  return Status::Ok();
}

// Acks due wait a little: a request of this rank's to the same peer carries them (Write) at
// no cost, where a bare ACK is one more send (a system call and the kernel's TCP stack, on the
// proxy's time). A bare ACK goes after at least one pass (the proxy drains its rings in
// between: a reply may appear), or, where options_.ackDelayUs is set and this rank talks to
// the peer, once that delay ran out. Gets and refusals go at once, behind the acks held
// (answers go in order).
bool TcpBackend::PumpAnswers(Peer& p) {
  bool did = HoldDueAcks(p);
  while (!p.owed.empty() && fence_->Passed(p.owed.front().token)) {
    const Peer::Answer a = p.owed.front();  // a get's data or a refusal
    p.owed.pop_front();
    did = true;
    QueueAck(p);
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
    p.lastOrderedAnswer = a.seq;
    HoldDueAcks(p);
  }
  if (p.ackDue != 0 && p.ackDuePass < pass_ &&
      (!p.ackHeld || now_ - p.ackDueSince >= std::chrono::microseconds(options_.ackDelayUs)))
    QueueAck(p);
  return did;
}

bool TcpBackend::HoldDueAcks(Peer& p) {
  bool did = false;
  while (!p.owed.empty() && p.owed.front().type == kTcpAck && fence_->Passed(p.owed.front().token)) {
    if (p.ackDue == 0) {
      p.ackDuePass = pass_;
      p.ackDueSince = now_;
      p.ackHeld = options_.ackDelayUs > 0 && now_ - p.lastPost < kTalkingWithin;
    }
    p.ackDue = p.owed.front().seq;
    p.owed.pop_front();
    did = true;
  }
  return did;
}

void TcpBackend::QueueAck(Peer& p) {
  if (p.ackDue == 0) return;
  tcp::Outbound o;
  o.header = TcpAnswerHeader(kTcpAck, p.ackDue);
  p.answers.out.push_back(o);
  p.ackDue = 0;
}

}  // namespace cco
