// SPDX-License-Identifier: MIT
// An SDMA descriptor: both ends checked against the live windows, then a copy on its queue's
// stream and the pool slots it counts in.
#include <stdio.h>

#include "proxy/proxy.h"

namespace cco {

// An SDMA descriptor on resolved pointers: each offset from the LSA flat base must fall in the
// slice of the rank it names (a put: the destination `peer`'s, the source this rank's; a get
// the other way round) and inside one live window there.
Status Proxy::FlatEndpoints(const ccoGdaDesc& d, int32_t peer, uint64_t* dst, uint64_t* src) {
  const ProxyContext& c = ctx_;
  const bool put = d.op == CCO_GDA_OP_PUT;
  struct End {
    const char* what;
    uint64_t offset;
    int32_t rank;
    uint64_t* address;
  } ends[] = {{"the destination", d.dstOffset, put ? peer : c.topo.lsaRank, dst},
              {"the source", d.srcOffset, put ? c.topo.lsaRank : peer, src}};
  for (const End& e : ends) {
    const uint64_t rank = e.offset / c.stride, inSlice = e.offset % c.stride;
    if (rank != static_cast<uint64_t>(e.rank))
      return InvalidArgument(Fmt(e.what, " pointer lies in LSA rank ", rank, "'s memory, not rank ", e.rank, "'s"));
    if (!c.windows->Covers(inSlice, d.bytes))
      return InvalidArgument(Fmt(e.what, " pointer's ", d.bytes, " bytes at offset ", inSlice, " of LSA rank ", e.rank,
                                 "'s memory are not inside one live window"));
    *e.address = c.LsaSlice(e.rank) + inSlice;
  }
  return Status::Ok();
}

// An SDMA descriptor: a copy on its queue's stream, then the pool slots it counts in.
// Checks everything first, so that a descriptor the proxy refuses has no effect at all.
Status Proxy::Issue(SdmaResources& s, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, CopyQueue& stream) {
  const ProxyContext& c = ctx_;
  const int32_t peer = static_cast<int32_t>(ring / s.queues), queue = static_cast<int32_t>(ring % s.queues);
  if (d.op != CCO_GDA_OP_PUT && d.op != CCO_GDA_OP_GET)
    return InvalidArgument(Fmt("unknown SDMA operation ", int{d.op}));
  if (d.signalOp != CCO_SIGNAL_NONE && d.signalOp != CCO_SIGNAL_INC)
    return InvalidArgument(Fmt("SDMA signal operation ", int{d.signalOp}, " (only INC)"));
  const bool put = d.op == CCO_GDA_OP_PUT;
  uint64_t dst = 0, src = 0;
  CCO_RETURN_IF_ERROR((d.flags & CCO_SDMA_DESC_FLAT) ? FlatEndpoints(d, peer, &dst, &src)
                                                     : Endpoints(d, c.LsaSlice(peer), &dst, &src));
  // On the queue's stream (Drain's streamOf); pointer descriptors name no window: never joined.
  CCO_RETURN_IF_ERROR(stream.Copy(dst, src, d.bytes, (d.flags & CCO_SDMA_DESC_FLAT) ? 0 : WindowPair(d)));
  // Behind the data on the queue's stream: the counts, each in a slot only this proxy writes.
  if (put && d.signalOp == CCO_SIGNAL_INC) {
    const uint32_t theirs = cco_sdma_slot(s.lsaRank, queue, static_cast<uint32_t>(s.queues));
    CCO_RETURN_IF_ERROR(stream.WriteValue64(c.LsaSlice(peer) + s.signalOffset + 8ull * theirs, ++s.sent[ring]));
  }
  if ((!put && d.signalOp == CCO_SIGNAL_INC) || (put && (d.flags & CCO_SDMA_DESC_LOCAL)))
    CCO_RETURN_IF_ERROR(stream.WriteValue64(c.MySlice() + s.localOffset + 8ull * ring, ++s.landed[ring]));
  if (trace_)
    fprintf(stderr, "cco proxy rank %d: SDMA peer %d queue %d ticket %llu %s %llu bytes, signal %d, flags %u\n",
            c.topo.rank, peer, queue, static_cast<unsigned long long>(ticket), put ? "put" : "get",
            static_cast<unsigned long long>(d.bytes), d.signalOp, d.flags);
  return Status::Ok();
}

}  // namespace cco
