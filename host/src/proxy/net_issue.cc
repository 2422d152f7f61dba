// SPDX-License-Identifier: MIT
// A GDA descriptor for a rank the network backend serves: handed to the backend, its ring
// slot held until the backend reports it done at the target, and the completions applied.
#include <stdio.h>

#include <chrono>
#include <thread>

#include "bootstrap/socket.h"
#include "proxy/proxy.h"

namespace cco {

// A descriptor for a rank the network backend serves: this side's memory is resolved and
// bounded here, the peer's by the peer (which refuses what it cannot honour).
Status Proxy::IssueNet(GdaResources& g, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d) {
  const ProxyContext& c = ctx_;
  if (!threadNet_) return Unsupported("no network backend");
  const int peerIndex = static_cast<int>(ring % g.peerCount);
  NetOp op;
  op.peer = g.peerRank[peerIndex];
  op.gdaId = g.id;
  op.context = static_cast<int>(ring / g.peerCount);
  op.bytes = d.bytes;
  uint64_t localOffset = 0, theirs = 0;
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET: {
      // A put reads this rank's source and writes the peer's destination; a get the reverse.
      const bool put = d.op == CCO_GDA_OP_PUT;
      op.kind = put ? NetOpKind::kPut : NetOpKind::kGet;
      CCO_RETURN_IF_ERROR(
          Resolve(d.srcWindow, d.srcOffset, d.bytes, put ? &localOffset : &theirs).Prefixed("the source"));
      CCO_RETURN_IF_ERROR(
          Resolve(d.dstWindow, d.dstOffset, d.bytes, put ? &theirs : &localOffset).Prefixed("the destination"));
      op.window = put ? d.dstWindow : d.srcWindow;
      op.offset = put ? d.dstOffset : d.srcOffset;
      op.localWindow = put ? d.srcWindow : d.dstWindow;
      op.localOffset = put ? d.srcOffset : d.dstOffset;
      break;
    }
    case CCO_GDA_OP_PUT_VALUE:
      op.kind = NetOpKind::kPutValue;
      CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &theirs).Prefixed("the destination"));
      if (d.bytes == 0) op.kind = NetOpKind::kSignal;  // nothing to write: the signal alone
      op.window = d.dstWindow;
      op.offset = d.dstOffset;
      op.value = d.srcOffset;
      break;
    default: op.kind = NetOpKind::kSignal; break;
  }
  op.local = c.MySlice() + localOffset;
  if (d.signalOp != CCO_SIGNAL_NONE) {
    op.signal = true;
    op.signalId = d.signalId;
    op.signalAdd = d.signalOp == CCO_SIGNAL_INC ? 1 : d.signalValue;
    op.signalWindow = g.signalWindow;
    op.signalWindowOffset =
        g.signalWindowOffset + sizeof(uint64_t) * cco_gda_signal_word(d.signalId, c.topo.rank, c.topo.nRanks);
  }
  // Nothing to write and no signal (a marker alone): an empty put, which completes in order.
  if (op.kind == NetOpKind::kSignal && !op.signal) op.kind = NetOpKind::kPut, op.bytes = 0;
  op.cookie = nextCookie_++;
  netPending_[op.cookie] =
      NetPending{g.shared_from_this(), ring, ticket, (d.flags & CCO_GDA_DESC_MARKER) != 0, d.counterId};
  ++g.netInFlight;
  if (trace_)
    fprintf(stderr,
            "cco proxy rank %d: ring %u ticket %llu op %d to rank %d over %s, window %u offset %llu bytes %llu\n",
            c.topo.rank, ring, static_cast<unsigned long long>(ticket), d.op, op.peer, threadNet_->name(), op.window,
            static_cast<unsigned long long>(op.offset), static_cast<unsigned long long>(op.bytes));
  threadNet_->Post(op, *this);
  return Status::Ok();
}

bool Proxy::ProgressNet(NetBackend& net) {
  netDone_.clear();
  const bool did = net.Progress(*this, &netDone_);
  // The peers lost in it first: the verdict (which rank is at fault) is the communicator's
  // error before any op to them fails, or an op in flight to a rank that failed because of
  // the death and left would name that rank instead.
  TakeNetLosses(net);
  for (const NetCompletion& done : netDone_) {
    auto it = netPending_.find(done.cookie);
    if (it == netPending_.end()) continue;
    NetPending p = std::move(it->second);
    netPending_.erase(it);
    if (!p.g) continue;
    GdaResources& g = *p.g;
    if (g.netAbandoned) {  // its device communicator is gone: nothing of it may be touched
      --g.netInFlight;
      continue;
    }
    const int32_t peer = g.peerRank[p.ring % g.peerCount];
    Status s = done.status;
    if (s.ok()) {
      g.rings.consumers[p.ring].Complete(p.ticket);
      if (p.marker) {
        CopyQueue stream(ctx_.platform, ctx_.device, stream_);  // a write alone: nothing held back
        s = PassMarker(g, p.ring, p.counterId, stream);
      }
    }
    if (!s.ok()) {
      const std::string where = Fmt("GDA context ", p.ring / g.peerCount, " over ", net.name());
      if (done.peerLost) {
        // Its loss was taken above: the error is said and the rings to the peer failed.
        if (!g.rings.consumers[p.ring].failed()) FailRing(g.rings, p.ring, CCO_GDA_RING_PEER_FAILED, peer);
      } else {
        Fail(g.rings, p.ring, peer, where, s);
      }
    }
    --g.netInFlight;
  }
  return did;
}

void Proxy::WaitNetIdle(const GdaResources* g) {
  const Deadline deadline = DeadlineIn(ctx_.timeoutMs);
  while (g->netInFlight.load() > 0 && thread_.joinable() && !stop_) {
    const bool aborted = ctx_.aborted != nullptr && ctx_.aborted->load();  // an abort ends host waits too
    if (aborted || MsLeft(deadline) <= 0) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (lastError_.empty() && !aborted)
          lastError_ = Fmt("ccoDevCommDestroy: ", g->netInFlight.load(), " GDA network op(s) still unanswered after ",
                           ctx_.timeoutMs, " ms");
      }
      // Their completions, whenever they come, must not touch what is about to be freed.
      const_cast<GdaResources*>(g)->netAbandoned = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace cco
