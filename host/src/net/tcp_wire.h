// SPDX-License-Identifier: MIT
// The tcp backend's protocol: fixed 80-byte headers, each possibly followed by payload, on
// one connection per ordered pair of ranks. The rank that connected (the initiator) sends
// requests; the rank that accepted (the target) answers them, in order.
//
//   requests   PUT        window, offset, bytes, [signal]  + `bytes` of payload
//              (a signal: its id and the amount to add to the sender's word of it)
//              PUT_VALUE  window, offset, bytes (1..8), value, [signal]
//              SIGNAL     signal
//              GET        window, offset, bytes
//              any of them may carry an ack for the other direction: [ackSeq, ackAfter]
//   answers    ACK        seq: every request up to seq is applied (data, then signal)
//              GET_DATA   seq, bytes + `bytes` of payload (the answer to GET seq)
//              REFUSED    seq, value = ccoNetRefusal: the request was checked and had no effect
//
// Requests are numbered 1, 2, 3... per connection, answers come back in that order; an
// answer to request s also acknowledges every earlier one not yet answered (each of those
// was answered with an ACK, here or carried). A carried ack saves the target a second send
// when it has a request of its own for the initiator (a reply, in a ping-pong): "every request
// of yours up to ackSeq is applied", valid once the initiator holds the answers up to
// ackAfter, which went out earlier on the other connection and may arrive later. The
// connection was authenticated when it opened (the communicator's secret, net/tcp_mesh.h);
// a header is then checked field by field before anything acts on it (CheckRequest,
// CheckAnswer), and a malformed one breaks the connection. Payloads are not MAC'd: that
// would cost more than the network's bandwidth on one core (see the README's security notes).
#ifndef CCO_HOST_NET_TCP_WIRE_H_
#define CCO_HOST_NET_TCP_WIRE_H_

#include <stdint.h>

#include "common/status.h"

namespace cco {

// The header's second version (80 bytes, carried acks): a peer of the first breaks the
// connection at its first header instead of reading 16 bytes of it as payload.
constexpr uint32_t kTcpMagic = 0x324e4343;  // "CCN2"

enum TcpType : uint16_t {
  kTcpPut = 1,
  kTcpPutValue = 2,
  kTcpSignal = 3,
  kTcpGet = 4,
  kTcpAck = 16,
  kTcpGetData = 17,
  kTcpRefused = 18,
  // Not an answer (seq 0), on the answers connection: the sender's communicator failed because
  // of world rank `value`, and its connections may close soon; the receiver then blames that
  // rank, not the sender (the sender's peers on its own host read its status word instead).
  kTcpFailed = 19,
};

enum TcpFlag : uint16_t {
  kTcpHasSignal = 1,
  kTcpHasAck = 2,  // a request carries an ack of the other direction's requests
};

// Why a target refused a request (REFUSED's value).
enum TcpRefusal : uint64_t {
  kRefusedWindow = 1,  // no such window, or the range runs past it
  kRefusedSignal = 2,  // no such device communicator or signal
};

struct TcpHeader {
  uint32_t magic;
  uint16_t type;
  uint16_t flags;
  uint32_t gdaId;
  uint32_t window;
  uint64_t seq;
  uint64_t offset;
  uint64_t bytes;
  uint64_t value;
  uint32_t signalId;
  uint32_t reserved;
  uint64_t signalAdd;
  uint64_t ackSeq;    // kTcpHasAck: the receiver's requests up to this one are applied ...
  uint64_t ackAfter;  // ... once the receiver holds the answers up to this one
};
static_assert(sizeof(TcpHeader) == 80, "the wire header is 80 bytes");

// The largest put or get one request may carry; windows are smaller than this anyway.
constexpr uint64_t kTcpMaxBytes = uint64_t{1} << 40;

TcpHeader TcpRequestHeader(TcpType type, uint64_t seq);
TcpHeader TcpAnswerHeader(TcpType type, uint64_t seq);

// A request as the target receives it: well formed, numbered `expectedSeq`, and any ack it
// carries about requests the receiver posted (ackAfter < ackSeq <= lastSent).
Status CheckRequest(const TcpHeader& h, uint64_t expectedSeq, uint64_t lastSent);
// An answer as the initiator receives it: well formed, and about a request it sent (seq in
// [1, lastSent]).
Status CheckAnswer(const TcpHeader& h, uint64_t lastSent);

// What the initiator tells its caller about a refusal.
const char* RefusalText(uint64_t reason);

}  // namespace cco

#endif  // CCO_HOST_NET_TCP_WIRE_H_
