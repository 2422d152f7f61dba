// SPDX-License-Identifier: MIT
// A GDA descriptor for a rank of this host: checked, its windows resolved and bounded, then
// its copy and its signal word queued on the proxy's stream; a marker's counter behind them.
#include <stdio.h>

#include <algorithm>

#include "proxy/proxy.h"

namespace cco {
namespace {

// What every GDA descriptor must satisfy, whichever backend carries it.
Status CheckGdaDesc(const GdaResources& g, const ccoGdaDesc& d) {
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET:
    case CCO_GDA_OP_SIGNAL: break;
    case CCO_GDA_OP_PUT_VALUE:
      if (d.bytes > 8) return InvalidArgument(Fmt("put_value of ", d.bytes, " bytes (at most 8)"));
      break;
    default: return InvalidArgument(Fmt("unknown GDA operation ", static_cast<int>(d.op)));
  }
  if (d.signalOp != CCO_SIGNAL_NONE) {
    if (d.signalOp != CCO_SIGNAL_INC && d.signalOp != CCO_SIGNAL_ADD)
      return InvalidArgument(Fmt("unknown signal operation ", static_cast<int>(d.signalOp)));
    if (d.signalId >= g.signalIds) return InvalidArgument(Fmt("signal ", d.signalId, " is not below ", g.signalIds));
  }
  if ((d.flags & CCO_GDA_DESC_MARKER) && d.counterId >= g.counterWords)
    return InvalidArgument(Fmt("counter ", d.counterId, " is not below ", g.counterWords));
  return Status::Ok();
}

}  // namespace

// A put (this rank's source, `theirs`'s destination) or a get (the other way round): both
// windows resolved and bounded, as addresses in this rank's flat range.
Status Proxy::Endpoints(const ccoGdaDesc& d, uint64_t theirs, uint64_t* dst, uint64_t* src) {
  const bool put = d.op == CCO_GDA_OP_PUT;
  uint64_t dstOffset = 0, srcOffset = 0;
  CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &dstOffset).Prefixed("the destination"));
  CCO_RETURN_IF_ERROR(Resolve(d.srcWindow, d.srcOffset, d.bytes, &srcOffset).Prefixed("the source"));
  *dst = (put ? theirs : ctx_.MySlice()) + dstOffset;
  *src = (put ? ctx_.MySlice() : theirs) + srcOffset;
  return Status::Ok();
}

// Checks everything first, so that a descriptor the proxy refuses has no effect at all.
Status Proxy::Issue(GdaResources& g, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, bool* deferred,
                    CopyQueue& stream) {
  const ProxyContext& c = ctx_;
  CCO_RETURN_IF_ERROR(CheckGdaDesc(g, d));
  const int peerIndex = static_cast<int>(ring % g.peerCount);
  if (g.peerNet[peerIndex]) {
    *deferred = true;
    return IssueNet(g, ring, ticket, d);
  }
  const int32_t peer = g.peerRank[peerIndex];
  const int host = g.peerHost[peerIndex];
  if (host < 0) return Unsupported(Fmt("rank ", peer, " is on another host and no network backend serves it"));

  uint64_t dst = 0, src = 0;
  bool inlineWord = false;
  switch (d.op) {
    case CCO_GDA_OP_PUT:
    case CCO_GDA_OP_GET: CCO_RETURN_IF_ERROR(Endpoints(d, c.hostSlices[host], &dst, &src)); break;
    case CCO_GDA_OP_PUT_VALUE: {
      uint64_t dstOffset = 0;
      CCO_RETURN_IF_ERROR(Resolve(d.dstWindow, d.dstOffset, d.bytes, &dstOffset).Prefixed("the destination"));
      dst = c.hostSlices[host] + dstOffset;
      inlineWord = d.bytes == sizeof(uint64_t) && dst % sizeof(uint64_t) == 0;  // a stream write below
      if (inlineWord) break;
      // The slot's own staging word: nobody overwrites it before the copy ran.
      *g.rings.stagingWord(ring, ticket) = d.srcOffset;
      src = g.rings.stagingAddress(ring, ticket);
      break;
    }
    default: break;  // a signal alone
  }
  if (inlineWord)  // an aligned word: a stream write, no copy engine
    CCO_RETURN_IF_ERROR(stream.WriteValue64(dst, d.srcOffset));
  else if (d.op != CCO_GDA_OP_SIGNAL && d.bytes > 0)
    CCO_RETURN_IF_ERROR(stream.Copy(dst, src, d.bytes, d.op == CCO_GDA_OP_PUT_VALUE ? 0 : WindowPair(d)));
  // Behind the data: this rank's word of the target's signal, its new sum. Where nothing
  // queued before still runs, an LSA peer's host word (abi/gda.h), by a CPU store that lands
  // in about a microsecond and after everything before it; else the word on the target's
  // device, by a stream write behind that work. Each word has its own running sum.
  uint64_t signalAddress = 0, sum = 0;
  if (d.signalOp != CCO_SIGNAL_NONE) {
    const uint64_t add = d.signalOp == CCO_SIGNAL_INC ? 1 : d.signalValue;
    const int32_t lsaPeer = peer - c.topo.lsaWorldBase;
    if (g.hostSignals && !c.hostWordsCpu.empty() && lsaPeer >= 0 && lsaPeer < c.topo.lsaSize && stream.Idle()) {
      const uint64_t offset =
          g.hostSignalOffset + sizeof(uint64_t) * cco_gda_host_signal_word(d.signalId, c.topo.lsaRank, c.topo.lsaSize);
      signalAddress = c.hostWordsDevice[host] + offset;
      sum = g.sentToHost(peerIndex, d.signalId) += add;
      __atomic_store_n(reinterpret_cast<uint64_t*>(c.hostWordsCpu[host] + offset), sum, __ATOMIC_RELEASE);
    } else {
      signalAddress = c.hostSlices[host] + g.signalOffset +
                      sizeof(uint64_t) * cco_gda_signal_word(d.signalId, c.topo.rank, c.topo.nRanks);
      sum = g.sentTo(peerIndex, d.signalId) += add;
      CCO_RETURN_IF_ERROR(stream.WriteValue64(signalAddress, sum));
    }
  }
  if (trace_)
    fprintf(stderr,
            "cco proxy rank %d: ring %u ticket %llu op %d peer %d (host %d) dst 0x%llx src 0x%llx bytes %llu, "
            "signal %u op %d: word 0x%llx = %llu\n",
            c.topo.rank, ring, static_cast<unsigned long long>(ticket), d.op, peer, host,
            static_cast<unsigned long long>(dst), static_cast<unsigned long long>(src),
            static_cast<unsigned long long>(d.bytes), d.signalId, d.signalOp,
            static_cast<unsigned long long>(signalAddress), static_cast<unsigned long long>(sum));
  // Everything issued before is ahead of it on the stream.
  if (d.flags & CCO_GDA_DESC_MARKER) CCO_RETURN_IF_ERROR(PassMarker(g, ring, d.counterId, stream));
  return Status::Ok();
}

// The counter counts, per context, the markers every ring of the context has passed.
Status Proxy::PassMarker(GdaResources& g, uint32_t ring, uint32_t counterId, CopyQueue& stream) {
  const ProxyContext& c = ctx_;
  const int context = static_cast<int>(ring / g.peerCount), peerIndex = static_cast<int>(ring % g.peerCount);
  ++g.mark(context, counterId, peerIndex);
  uint64_t total = 0;
  for (int ctx = 0; ctx < g.contexts; ++ctx) {
    uint64_t passed = g.mark(ctx, counterId, 0);
    for (int p = 1; p < g.peerCount; ++p) passed = std::min(passed, g.mark(ctx, counterId, p));
    total += passed;
  }
  return stream.WriteValue64(c.MySlice() + g.counterOffset + sizeof(uint64_t) * counterId, total);
}

}  // namespace cco
