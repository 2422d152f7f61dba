// SPDX-License-Identifier: MIT
// What a peer's request may reach here (NetTargetMap): bytes of a live window, and the
// sender's own word of a signal of a device communicator the thread serves. The backend asks
// from the proxy's thread, again for every chunk, so nothing lands in a window that went away.
#include "proxy/proxy.h"

namespace cco {

Status Proxy::WindowAddress(uint32_t window, uint64_t offset, uint64_t bytes, uint64_t* address) {
  uint64_t inSlice = 0;
  CCO_RETURN_IF_ERROR(Resolve(window, offset, bytes, &inSlice));
  *address = ctx_.MySlice() + inSlice;
  return Status::Ok();
}

Status Proxy::AddSignal(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t add, uint64_t* address,
                        uint64_t* sum) {
  CCO_RETURN_IF_ERROR(SignalAddress(gdaId, signalId, sender, address));
  for (const auto& g : threadWork_) {
    if (g->id != gdaId) continue;
    if (g->received.empty()) return InvalidArgument("no network peers on this device communicator");
    *sum = g->received[static_cast<size_t>(signalId) * ctx_.topo.nRanks + sender] += add;
    return Status::Ok();
  }
  return InvalidArgument(Fmt("no device communicator ", gdaId, " here"));
}

Status Proxy::SignalAddress(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t* address) {
  const ProxyContext& c = ctx_;
  if (sender < 0 || sender >= c.topo.nRanks) return InvalidArgument(Fmt("sender ", sender));
  for (const auto& g : threadWork_) {
    if (g->id != gdaId) continue;
    if (signalId >= g->signalIds) return InvalidArgument(Fmt("signal ", signalId, " is not below ", g->signalIds));
    *address = c.MySlice() + g->signalOffset + sizeof(uint64_t) * cco_gda_signal_word(signalId, sender, c.topo.nRanks);
    return Status::Ok();
  }
  return InvalidArgument(Fmt("no device communicator ", gdaId, " here"));
}

}  // namespace cco
