// SPDX-License-Identifier: MIT
#include "bootstrap/root.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "auth/crypto.h"
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
  // unusedUntil: when the rendezvous gives up if no rank has come (a whole timeout after minting).
  RootServer(Fd listener, const Key& secret, int64_t timeoutMs, Deadline unusedUntil)
      : listener_(std::move(listener)),
        timeout_ms_(timeoutMs),
        acceptor_(listener_.get(), secret,
                  AcceptorOptions{"root", HandshakeMs(timeoutMs), kRootMaxPending, kMaxHelloBytes, false}),
        deadline_(unusedUntil) {}

  int listener() const { return listener_.get(); }

  // Serves the rendezvous; `answered` runs once every admitted rank has its verdict.
  template <class Answered> void Run(Answered answered) {
    const Status verdict = Gather();
    RootWelcome welcome{verdict, hub_};
    const std::string reply = EncodeWelcome(welcome);
    for (auto& g : greeted_) g.arrival.channel.Send(reply, DeadlineIn(HandshakeMs(timeout_ms_)));  // a rank may be gone
    // This detached thread may still be ending when the process exits: nothing of libcrypto's
    // may be left to it by then.
    ReleaseThreadCryptoState();
    answered();
    if (verdict.ok()) return;
    // A failed rendezvous: ranks still on their way (mid-handshake, or not yet connected)
    // hear the same verdict until the rendezvous's bound, instead of a reset connection or
    // a root that is gone.
    const std::string lateReply = EncodeWelcome(RootWelcome{verdict, SockAddr{}});
    Arrival a;
    while (acceptor_.Next(deadline_, &a).ok()) a.channel.Send(lateReply, DeadlineIn(100));
    ReleaseThreadCryptoState();
  }

 private:
  // Takes hellos until every rank has arrived. A mistake (ranks that disagree on nRanks,
  // two processes with one rank) is remembered, not returned at once: the root still waits
  // for as many processes as the smallest nRanks asked for (or the timeout), so each of them
  // hears the same verdict instead of a reset connection.
  Status Gather() {
    // No rank for a whole timeout after minting (deadline_ until the first arrival): give up
    // (the id is never used).
    Deadline& deadline = deadline_;
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
    return Timeout(Fmt("ccoCommCreate: ", RanksPhrase(missing), " did not arrive within ", timeout_ms_,
                       " ms (CCO_TIMEOUT_MS); arrived: ", RankList(present)));
  }

  Fd listener_;
  int64_t timeout_ms_;
  Acceptor acceptor_;
  std::vector<Greeted> greeted_;
  SockAddr hub_{};
  Deadline deadline_{};  // the rendezvous's bound (from minting, then from the first arrival)
};

// Marks a root done for AwaitLocalRoot: every rank it admitted has its verdict, or it served
// none and is gone.
void Answered(const std::string& key, const std::shared_ptr<RootDone>& done) {
  {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    Roots().erase(key);
  }
  std::lock_guard<std::mutex> lock(done->mu);
  done->answered = true;
  done->cv.notify_all();
}

// Serves a root on a thread of its own, from its first connection on.
Status Serve(const std::shared_ptr<RootServer>& server, const std::shared_ptr<RootDone>& done, const std::string& key) {
  try {
    std::thread([server, done, key] { server->Run([&] { Answered(key, done); }); }).detach();
  } catch (const std::system_error& e) {
    Answered(key, done);
    return SystemError(Fmt("starting the rendezvous thread: ", e.what()));
  }
  return Status::Ok();
}

// The roots no rank has reached yet, watched by one thread for the whole process: an id that
// is minted and never used costs its listener until its bound, not a thread. A root's own
// thread starts with its first connection (which waits in the listener's queue meanwhile).
// The watch's thread ends when no root waits.
//
// A child forked while the watch ran has none of its threads: it starts a watch of its own,
// and closes its copies of the parent's listeners (pthread_atfork; the parent keeps them).
class RootWatch {
 public:
  static RootWatch& Get() {
    static RootWatch* watch = [] {
      RootWatch* w = new RootWatch();  // never destroyed: detached threads use it
      pthread_atfork([] { Get().mu_.lock(); }, [] { Get().mu_.unlock(); }, [] { Get().AfterForkInChild(); });
      return w;
    }();
    return *watch;
  }

  Status Add(std::shared_ptr<RootServer> server, std::shared_ptr<RootDone> done, std::string key,
             Deadline unusedUntil) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!wake_.valid()) {
      wake_.Reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!wake_.valid()) return ErrnoError("eventfd for the rendezvous watch", errno);
    }
    waiting_.push_back(Waiting{std::move(server), std::move(done), std::move(key), unusedUntil});
    if (running_) {
      const uint64_t one = 1;
      (void)!write(wake_.get(), &one, sizeof(one));
      return Status::Ok();
    }
    try {
      std::thread([this] { Loop(); }).detach();
    } catch (const std::system_error& e) {
      waiting_.pop_back();
      return SystemError(Fmt("starting the rendezvous watch: ", e.what()));
    }
    running_ = true;
    return Status::Ok();
  }

 private:
  // In the child, single-threaded, with mu_ held since the fork's prepare handler.
  void AfterForkInChild() {
    waiting_.clear();
    wake_.Reset();
    running_ = false;
    mu_.unlock();
  }

  struct Waiting {
    std::shared_ptr<RootServer> server;
    std::shared_ptr<RootDone> done;
    std::string key;
    Deadline unusedUntil;
  };

  void Loop() {
    for (;;) {
      std::vector<pollfd> fds;
      int64_t wait = 1000;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (waiting_.empty()) {
          running_ = false;
          wake_.Reset();  // nothing of the watch stays open while no root waits
          return;
        }
        fds.push_back(pollfd{wake_.get(), POLLIN, 0});
        for (const Waiting& w : waiting_) {
          fds.push_back(pollfd{w.server->listener(), POLLIN, 0});
          wait = std::min<int64_t>(wait, std::max<int64_t>(0, MsLeft(w.unusedUntil)));
        }
      }
      if (poll(fds.data(), fds.size(), static_cast<int>(wait)) < 0 && errno != EINTR) std::this_thread::yield();
      if (fds[0].revents & POLLIN) {
        uint64_t count = 0;
        (void)!read(wake_.get(), &count, sizeof(count));
      }
      std::vector<Waiting> start, expired;
      {
        std::lock_guard<std::mutex> lock(mu_);
        // Roots added since the poll sit past fds' end: they are looked at next time round.
        for (size_t i = fds.size() - 1; i >= 1; --i) {
          const int listener = fds[i].fd;
          auto it = std::find_if(waiting_.begin(), waiting_.end(),
                                 [&](const Waiting& w) { return w.server->listener() == listener; });
          if (it == waiting_.end()) continue;
          if (fds[i].revents != 0) start.push_back(*it);
          else if (MsLeft(it->unusedUntil) <= 0) expired.push_back(*it);
          else continue;
          waiting_.erase(it);
        }
      }
      for (const Waiting& w : start) (void)Serve(w.server, w.done, w.key);  // a failure marks it done
      for (const Waiting& w : expired) Answered(w.key, w.done);             // its listener closes with it
    }
  }

  std::mutex mu_;
  std::vector<Waiting> waiting_;
  Fd wake_;
  bool running_ = false;
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
  const int64_t timeoutMs = env::TimeoutMs();
  const Deadline unusedUntil = DeadlineIn(timeoutMs);
  auto server = std::make_shared<RootServer>(std::move(listener), contents.secret, timeoutMs, unusedUntil);
  Status watched = RootWatch::Get().Add(server, done, key, unusedUntil);
  if (!watched.ok()) {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    Roots().erase(key);
    return watched;
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
