#include "bootstrap/root.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/acceptor.h"
#include "bootstrap/interface.h"
#include "common/env.h"
#include "common/text.h"

namespace cco {
namespace {

// Pending (unauthenticated) connections the root keeps at once; more push the oldest out.
// Once the first rank said how many come, up to that many (at most kRootMostPending).
constexpr size_t kRootMaxPending = 256;
constexpr size_t kRootMostPending = 1 << 16;

// A root's progress, for the creating rank of its own process.
struct RootDone {
  std::mutex mu;
  std::condition_variable cv;
  bool answered = false;  // every rank it admitted has its verdict
  // The process whose thread runs the root: a child forked after the id was minted
  // inherits this table but not the thread, and has no root to wait for.
  pid_t pid = getpid();
};

std::mutex g_roots_mu;
std::map<std::string, std::shared_ptr<RootDone>>& Roots() {
  static auto* roots = new std::map<std::string, std::shared_ptr<RootDone>>();
  return *roots;
}

struct Greeted {
  Arrival arrival;
  RootHello hello;
};

class RootServer {
 public:
  RootServer(Fd listener, const Key& secret, int64_t timeoutMs)
      : listener_(std::move(listener)),
        timeout_ms_(timeoutMs),
        acceptor_(listener_.get(), secret,
                  AcceptorOptions{"root", HandshakeMs(timeoutMs), kRootMaxPending, kMaxHelloBytes, false}) {}

  // Serves the rendezvous; `answered` runs once every admitted rank has its verdict.
  template <class Answered> void Run(Answered answered) {
    const Status verdict = Gather();
    RootWelcome welcome{verdict, hub_};
    const std::string reply = EncodeWelcome(welcome);
    for (auto& g : greeted_) g.arrival.channel.Send(reply, DeadlineIn(HandshakeMs(timeout_ms_)));  // a rank may be gone
    answered();
    if (verdict.ok()) return;
    // A failed rendezvous: ranks still on their way (mid-handshake, or not yet connected)
    // hear the same verdict until the rendezvous's bound, instead of a reset connection or
    // a root that is gone.
    const std::string lateReply = EncodeWelcome(RootWelcome{verdict, SockAddr{}});
    Arrival a;
    while (acceptor_.Next(deadline_, &a).ok()) a.channel.Send(lateReply, DeadlineIn(100));
  }

 private:
  // Takes hellos until every rank has arrived. A mistake (ranks that disagree on nRanks,
  // two processes with one rank) is remembered, not returned at once: the root still waits
  // for as many processes as the smallest nRanks asked for (or the timeout), so each of them
  // hears the same verdict instead of a reset connection.
  Status Gather() {
    // No rank for a whole timeout after minting: give up (the id is never used).
    Deadline& deadline = deadline_;
    deadline = DeadlineIn(timeout_ms_);
    int n_ranks = -1;   // the first greeted rank's nRanks: the world the others must match
    int smallest = -1;  // the smallest nRanks any rank asked for: how many to wait for
    Status verdict = Status::Ok();
    std::vector<int> owner;  // owner[rank] = index in greeted_, or -1
    for (;;) {
      Arrival a;
      Status s = acceptor_.Next(deadline, &a);
      if (s.code() == ccoTimeout) return verdict.ok() ? MissingRanks(n_ranks, owner) : verdict;
      if (!s.ok()) return s.Prefixed("rendezvous root");
      RootHello h;
      if (!DecodeHello(a.firstFrame, &h).ok()) continue;  // an insider's garbage: dropped
      greeted_.push_back(Greeted{std::move(a), h});
      smallest = smallest < 0 ? h.nRanks : std::min(smallest, h.nRanks);
      if (n_ranks < 0) {
        n_ranks = h.nRanks;
        owner.assign(n_ranks, -1);
        deadline = DeadlineIn(timeout_ms_);  // from the first arrival, the rest have one timeout
        // The others may all be mid-handshake at once (only a holder of the id's secret can
        // say how many come).
        acceptor_.SetMaxPending(std::max<size_t>(kRootMaxPending, std::min<size_t>(n_ranks, kRootMostPending)));
      }
      if (verdict.ok()) verdict = Admit(h, greeted_.size() - 1, n_ranks, &owner);
      if (static_cast<int>(greeted_.size()) >= smallest) return verdict;
    }
  }

  // Takes greeted_[index] as the owner of its rank, or says why it cannot be.
  Status Admit(const RootHello& h, size_t index, int n_ranks, std::vector<int>* owner) {
    if (h.nRanks != n_ranks)
      return InvalidUsage(Fmt("ccoCommCreate: rank ", h.rank, " was called with nRanks=", h.nRanks, " but rank ",
                              greeted_[0].hello.rank, " with nRanks=", n_ranks));
    if (h.rank < 0 || h.rank >= n_ranks)  // ranks check this before connecting; a forged hello may not
      return InvalidUsage(Fmt("ccoCommCreate: rank ", h.rank, " is outside 0..", n_ranks - 1));
    if ((*owner)[h.rank] >= 0)
      return InvalidUsage(Fmt("ccoCommCreate: two processes called it as rank ", h.rank, " of ", n_ranks));
    (*owner)[h.rank] = static_cast<int>(index);
    if (h.rank == 0) hub_ = h.hub;
    return Status::Ok();
  }

  Status MissingRanks(int n_ranks, const std::vector<int>& owner) {
    if (n_ranks < 0) return Timeout(Fmt("no rank called ccoCommCreate within ", timeout_ms_, " ms"));
    std::vector<int> missing, present;
    for (int r = 0; r < n_ranks; ++r) (owner[r] < 0 ? missing : present).push_back(r);
    return Timeout(Fmt("ccoCommCreate: ", RanksPhrase(missing),
                       " did not arrive within ", timeout_ms_, " ms (CCO_TIMEOUT_MS); arrived: ", RankList(present)));
  }

  Fd listener_;
  int64_t timeout_ms_;
  Acceptor acceptor_;
  std::vector<Greeted> greeted_;
  SockAddr hub_{};
  Deadline deadline_{};  // the rendezvous's bound (from the first arrival)
};

}  // namespace

int64_t HandshakeMs(int64_t timeoutMs) { return std::max<int64_t>(1, std::min<int64_t>(timeoutMs, 5000)); }

int64_t AnswerMarginMs(int64_t timeoutMs) { return std::min<int64_t>(std::max<int64_t>(timeoutMs / 8, 50), 1000); }

Status StartRendezvousRoot(ccoUniqueId* id) {
  InterfaceAddress local;
  CCO_RETURN_IF_ERROR(BootstrapAddress(&local));
  Fd listener;
  UniqueIdContents contents;
  CCO_RETURN_IF_ERROR(NewSecret(&contents.secret));
  std::string key;
  CCO_RETURN_IF_ERROR(IdTag(contents.secret, &key));  // also proves libcrypto loads
  CCO_RETURN_IF_ERROR(ListenTcp(local.address, &listener, &contents.root).Prefixed("rendezvous root on " + local.name));

  auto done = std::make_shared<RootDone>();
  {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    Roots()[key] = done;
  }
  auto server = std::make_shared<RootServer>(std::move(listener), contents.secret, env::TimeoutMs());
  try {
    std::thread([server, done, key] {
      server->Run([&] {
        {
          std::lock_guard<std::mutex> lock(g_roots_mu);
          Roots().erase(key);
        }
        std::lock_guard<std::mutex> lock(done->mu);
        done->answered = true;
        done->cv.notify_all();
      });
    }).detach();
  } catch (const std::system_error& e) {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    Roots().erase(key);
    return SystemError(Fmt("starting the rendezvous thread: ", e.what()));
  }
  EncodeUniqueId(contents, id);
  return Status::Ok();
}

void AwaitLocalRoot(const Key& secret, Deadline deadline) {
  std::string key;
  if (!IdTag(secret, &key).ok()) return;
  std::shared_ptr<RootDone> done;
  {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    auto it = Roots().find(key);
    if (it == Roots().end() || it->second->pid != getpid()) return;
    done = it->second;
  }
  std::unique_lock<std::mutex> lock(done->mu);
  done->cv.wait_until(lock, deadline, [&] { return done->answered; });
}

}  // namespace cco
