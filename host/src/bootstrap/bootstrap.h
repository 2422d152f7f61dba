// The host-side collectives of one communicator, through a hub: every rank keeps one
// authenticated connection to rank 0, which gathers each call's contributions and answers
// everyone. Because rank 0 sees every rank, every failure becomes one message all ranks get,
// naming the rank at fault: a rank that never arrives (CCO_TIMEOUT_MS), exits (its socket
// closes), stalls mid-message, or is in another collective call than the rest. A rank waits
// for rank 0 at most CCO_TIMEOUT_MS plus a small margin (root.h's AnswerMarginMs), so that
// rank 0's verdict, given at the bound, arrives first.
#ifndef CCO_HOST_BOOTSTRAP_BOOTSTRAP_H_
#define CCO_HOST_BOOTSTRAP_BOOTSTRAP_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/channel.h"
#include "bootstrap/unique_id.h"

namespace cco {

class Bootstrap {
 public:
  // Rendezvous through the root named by `id`, then connect to the hub.
  static Status Create(const UniqueIdContents& id, int nRanks, int rank, int64_t timeoutMs,
                       std::unique_ptr<Bootstrap>* out);

  int rank() const { return rank_; }
  int nRanks() const { return n_ranks_; }

  // Every rank contributes `mine` (at most kMaxContribution bytes) to the collective call
  // named `op`; every rank gets all contributions, indexed by rank. Ranks inside different
  // calls (or a different number of calls) fail together with a message naming both calls.
  Status Exchange(const std::string& op, const std::string& mine, std::vector<std::string>* all);
  // Exchange of equal-size records (a size mismatch is an error naming the ranks).
  Status AllGather(const std::string& op, const void* mine, size_t size, void* all);
  Status Barrier(const std::string& op);

  // From any thread: blocked and later calls fail with ccoAborted.
  void Abort();
  bool aborted() const { return aborted_.load(); }

 private:
  Bootstrap(int nRanks, int rank, int64_t timeoutMs) : n_ranks_(nRanks), rank_(rank), timeout_ms_(timeoutMs) {}
  Status ConnectHub(const Key& secret, Fd hubListener, const SockAddr& hub);
  Status AcceptPeers(const Key& secret, Fd hubListener);
  Status HubExchange(const std::string& op, const std::string& mine, std::vector<std::string>* all);
  Status PeerExchange(const std::string& op, const std::string& mine, std::vector<std::string>* all);
  void SendErrorToPeers(const Status& error);
  Status Failed(Status s);  // remembers the first failure, maps errors after Abort

  const int n_ranks_;
  const int rank_;
  const int64_t timeout_ms_;
  std::mutex mu_;                 // one collective at a time per communicator
  uint64_t seq_ = 0;
  Status broken_;                 // once a collective failed, every later one fails the same way
  std::atomic<bool> aborted_{false};
  std::vector<Channel> peers_;    // rank 0: peers_[r] is rank r's connection
  Channel hub_;                   // other ranks: the connection to rank 0
};

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_BOOTSTRAP_H_
