// SPDX-License-Identifier: MIT
//===-- device/impl/gda__types.hpp - the types of the GDA API ---*- C++ -*-===//
//
// What device/gda.hpp declares its handles with: the provider tag, the doorbell modes as
// compile-time values, and the fields of a device communicator a ccoGda handle keeps.
// No bodies of ccoGda here (device/impl/gda__funcs.hpp).
//
//===----------------------------------------------------------------------===//
#ifndef CCO_DEVICE_IMPL_GDA_TYPES_HPP_
#define CCO_DEVICE_IMPL_GDA_TYPES_HPP_

#include <stdint.h>

#include "abi/cco_abi.h"
#include "device/arch/arch.h"
#include "device/handles.hpp"
#include "device/team.hpp"
#include "device/trace.hpp"

/// The portable provider: descriptors go through host-visible rings to the proxy.
struct ccoGdaProxy {};

namespace cco {

// A handle's doorbell mode is a compile-time value, ccoGda<P, ccoGdaDoorbellMode> as the guide
// writes it: ccoGda<P, ccoGdaDeferred> and ccoGda<P, CCO_GDA_DOORBELL_DEFERRED> are one type.
constexpr ccoGdaDoorbellMode ccoGdaImmediate = CCO_GDA_DOORBELL_IMMEDIATE;
constexpr ccoGdaDoorbellMode ccoGdaDeferred = CCO_GDA_DOORBELL_DEFERRED;
constexpr ccoGdaDoorbellMode ccoGdaCallerOrdered = CCO_GDA_DOORBELL_CALLER_ORDERED;

namespace gda {

/// The fields of a device communicator a ccoGda handle uses, read once when the handle is
/// made, all at once (compute_all_here). A handle built on a ccoDevComm in global memory (the
/// bitcode's `dc`) would otherwise load them again after every fence and barrier (the compiler
/// must assume memory changed; a system-scope fence empties L1 on nvptx): a memory trip each,
/// on the critical path of every round trip.
struct HandleFields {
  ccoGdaTopo topo;
  bool valid;  // devcomm_valid
  int32_t connectionType, peerCount;
  uint32_t contextCount, signalCount, counterCount, barrierCount, ringDepth;
  uint32_t directMaxBytes, directGroupMaxBytes;  // the latter already the larger of the two
  uint64_t ringSlots, ringHost, ringDevice, signals, counters, flatBase, stride;
  uint64_t resources;  // this rank's copy of the resources
  uint32_t shadowOffset, flushOffset;
  uint64_t trace;        // the trace buffer (abi/trace.h), 0: off
  uint64_t hostSignals;  // the LSA senders' proxy words in host memory (abi/gda.h), 0: in `signals`
  template <class Read = ReadAsIs>
  CCO_DEVICE_API explicit HandleFields(const ccoDevComm& dc, Read read = Read())
      : topo(gda_topo(dc, read)),
        valid(devcomm_valid(dc, read)),
        connectionType(static_cast<int32_t>(read(dc.gdaConnectionType))),
        peerCount(read(dc.gdaPeerCount)),
        contextCount(read(dc.gdaContextCount)),
        signalCount(read(dc.gdaSignalCount)),
        counterCount(read(dc.gdaCounterCount)),
        barrierCount(read(dc.gdaBarrierCount)),
        ringDepth(read(dc.gdaRingDepth)),
        directMaxBytes(read(dc.gdaDirectMaxBytes)),
        directGroupMaxBytes(read(dc.gdaDirectGroupMaxBytes) > read(dc.gdaDirectMaxBytes)
                                ? read(dc.gdaDirectGroupMaxBytes)
                                : read(dc.gdaDirectMaxBytes)),
        ringSlots(read(dc.gdaRingSlots)),
        ringHost(read(dc.gdaRingHost)),
        ringDevice(read(dc.gdaRingDevice)),
        signals(read(dc.gdaSignals)),
        counters(read(dc.gdaCounters)),
        flatBase(read(dc.lsaFlatBase)),
        stride(read(dc.lsaStride)),
        resources(own_resources(dc, read)),
        shadowOffset(read(dc.gdaShadowOffset)),
        flushOffset(read(dc.gdaFlushOffset)),
        trace(cco::trace::kCompiled ? read(dc.trace) : 0),
        hostSignals(read(dc.gdaHostSignals)) {
    compute_all_here(topo.rank, topo.nRanks, topo.lsaRank, topo.lsaSize, topo.lsaWorldBase, topo.node, topo.nNodes,
                     topo.uniform, valid, connectionType, peerCount, contextCount, signalCount, counterCount,
                     barrierCount, ringDepth, directMaxBytes, directGroupMaxBytes, ringSlots, ringHost, ringDevice,
                     signals, counters, flatBase, stride, resources, shadowOffset, flushOffset, trace, hostSignals);
  }
};

}  // namespace gda
}  // namespace cco

#endif  // CCO_DEVICE_IMPL_GDA_TYPES_HPP_
