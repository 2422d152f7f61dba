// SPDX-License-Identifier: MIT
// The rendezvous root: a short-lived thread of the process that minted a unique id. It
// admits only connections that prove the id's secret, waits for every rank to say hello
// (bounded by CCO_TIMEOUT_MS), checks that they agree (one nRanks, no rank twice), tells
// each where rank 0's hub listens, and exits. Ranks that disagree, or never come, turn into
// one error message for every rank that reached it, late ones included. Until its first
// connection a root has no thread of its own: one thread of the process watches every such
// root's listener (an id minted and never used costs its listener until its bound, and no
// thread once every id is used or expired).
#ifndef CCO_HOST_BOOTSTRAP_ROOT_H_
#define CCO_HOST_BOOTSTRAP_ROOT_H_

#include "bootstrap/messages.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"

namespace cco {

// The bound of one connection's handshake and first frame, from CCO_TIMEOUT_MS: short,
// so a connection that stalls is dropped long before the job's own bound.
int64_t HandshakeMs(int64_t timeoutMs);
// How much longer than the bound a rank waits for an answer that a server (root, hub)
// gives at the bound: the server's verdict then arrives first.
int64_t AnswerMarginMs(int64_t timeoutMs);

// Binds the root's listener, starts its thread and fills `id`.
Status StartRendezvousRoot(ccoUniqueId* id);

// If this process runs the root for the id with `secret`, waits (until `deadline`) for it
// to have answered every rank it admitted. After a success the root's thread ends then;
// after a failure it goes on answering late ranks with the same verdict until the
// rendezvous's bound, then ends.
void AwaitLocalRoot(const Key& secret, Deadline deadline);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_ROOT_H_
