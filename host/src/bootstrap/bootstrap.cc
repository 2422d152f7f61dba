// SPDX-License-Identifier: MIT
#include "bootstrap/bootstrap.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>

#include "bootstrap/acceptor.h"
#include "bootstrap/interface.h"
#include "bootstrap/messages.h"
#include "bootstrap/root.h"
#include "common/text.h"

namespace cco {
namespace {

// Pending (unauthenticated) connections the hub keeps at once, at least.
constexpr size_t kHubMaxPending = 256;

}  // namespace

Status Bootstrap::Create(const UniqueIdContents& id, int nRanks, int rank, int64_t timeoutMs,
                         std::unique_ptr<Bootstrap>* out, PhaseTrace* trace) {
  std::unique_ptr<Bootstrap> b(new Bootstrap(nRanks, rank, timeoutMs));
  Fd hub_listener;
  RootHello hello{nRanks, rank, SockAddr{}};
  if (rank == 0) {
    // The hub listens on the same interface family as the root address uses.
    InterfaceAddress local;
    CCO_RETURN_IF_ERROR(BootstrapAddress(&local));
    CCO_RETURN_IF_ERROR(ListenTcp(local.address, &hub_listener, &hello.hub).Prefixed("hub listener"));
  }

  const Deadline deadline = DeadlineIn(timeoutMs);
  Channel root;
  // The root listens before its id exists, so a refused connection is no "not yet": the
  // root is gone. It serves one rendezvous and closes (the id was used already), or the
  // process that minted the id has exited. Said at once, instead of after the whole bound.
  bool refused = false;
  Status reached = ConnectChannel(id.root, id.secret, "root", HandshakeMs(timeoutMs), deadline, &root, &refused);
  if (refused)
    return InvalidUsage(Fmt("ccoCommCreate: nobody listens at this unique id's rendezvous root (", id.root.ToString(),
                            "): the id was used already (an id serves one communicator: call ccoGetUniqueId for "
                            "each), or the process that minted it has exited"));
  CCO_RETURN_IF_ERROR(reached.Prefixed("reaching the rendezvous root at " + id.root.ToString() +
                                       " (is the id fresh, and is its minting process alive?)"));
  CCO_RETURN_IF_ERROR(root.Send(EncodeHello(hello), deadline).Prefixed("rendezvous"));
  std::string bytes;
  // The root answers once every rank arrived, or at its bound (from the first arrival).
  Status got = root.Recv(&bytes, kMaxWelcomeBytes, DeadlineIn(timeoutMs + AnswerMarginMs(timeoutMs)));
  root.Reset();
  // If this process hosts the root, let it finish answering the others (an error too)
  // before this rank returns, and leave no root thread behind.
  AwaitLocalRoot(id.secret, DeadlineIn(timeoutMs));
  if (!got.ok()) return got.Prefixed("waiting for the other ranks at the rendezvous root");
  RootWelcome welcome;
  CCO_RETURN_IF_ERROR(DecodeWelcome(bytes, &welcome).Prefixed("the rendezvous root's answer"));
  if (!welcome.status.ok()) return welcome.status;
  if (trace != nullptr) trace->Mark("rendezvous");

  CCO_RETURN_IF_ERROR(b->ConnectHub(id.secret, std::move(hub_listener), welcome.hub));
  if (trace != nullptr) trace->Mark("hub");
  *out = std::move(b);
  return Status::Ok();
}

Status Bootstrap::ConnectHub(const Key& secret, Fd hubListener, const SockAddr& hub) {
  if (rank_ == 0) return AcceptPeers(secret, std::move(hubListener));
  const Deadline deadline = DeadlineIn(timeout_ms_);
  // Rank 0 listens before it greets the root, and stops only once every rank joined or its
  // bound passed: a refused connection means it is gone. Said at once, not at the bound.
  bool refused = false;
  Status reached = ConnectChannel(hub, secret, "hub", HandshakeMs(timeout_ms_), deadline, &hub_, &refused);
  if (refused)
    return RemoteError(Fmt("ccoCommCreate: rank 0 refused the connection to its hub (", hub.ToString(),
                           "): its process has ended, or it gave up on this communicator already"));
  CCO_RETURN_IF_ERROR(reached.Prefixed("connecting to rank 0"));
  return hub_.Send(EncodeJoin(HubJoin{rank_}), deadline).Prefixed("joining rank 0");
}

Status Bootstrap::AcceptPeers(const Key& secret, Fd hubListener) {
  peers_.resize(n_ranks_);
  const Deadline deadline = DeadlineIn(timeout_ms_);
  // Every rank may be mid-handshake at once.
  Acceptor acceptor(hubListener.get(), secret,
                    AcceptorOptions{"hub", HandshakeMs(timeout_ms_), std::max<size_t>(kHubMaxPending, n_ranks_),
                                    kMaxJoinBytes, false});
  int joined = 1;
  while (joined < n_ranks_) {
    Arrival a;
    Status s = acceptor.Next(deadline, &a);
    if (!s.ok()) {
      std::vector<int> missing;
      for (int r = 1; r < n_ranks_; ++r)
        if (!peers_[r].valid()) missing.push_back(r);
      Status error = Timeout(Fmt(RanksPhrase(missing), " did not connect to rank 0 within ", timeout_ms_, " ms"));
      SendErrorToPeers(error);
      return error;
    }
    HubJoin join;
    // Only authenticated ranks get here; one that claims a rank twice, or one out of range,
    // is dropped, and the rank it claimed still has to come.
    if (!DecodeJoin(a.firstFrame, &join).ok() || join.rank <= 0 || join.rank >= n_ranks_ || peers_[join.rank].valid())
      continue;
    peers_[join.rank] = std::move(a.channel);
    ++joined;
  }
  return WatchPeers();
}

Status Bootstrap::WatchPeers() {
  ready_.Reset(epoll_create1(EPOLL_CLOEXEC));
  if (!ready_.valid()) return ErrnoError("hub epoll_create1", errno);
  for (int r = 1; r < n_ranks_; ++r) {
    epoll_event e = {};  // armed by each call (HubGather)
    e.data.u32 = static_cast<uint32_t>(r);
    if (epoll_ctl(ready_.get(), EPOLL_CTL_ADD, peers_[r].fd(), &e) != 0) return ErrnoError("hub epoll_ctl", errno);
  }
  return Status::Ok();
}

Status Bootstrap::Call(const std::string& op, const std::string& mine, const Answers& answers, size_t maxAnswer,
                       std::string* answer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return Aborted(op + ": the communicator was aborted");
  if (!broken_.ok()) return broken_;
  if (mine.size() > kMaxContribution)
    return InternalError(Fmt(op, ": a ", mine.size(), "-byte contribution (limit ", kMaxContribution, ")"));
  ++seq_;
  Status s = rank_ == 0 ? HubCall(op, mine, answers, answer) : PeerCall(op, mine, maxAnswer, answer);
  if (s.ok()) s = AnswerStatus(*answer);  // a failure rank 0 sent as this call's answer
  return s.ok() ? s : Failed(s);
}

Status Bootstrap::HubCall(const std::string& op, const std::string& mine, const Answers& answers, std::string* answer) {
  std::vector<std::string> all;
  CCO_RETURN_IF_ERROR(HubGather(op, mine, &all));
  std::vector<std::string> made;
  std::vector<uint32_t> which(n_ranks_, 0);
  Status error = answers(all, &made, &which);
  if (!error.ok()) {
    SendErrorToPeers(error);
    return error;
  }
  for (int r = 1; r < n_ranks_; ++r) {
    Status sent = peers_[r].Send(made[which[r]], DeadlineIn(timeout_ms_));
    if (!sent.ok()) {
      error = RemoteError(Fmt(op, ": rank ", r, " left before the answer reached it"));
      SendErrorToPeers(error);
      return error;
    }
  }
  *answer = std::move(made[which[0]]);
  return Status::Ok();
}

Status Bootstrap::HubGather(const std::string& op, const std::string& mine, std::vector<std::string>* all) {
  all->assign(n_ranks_, std::string());
  (*all)[0] = mine;
  std::vector<bool> arrived(n_ranks_, false);
  arrived[0] = true;
  int waiting = n_ranks_ - 1;
  // Each rank's connection is armed for one readiness event per call: a rank that has
  // contributed (and may close meanwhile) wakes nobody until the next call.
  for (int r = 1; r < n_ranks_; ++r) {
    epoll_event e = {};
    e.events = EPOLLIN | EPOLLONESHOT;
    e.data.u32 = static_cast<uint32_t>(r);
    if (epoll_ctl(ready_.get(), EPOLL_CTL_MOD, peers_[r].fd(), &e) != 0) return ErrnoError("hub epoll_ctl", errno);
  }
  const Deadline deadline = DeadlineIn(timeout_ms_);
  Status error;
  std::vector<epoll_event> events(256);
  while (waiting > 0 && error.ok()) {
    const int64_t left = MsLeft(deadline);
    if (left <= 0) {
      std::vector<int> who;
      for (int r = 1; r < n_ranks_; ++r)
        if (!arrived[r]) who.push_back(r);
      error =
          Timeout(Fmt(op, ": ", RanksPhrase(who), " did not reach it within ", timeout_ms_, " ms (CCO_TIMEOUT_MS)"));
      break;
    }
    int n = epoll_wait(ready_.get(), events.data(), static_cast<int>(events.size()),
                       static_cast<int>(std::min<int64_t>(left, 1000)));
    if (aborted_) return Aborted(op + ": the communicator was aborted");
    if (n < 0 && errno != EINTR) return ErrnoError("hub epoll_wait", errno);
    for (int i = 0; i < n && error.ok(); ++i) {
      const uint32_t r = events[i].data.u32;
      if (r == 0 || r >= static_cast<uint32_t>(n_ranks_) || arrived[r]) continue;
      std::string bytes;
      Contribution c;
      Status got = peers_[r].Recv(&bytes, kMaxContributionBytes, deadline);
      if (!got.ok()) {
        if (aborted_) return Aborted(op + ": the communicator was aborted");
        error = got.code() == ccoTimeout
                    ? RemoteError(Fmt(op, ": rank ", r, " sent part of a message, then nothing until the bound"))
                : IsConnectionLost(got)
                    ? RemoteError(Fmt(op, ": rank ", r, " left (its connection closed: did it exit or fail?)"))
                    : RemoteError(Fmt(op, ": rank ", r, " sent a bad message: ", got.message()));
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
  return Status::Ok();
}

Status Bootstrap::PeerCall(const std::string& op, const std::string& mine, size_t maxAnswer, std::string* answer) {
  Status sent = hub_.Send(EncodeContribution(Contribution{seq_, op, mine}), DeadlineIn(timeout_ms_));
  std::string bytes;
  if (!sent.ok()) {
    // Rank 0 may have failed this call already (a rank left) and closed: its verdict,
    // sent before it went, is the better message.
    if (hub_.Recv(&bytes, maxAnswer, DeadlineIn(100)).ok()) {
      Status verdict = AnswerStatus(bytes);
      if (!verdict.ok()) return verdict;
    }
    return RemoteError(Fmt(op, ": rank 0 is gone (", sent.message(), ")"));
  }
  // Rank 0 answers when all have arrived or at its own bound: wait a little longer.
  Status got = hub_.Recv(&bytes, maxAnswer, DeadlineIn(timeout_ms_ + AnswerMarginMs(timeout_ms_)));
  if (!got.ok()) {
    if (aborted_) return Aborted(op + ": the communicator was aborted");
    if (got.code() == ccoTimeout)
      return Timeout(
          Fmt(op, ": rank 0 did not answer within ", timeout_ms_, " ms (it is hung, or entered the call late)"));
    if (IsConnectionLost(got))
      return RemoteError(Fmt(op, ": rank 0 left (its connection closed: did it exit or fail?)"));
    return RemoteError(Fmt(op, ": rank 0's answer was bad: ", got.message()));
  }
  *answer = std::move(bytes);
  return Status::Ok();
}

void Bootstrap::SendErrorToPeers(const Status& error) {
  const std::string answer = EncodeAnswer(error, {});
  for (int r = 1; r < static_cast<int>(peers_.size()); ++r)
    if (peers_[r].valid()) peers_[r].Send(answer, DeadlineIn(100));  // best effort
}

Status Bootstrap::Exchange(const std::string& op, const std::string& mine, std::vector<std::string>* all) {
  if (mine.size() > kMaxContribution)
    return InternalError(Fmt(op, ": a ", mine.size(), "-byte contribution (limit ", kMaxContribution, ")"));
  std::string answer;
  CCO_RETURN_IF_ERROR(Call(
      op, mine,
      [](std::vector<std::string>& parts, std::vector<std::string>* answers, std::vector<uint32_t>*) {
        answers->push_back(EncodeAnswer(Status::Ok(), parts));
        return Status::Ok();
      },
      MaxAnswerBytes(n_ranks_), &answer));
  Status s = DecodeAnswer(answer, n_ranks_, all);
  if (s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  return Failed(s.Prefixed(op + ": rank 0's answer"));
}

Status Bootstrap::Agree(const std::string& op, const Status& local, const std::string& value, Verdict* verdict) {
  if (value.size() > kMaxAgreeValue)
    return InternalError(Fmt(op, ": a ", value.size(), "-byte value (limit ", kMaxAgreeValue, ")"));
  std::string answer;
  CCO_RETURN_IF_ERROR(Call(
      op, EncodeReport(Report{local, value}),
      [&op](std::vector<std::string>& parts, std::vector<std::string>* answers, std::vector<uint32_t>*) {
        std::vector<Report> reports(parts.size());
        for (size_t r = 0; r < parts.size(); ++r)
          if (!DecodeReport(parts[r], &reports[r]).ok())
            return RemoteError(Fmt(op, ": rank ", r, " sent a malformed report"));
        answers->push_back(EncodeVerdict(Judge(reports)));
        return Status::Ok();
      },
      // A verdict carries two values and a status at most.
      2 * kMaxAgreeValue + 2 * kMaxStatusText + 256, &answer));
  Status s = DecodeVerdict(answer, n_ranks_, verdict);
  if (s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  return Failed(s.Prefixed(op + ": rank 0's answer"));
}

Status Bootstrap::ExchangeGrouped(const std::string& op, uint64_t group, const std::string& shared,
                                  const std::string& grouped, std::string* allShared,
                                  std::vector<GroupMember>* members) {
  if (shared.size() > kMaxSharedPart || grouped.size() > kMaxGroupedPart)
    return InternalError(Fmt(op, ": parts of ", shared.size(), " and ", grouped.size(), " bytes (limits ",
                             kMaxSharedPart, " and ", kMaxGroupedPart, ")"));
  std::string answer;
  CCO_RETURN_IF_ERROR(Call(
      op, EncodeGroupedPart(GroupedPart{group, shared, grouped}),
      [&op](std::vector<std::string>& parts, std::vector<std::string>* answers, std::vector<uint32_t>* which) {
        std::vector<GroupedPart> decoded(parts.size());
        std::string everyShared;
        for (size_t r = 0; r < parts.size(); ++r) {
          if (!DecodeGroupedPart(parts[r], &decoded[r]).ok())
            return RemoteError(Fmt(op, ": rank ", r, " sent a malformed contribution"));
          if (decoded[r].shared.size() != decoded[0].shared.size())
            return InvalidUsage(Fmt(op, ": rank ", r, " contributed ", decoded[r].shared.size(), " bytes, rank 0 ",
                                    decoded[0].shared.size()));
          everyShared += decoded[r].shared;
          std::string().swap(parts[r]);
        }
        // One answer per group, in order of each group's lowest rank.
        std::map<uint64_t, uint32_t> index;
        std::vector<std::vector<GroupMember>> groups;
        for (size_t r = 0; r < decoded.size(); ++r) {
          auto it = index.emplace(decoded[r].group, static_cast<uint32_t>(groups.size())).first;
          if (it->second == groups.size()) groups.emplace_back();
          groups[it->second].push_back(GroupMember{static_cast<int32_t>(r), std::move(decoded[r].grouped)});
          (*which)[r] = it->second;
        }
        for (const auto& g : groups) answers->push_back(EncodeGroupAnswer(decoded[0].shared.size(), everyShared, g));
        return Status::Ok();
      },
      MaxAnswerBytes(n_ranks_), &answer));
  size_t sharedSize = 0;
  Status s = DecodeGroupAnswer(answer, n_ranks_, allShared, &sharedSize, members);
  if (s.ok() && sharedSize != shared.size())
    s = InvalidUsage(Fmt(op, ": rank 0 contributed ", sharedSize, " bytes, this rank ", shared.size()));
  bool found = false;
  for (const auto& m : *members) found |= m.rank == rank_;
  if (s.ok() && !found) s = RemoteError(Fmt(op, ": rank 0 answered with a group this rank is not in"));
  if (s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  return Failed(s.Prefixed(op));
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
  Verdict unused;
  return Agree(op, Status::Ok(), std::string(), &unused);
}

void Bootstrap::Abort() {
  aborted_ = true;
  // Wake whatever waits on these sockets; the fds stay open until destruction.
  if (hub_.valid()) shutdown(hub_.fd(), SHUT_RDWR);
  for (auto& p : peers_)
    if (p.valid()) shutdown(p.fd(), SHUT_RDWR);
}

Status Bootstrap::Failed(Status s) {
  if (aborted_) s = Aborted(s.message() + " (the communicator was aborted)");
  if (broken_.ok()) broken_ = s;
  return s;
}

}  // namespace cco
