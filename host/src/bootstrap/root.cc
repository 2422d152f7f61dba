#include "bootstrap/root.h"

#include <errno.h>
#include <poll.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bootstrap/interface.h"
#include "bootstrap/wire.h"
#include "common/env.h"
#include "common/text.h"

namespace cco {
namespace {

constexpr size_t kMaxHello = 4096;

struct RootDone {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

std::mutex g_roots_mu;
std::map<std::string, std::shared_ptr<RootDone>>& Roots() {
  static auto* roots = new std::map<std::string, std::shared_ptr<RootDone>>();
  return *roots;
}

struct Arrival {
  Fd fd;
  bool greeted = false;
  RootHello hello{};
};

class RootServer {
 public:
  RootServer(Fd listener, Nonce nonce, int64_t timeoutMs)
      : listener_(std::move(listener)), nonce_(nonce), timeout_ms_(timeoutMs) {}

  void Run() {
    Status s = Gather();
    RootWelcome welcome{s, hub_};
    const std::string reply = EncodeWelcome(welcome);
    for (auto& a : arrivals_)
      if (a.greeted) SendFrame(a.fd.get(), reply, DeadlineIn(timeout_ms_));  // best effort: a rank may be gone
  }

 private:
  // Accepts connections and hellos until every rank has arrived. A mistake (ranks that
  // disagree on nRanks, two processes with one rank) is remembered, not returned at once:
  // the root still waits for as many processes as the smallest nRanks asked for (or the
  // timeout), so each of them hears the same verdict instead of a reset connection. A
  // process that comes after the verdict finds no root and says so.
  Status Gather() {
    // No rank for a whole timeout after minting: give up (the id is never used).
    Deadline deadline = DeadlineIn(timeout_ms_);
    int n_ranks = -1;     // the first greeted rank's nRanks: the world the others must match
    int smallest = -1;    // the smallest nRanks any rank asked for: how many to wait for
    int greeted = 0;      // greeted processes, duplicates and mismatches included
    Status verdict = Status::Ok();
    std::vector<int> owner;  // owner[rank] = index in arrivals_, or -1
    for (;;) {
      std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
      for (auto& a : arrivals_) fds.push_back({a.greeted ? -1 : a.fd.get(), POLLIN, 0});
      int64_t left = MsLeft(deadline);
      if (left <= 0) return verdict.ok() ? MissingRanks(n_ranks, owner) : verdict;
      int n = poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left, 1000)));
      if (n < 0 && errno != EINTR) return ErrnoError("rendezvous root: poll", errno);
      if (n <= 0) continue;
      if (fds[0].revents & POLLIN) {
        Fd conn;
        if (Accept(listener_.get(), DeadlineIn(10), &conn).ok()) arrivals_.push_back(Arrival{std::move(conn)});
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        Arrival& a = arrivals_[i - 1];
        if (a.greeted || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        std::string bytes;
        RootHello h;
        if (!RecvFrame(a.fd.get(), &bytes, kMaxHello, DeadlineIn(timeout_ms_)).ok() || !DecodeHello(bytes, &h).ok() ||
            !(h.nonce == nonce_) || h.nRanks <= 0 || h.nRanks > kMaxRanks) {
          a.fd.Reset();  // a stray or foreign connection: drop it
          continue;
        }
        a.greeted = true;
        a.hello = h;
        ++greeted;
        smallest = smallest < 0 ? h.nRanks : std::min(smallest, h.nRanks);
        if (n_ranks < 0) {
          n_ranks = h.nRanks;
          owner.assign(n_ranks, -1);
          first_greeted_ = i - 1;
          deadline = DeadlineIn(timeout_ms_);  // from the first arrival, the rest have one timeout
        }
        if (verdict.ok()) verdict = Admit(h, i - 1, n_ranks, &owner);
        if (greeted >= smallest) return verdict;
      }
      // (A dropped connection keeps its slot with fd -1, which poll ignores.)
    }
  }

  // Takes arrival `index` as the owner of its rank, or says why it cannot be.
  Status Admit(const RootHello& h, size_t index, int n_ranks, std::vector<int>* owner) {
    if (h.nRanks != n_ranks)
      return InvalidUsage(Fmt("ccoCommCreate: rank ", h.rank, " was called with nRanks=", h.nRanks, " but rank ",
                              arrivals_[first_greeted_].hello.rank, " with nRanks=", n_ranks));
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
  Nonce nonce_;
  int64_t timeout_ms_;
  std::vector<Arrival> arrivals_;
  size_t first_greeted_ = 0;
  SockAddr hub_{};
};

}  // namespace

std::string EncodeHello(const RootHello& h) {
  return WireWriter().Put(h.nonce).Put(h.nRanks).Put(h.rank).Put(h.hub).bytes();
}

Status DecodeHello(const std::string& bytes, RootHello* h) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&h->nonce));
  CCO_RETURN_IF_ERROR(r.Get(&h->nRanks));
  CCO_RETURN_IF_ERROR(r.Get(&h->rank));
  return r.Get(&h->hub);
}

std::string EncodeWelcome(const RootWelcome& w) {
  return WireWriter().Put(static_cast<int32_t>(w.status.code())).PutString(w.status.message()).Put(w.hub).bytes();
}

Status DecodeWelcome(const std::string& bytes, RootWelcome* w) {
  WireReader r(bytes);
  int32_t code = 0;
  std::string message;
  CCO_RETURN_IF_ERROR(r.Get(&code));
  CCO_RETURN_IF_ERROR(r.GetString(&message));
  CCO_RETURN_IF_ERROR(r.Get(&w->hub));
  w->status = Status(static_cast<ccoResult_t>(code), message);
  return Status::Ok();
}

Status StartRendezvousRoot(ccoUniqueId* id) {
  InterfaceAddress local;
  CCO_RETURN_IF_ERROR(BootstrapAddress(&local));
  Fd listener;
  UniqueIdContents contents;
  CCO_RETURN_IF_ERROR(ListenTcp(local.address, &listener, &contents.root).Prefixed("rendezvous root on " + local.name));
  contents.nonce = RandomNonce();

  auto done = std::make_shared<RootDone>();
  {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    Roots()[contents.nonce.Hex()] = done;
  }
  auto server = std::make_shared<RootServer>(std::move(listener), contents.nonce, env::TimeoutMs());
  const std::string key = contents.nonce.Hex();
  try {
    std::thread([server, done, key] {
      server->Run();
      {
        std::lock_guard<std::mutex> lock(g_roots_mu);
        Roots().erase(key);
      }
      std::lock_guard<std::mutex> lock(done->mu);
      done->done = true;
      done->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    Roots().erase(key);
    return SystemError(Fmt("starting the rendezvous thread: ", e.what()));
  }
  EncodeUniqueId(contents, id);
  return Status::Ok();
}

void AwaitLocalRoot(const Nonce& nonce, Deadline deadline) {
  std::shared_ptr<RootDone> done;
  {
    std::lock_guard<std::mutex> lock(g_roots_mu);
    auto it = Roots().find(nonce.Hex());
    if (it == Roots().end()) return;
    done = it->second;
  }
  std::unique_lock<std::mutex> lock(done->mu);
  done->cv.wait_until(lock, deadline, [&] { return done->done; });
}

}  // namespace cco
