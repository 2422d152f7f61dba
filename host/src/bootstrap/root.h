// The rendezvous root: a short-lived thread of the process that minted a unique id. It
// waits for every rank to say hello (bounded by CCO_TIMEOUT_MS), checks that they agree
// (one nRanks, no rank twice), tells each where rank 0's hub listens, and exits. Ranks
// that disagree, or never come, turn into one error message for every rank it has heard.
#ifndef CCO_HOST_BOOTSTRAP_ROOT_H_
#define CCO_HOST_BOOTSTRAP_ROOT_H_

#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"

namespace cco {

// The largest world a communicator may have. The root sizes a table by the nRanks a
// hello claims, so it drops any hello above this instead.
constexpr int kMaxRanks = 1 << 20;

// Hello (rank -> root) and Welcome (root -> rank).
struct RootHello {
  Nonce nonce;
  int32_t nRanks;
  int32_t rank;
  SockAddr hub;  // rank 0 only
};
std::string EncodeHello(const RootHello& hello);
Status DecodeHello(const std::string& bytes, RootHello* hello);

struct RootWelcome {
  Status status;
  SockAddr hub;
};
std::string EncodeWelcome(const RootWelcome& welcome);
Status DecodeWelcome(const std::string& bytes, RootWelcome* welcome);

// Binds the root's listener, starts its thread and fills `id`.
Status StartRendezvousRoot(ccoUniqueId* id);

// If this process runs the root for `nonce`, waits (until `deadline`) for it to finish,
// so a communicator's creation leaves no thread behind.
void AwaitLocalRoot(const Nonce& nonce, Deadline deadline);

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_ROOT_H_
