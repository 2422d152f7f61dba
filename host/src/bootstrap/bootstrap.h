// SPDX-License-Identifier: MIT
// The host-side collectives of one communicator, through a hub: every rank keeps one
// authenticated connection to rank 0, which gathers each call's contributions and answers
// everyone. What rank 0 answers is as small as each call allows: Agree and Barrier answer
// one verdict (rank 0 reads every report, so a call moves O(nRanks) bytes in all), and
// ExchangeGrouped sends each rank every rank's small shared part but only its own group's
// larger parts; only Exchange and AllGather hand every rank everything (O(nRanks^2) bytes). Because rank 0 sees every
// rank, every failure becomes one message all ranks get, naming the rank at fault: a rank that never arrives
// (CCO_TIMEOUT_MS), exits (its socket closes), stalls mid-message, or is in another collective call than the rest. A
// rank waits for rank 0 at most CCO_TIMEOUT_MS plus a small margin (root.h's AnswerMarginMs), so that rank 0's verdict,
// given at the bound, arrives first.
#ifndef CCO_HOST_BOOTSTRAP_BOOTSTRAP_H_
#define CCO_HOST_BOOTSTRAP_BOOTSTRAP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/channel.h"
#include "bootstrap/messages.h"
#include "bootstrap/unique_id.h"
#include "common/phase_trace.h"

namespace cco {

class Bootstrap {
 public:
  // Rendezvous through the root named by `id`, then connect to the hub.
  // With `trace`, marks its steps there: "rendezvous" (the root's answer), "hub" (every
  // rank connected to rank 0).
  static Status Create(const UniqueIdContents& id, int nRanks, int rank, int64_t timeoutMs,
                       std::unique_ptr<Bootstrap>* out, PhaseTrace* trace = nullptr);

  int rank() const { return rank_; }
  int nRanks() const { return n_ranks_; }

  // Every rank contributes `mine` (at most kMaxContribution bytes) to the collective call
  // named `op`; every rank gets all contributions, indexed by rank. Ranks inside different
  // calls (or a different number of calls) fail together with a message naming both calls.
  Status Exchange(const std::string& op, const std::string& mine, std::vector<std::string>* all);
  // Exchange of equal-size records (a size mismatch is an error naming the ranks).
  Status AllGather(const std::string& op, const void* mine, size_t size, void* all);
  Status Barrier(const std::string& op);
  // Every rank reports how its part of `op` went and a value (at most kMaxAgreeValue
  // bytes) that should be alike on every rank; every rank gets rank 0's verdict on all the
  // reports (messages.h's Verdict: the lowest rank that failed, else the lowest whose value
  // differs from rank 0's, and rank 0's value).
  Status Agree(const std::string& op, const Status& local, const std::string& value, Verdict* verdict);
  // Every rank contributes a `shared` part (at most kMaxSharedPart bytes, the same size on
  // every rank) and a `grouped` part (at most kMaxGroupedPart bytes) for the ranks whose
  // `group` is its own. Every rank gets every rank's shared part (`shared`: nRanks parts,
  // one after another) and its group's grouped parts, in rank order (itself included).
  Status ExchangeGrouped(const std::string& op, uint64_t group, const std::string& shared, const std::string& grouped,
                         std::string* allShared, std::vector<GroupMember>* members);

  // From any thread: blocked and later calls fail with ccoAborted.
  void Abort();
  bool aborted() const { return aborted_.load(); }

 private:
  Bootstrap(int nRanks, int rank, int64_t timeoutMs) : n_ranks_(nRanks), rank_(rank), timeout_ms_(timeoutMs) {}
  // Rank 0's part of a call: every rank's contribution in `all` (indexed by rank) turns into
  // the answers, answers[which[r]] for rank r. A failure is every rank's answer.
  using Answers = std::function<Status(std::vector<std::string>& all, std::vector<std::string>* answers,
                                       std::vector<uint32_t>* which)>;
  Status ConnectHub(const Key& secret, Fd hubListener, const SockAddr& hub);
  Status AcceptPeers(const Key& secret, Fd hubListener);
  Status WatchPeers();  // rank 0: ready_ over every peer's connection
  // One collective call: `mine` goes to rank 0, and this rank's answer (at most maxAnswer
  // bytes) comes back into *answer; on rank 0, `answers` makes every rank's.
  Status Call(const std::string& op, const std::string& mine, const Answers& answers, size_t maxAnswer,
              std::string* answer);
  Status HubCall(const std::string& op, const std::string& mine, const Answers& answers, std::string* answer);
  Status HubGather(const std::string& op, const std::string& mine, std::vector<std::string>* all);
  Status PeerCall(const std::string& op, const std::string& mine, size_t maxAnswer, std::string* answer);
  void SendErrorToPeers(const Status& error);
  Status Failed(Status s);  // remembers the first failure, maps errors after Abort

  const int n_ranks_;
  const int rank_;
  const int64_t timeout_ms_;
  std::mutex mu_;  // one collective at a time per communicator
  uint64_t seq_ = 0;
  Status broken_;  // once a collective failed, every later one fails the same way
  std::atomic<bool> aborted_{false};
  std::vector<Channel> peers_;  // rank 0: peers_[r] is rank r's connection
  Fd ready_;                    // rank 0: an epoll set of peers_, each armed once per call
  Channel hub_;                 // other ranks: the connection to rank 0
};

}  // namespace cco

#endif  // CCO_HOST_BOOTSTRAP_BOOTSTRAP_H_
