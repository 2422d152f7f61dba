#include "bootstrap/bootstrap.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "bootstrap/interface.h"
#include "bootstrap/root.h"
#include "bootstrap/wire.h"
#include "common/text.h"

namespace cco {
namespace {

constexpr size_t kMaxMessage = size_t{1} << 30;

struct HubJoin {
  Nonce nonce;
  int32_t rank;
};

// A rank's contribution to one collective call.
struct Contribution {
  uint64_t seq = 0;
  std::string op;
  std::string payload;
};

std::string EncodeContribution(const Contribution& c) {
  return WireWriter().Put(c.seq).PutString(c.op).PutString(c.payload).bytes();
}

Status DecodeContribution(const std::string& bytes, Contribution* c) {
  WireReader r(bytes);
  CCO_RETURN_IF_ERROR(r.Get(&c->seq));
  CCO_RETURN_IF_ERROR(r.GetString(&c->op));
  return r.GetString(&c->payload);
}

// The hub's answer: a status, then (on success) every rank's payload.
std::string EncodeAnswer(const Status& s, const std::vector<std::string>& all) {
  WireWriter w;
  w.Put(static_cast<int32_t>(s.code())).PutString(s.message()).Put(static_cast<uint64_t>(all.size()));
  for (const auto& p : all) w.PutString(p);
  return w.bytes();
}

Status DecodeAnswer(const std::string& bytes, int nRanks, std::vector<std::string>* all) {
  WireReader r(bytes);
  int32_t code = 0;
  std::string message;
  uint64_t n = 0;
  CCO_RETURN_IF_ERROR(r.Get(&code));
  CCO_RETURN_IF_ERROR(r.GetString(&message));
  if (code != ccoSuccess) return Status(static_cast<ccoResult_t>(code), message);
  CCO_RETURN_IF_ERROR(r.Get(&n));
  if (n != static_cast<uint64_t>(nRanks)) return RemoteError("the hub answered for a different number of ranks");
  all->resize(n);
  for (auto& p : *all) CCO_RETURN_IF_ERROR(r.GetString(&p));
  return Status::Ok();
}

}  // namespace

Status Bootstrap::Create(const UniqueIdContents& id, int nRanks, int rank, int64_t timeoutMs,
                         std::unique_ptr<Bootstrap>* out) {
  std::unique_ptr<Bootstrap> b(new Bootstrap(nRanks, rank, timeoutMs));
  Fd hub_listener;
  RootHello hello{id.nonce, nRanks, rank, SockAddr{}};
  if (rank == 0) {
    // The hub listens on the same interface family as the root address uses.
    InterfaceAddress local;
    CCO_RETURN_IF_ERROR(BootstrapAddress(&local));
    CCO_RETURN_IF_ERROR(ListenTcp(local.address, &hub_listener, &hello.hub).Prefixed("hub listener"));
  }

  const Deadline deadline = DeadlineIn(timeoutMs);
  Fd root;
  CCO_RETURN_IF_ERROR(ConnectTcp(id.root, deadline, &root)
                          .Prefixed("reaching the rendezvous root at " + id.root.ToString() +
                                    " (is the id fresh, and is its minting process alive?)"));
  CCO_RETURN_IF_ERROR(SendFrame(root.get(), EncodeHello(hello), deadline).Prefixed("rendezvous"));
  std::string bytes;
  // The root answers once every rank arrived, or when its own timeout expires: wait for it.
  Status got = RecvFrame(root.get(), &bytes, 4096, DeadlineIn(2 * timeoutMs + 1000));
  root.Reset();
  // If this process hosts the root, let it finish answering the others (an error too)
  // before this rank returns, and leave no root thread behind.
  AwaitLocalRoot(id.nonce, DeadlineIn(timeoutMs));
  if (!got.ok()) return got.Prefixed("waiting for the other ranks at the rendezvous root");
  RootWelcome welcome;
  CCO_RETURN_IF_ERROR(DecodeWelcome(bytes, &welcome));
  if (!welcome.status.ok()) return welcome.status;

  CCO_RETURN_IF_ERROR(b->ConnectHub(id, std::move(hub_listener), welcome.hub));
  *out = std::move(b);
  return Status::Ok();
}

Status Bootstrap::ConnectHub(const UniqueIdContents& id, Fd hubListener, const SockAddr& hub) {
  if (rank_ == 0) return AcceptPeers(id.nonce, std::move(hubListener));
  const Deadline deadline = DeadlineIn(timeout_ms_);
  CCO_RETURN_IF_ERROR(ConnectTcp(hub, deadline, &hub_).Prefixed("connecting to rank 0"));
  HubJoin join{id.nonce, rank_};
  return SendFrame(hub_.get(), WireWriter().Put(join).bytes(), deadline).Prefixed("joining rank 0");
}

Status Bootstrap::AcceptPeers(const Nonce& nonce, Fd hubListener) {
  peers_.resize(n_ranks_);
  const Deadline deadline = DeadlineIn(timeout_ms_);
  int joined = 1;
  while (joined < n_ranks_) {
    Fd conn;
    Status s = Accept(hubListener.get(), deadline, &conn);
    if (!s.ok()) {
      std::vector<int> missing;
      for (int r = 1; r < n_ranks_; ++r)
        if (!peers_[r].valid()) missing.push_back(r);
      Status error = Timeout(Fmt(RanksPhrase(missing),
                                 " did not connect to rank 0 within ", timeout_ms_, " ms"));
      SendErrorToPeers(error);
      return error;
    }
    std::string bytes;
    HubJoin join{};
    if (!RecvFrame(conn.get(), &bytes, 64, deadline).ok() || !WireReader(bytes).Get(&join).ok() ||
        !(join.nonce == nonce) || join.rank <= 0 || join.rank >= n_ranks_ || peers_[join.rank].valid())
      continue;  // not one of ours: drop it
    peers_[join.rank] = std::move(conn);
    ++joined;
  }
  return Status::Ok();
}

Status Bootstrap::Exchange(const std::string& op, const std::string& mine, std::vector<std::string>* all) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return Aborted(op + ": the communicator was aborted");
  if (!broken_.ok()) return broken_;
  ++seq_;
  Status s = rank_ == 0 ? HubExchange(op, mine, all) : PeerExchange(op, mine, all);
  return s.ok() ? s : Failed(s);
}

Status Bootstrap::HubExchange(const std::string& op, const std::string& mine, std::vector<std::string>* all) {
  all->assign(n_ranks_, std::string());
  (*all)[0] = mine;
  std::vector<bool> arrived(n_ranks_, false);
  arrived[0] = true;
  int waiting = n_ranks_ - 1;
  const Deadline deadline = DeadlineIn(timeout_ms_);
  Status error;
  while (waiting > 0 && error.ok()) {
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (int r = 1; r < n_ranks_; ++r) {
      if (arrived[r]) continue;
      fds.push_back({peers_[r].get(), POLLIN, 0});
      who.push_back(r);
    }
    const int64_t left = MsLeft(deadline);
    if (left <= 0) {
      error = Timeout(Fmt(op, ": ", RanksPhrase(who), " did not reach it within ",
                          timeout_ms_, " ms (CCO_TIMEOUT_MS)"));
      break;
    }
    int n = poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(left, 1000)));
    if (aborted_) return Aborted(op + ": the communicator was aborted");
    if (n < 0 && errno != EINTR) return ErrnoError("hub poll", errno);
    for (size_t i = 0; i < fds.size() && n > 0 && error.ok(); ++i) {
      if (!fds[i].revents) continue;
      const int r = who[i];
      std::string bytes;
      Contribution c;
      Status got = RecvFrame(peers_[r].get(), &bytes, kMaxMessage, deadline);
      if (!got.ok()) {
        error = RemoteError(Fmt(op, ": rank ", r, " left (its connection closed: did it exit or fail?)"));
      } else if (!DecodeContribution(bytes, &c).ok()) {
        error = RemoteError(Fmt(op, ": rank ", r, " sent a malformed message"));
      } else if (c.op != op || c.seq != seq_) {
        error = InvalidUsage(Fmt("collective calls differ across ranks: rank 0 is in ", op, " (call #", seq_,
                                 ") while rank ", r, " is in ", c.op, " (call #", c.seq, ")"));
      } else {
        (*all)[r] = std::move(c.payload);
        arrived[r] = true;
        --waiting;
      }
    }
  }
  if (!error.ok()) {
    SendErrorToPeers(error);
    return error;
  }
  const std::string answer = EncodeAnswer(Status::Ok(), *all);
  for (int r = 1; r < n_ranks_; ++r) {
    Status sent = SendFrame(peers_[r].get(), answer, DeadlineIn(timeout_ms_));
    if (!sent.ok()) {
      error = RemoteError(Fmt(op, ": rank ", r, " left before the answer reached it"));
      SendErrorToPeers(error);
      return error;
    }
  }
  return Status::Ok();
}

Status Bootstrap::PeerExchange(const std::string& op, const std::string& mine, std::vector<std::string>* all) {
  Contribution c{seq_, op, mine};
  Status sent = SendFrame(hub_.get(), EncodeContribution(c), DeadlineIn(timeout_ms_));
  std::string bytes;
  if (!sent.ok()) {
    // Rank 0 may have failed this call already (a rank left) and closed: its verdict,
    // sent before it went, is the better message.
    std::vector<std::string> unused;
    if (RecvFrame(hub_.get(), &bytes, kMaxMessage, DeadlineIn(100)).ok()) {
      Status verdict = DecodeAnswer(bytes, n_ranks_, &unused);
      if (!verdict.ok()) return verdict;
    }
    return RemoteError(Fmt(op, ": rank 0 is gone (", sent.message(), ")"));
  }
  // Rank 0 answers when all have arrived or after its own timeout: allow for both.
  Status got = RecvFrame(hub_.get(), &bytes, kMaxMessage, DeadlineIn(2 * timeout_ms_ + 1000));
  if (!got.ok()) {
    if (aborted_) return Aborted(op + ": the communicator was aborted");
    if (got.code() == ccoTimeout) return Timeout(Fmt(op, ": rank 0 did not answer within ", 2 * timeout_ms_, " ms"));
    return RemoteError(Fmt(op, ": rank 0 left (its connection closed: did it exit or fail?)"));
  }
  return DecodeAnswer(bytes, n_ranks_, all);
}

void Bootstrap::SendErrorToPeers(const Status& error) {
  const std::string answer = EncodeAnswer(error, {});
  for (int r = 1; r < static_cast<int>(peers_.size()); ++r)
    if (peers_[r].valid()) SendFrame(peers_[r].get(), answer, DeadlineIn(100));  // best effort
}

Status Bootstrap::AllGather(const std::string& op, const void* mine, size_t size, void* all) {
  std::vector<std::string> parts;
  CCO_RETURN_IF_ERROR(Exchange(op, std::string(static_cast<const char*>(mine), size), &parts));
  for (int r = 0; r < n_ranks_; ++r) {
    if (parts[r].size() != size) {
      std::lock_guard<std::mutex> lock(mu_);
      return Failed(InvalidUsage(Fmt(op, ": rank ", r, " contributed ", parts[r].size(), " bytes, this rank ", size)));
    }
    memcpy(static_cast<char*>(all) + r * size, parts[r].data(), size);
  }
  return Status::Ok();
}

Status Bootstrap::Barrier(const std::string& op) {
  std::vector<std::string> unused;
  return Exchange(op, std::string(), &unused);
}

void Bootstrap::Abort() {
  aborted_ = true;
  // Wake whatever waits on these sockets; the fds stay open until destruction.
  if (hub_.valid()) shutdown(hub_.get(), SHUT_RDWR);
  for (auto& p : peers_)
    if (p.valid()) shutdown(p.get(), SHUT_RDWR);
}

Status Bootstrap::Failed(Status s) {
  if (aborted_) s = Aborted(s.message() + " (the communicator was aborted)");
  if (broken_.ok()) broken_ = s;
  return s;
}

}  // namespace cco
