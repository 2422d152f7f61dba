// SPDX-License-Identifier: MIT
// Every field of every struct that crosses the kernel boundary, for the cross-target
// layout comparison (tests/abi/layout_test.py). A field added to abi/ without a line here
// makes the size check below fail, because the listed sizes no longer add up.
#ifndef CCO_TESTS_ABI_LAYOUT_FIELDS_H_
#define CCO_TESTS_ABI_LAYOUT_FIELDS_H_

// A table, laid out by hand: clang-format would run its entries together.
// clang-format off
#define CCO_LAYOUT_FIELDS(X)                                        \
  X(ccoTeam, nRanks) X(ccoTeam, rank) X(ccoTeam, stride) X(ccoTeam, worldBase) \
  X(ccoWindowDevice, magic) X(ccoWindowDevice, abiVersion) X(ccoWindowDevice, flatBase) \
  X(ccoWindowDevice, stride) X(ccoWindowDevice, offset) X(ccoWindowDevice, size) \
  X(ccoWindowDevice, lsaRank) X(ccoWindowDevice, lsaSize) X(ccoWindowDevice, rank) \
  X(ccoWindowDevice, lsaWorldBase) X(ccoWindowDevice, id) X(ccoWindowDevice, reserved0) X(ccoWindowDevice, reserved) \
  X(ccoDevComm, magic) X(ccoDevComm, abiVersion) X(ccoDevComm, size) X(ccoDevComm, flags) \
  X(ccoDevComm, ptr) X(ccoDevComm, rank) X(ccoDevComm, worldSize) X(ccoDevComm, lsaRank) \
  X(ccoDevComm, lsaSize) X(ccoDevComm, node) X(ccoDevComm, nNodes) X(ccoDevComm, teamWorld) \
  X(ccoDevComm, teamLsa) X(ccoDevComm, teamRail) X(ccoDevComm, lsaFlatBase) X(ccoDevComm, lsaStride) \
  X(ccoDevComm, resourceWindow) X(ccoDevComm, resourceOffset) X(ccoDevComm, resourceSize) \
  X(ccoDevComm, abortFlag) X(ccoDevComm, lsaBarrierCount) X(ccoDevComm, lsaBarrierEpochOffset) \
  X(ccoDevComm, lsaBarrierInboxOffset) X(ccoDevComm, hostSerial) X(ccoDevComm, gdaConnectionType) \
  X(ccoDevComm, gdaContextCount) X(ccoDevComm, gdaSignalCount) X(ccoDevComm, gdaCounterCount) \
  X(ccoDevComm, gdaBarrierCount) X(ccoDevComm, gdaShadowOffset) X(ccoDevComm, gdaFlushOffset) \
  X(ccoDevComm, sdmaQueueCount) X(ccoDevComm, gdaRingSlots) X(ccoDevComm, gdaRingHost) X(ccoDevComm, gdaRingDevice) \
  X(ccoDevComm, gdaSignals) X(ccoDevComm, gdaCounters) X(ccoDevComm, gdaRingDepth) X(ccoDevComm, gdaPeerCount) \
  X(ccoDevComm, gdaUniformNodes) X(ccoDevComm, gdaDirectMaxBytes) X(ccoDevComm, gdaDirectGroupMaxBytes) \
  X(ccoDevComm, waitTimeoutMs) \
  X(ccoDevComm, sdmaRingSlots) X(ccoDevComm, sdmaRingHost) X(ccoDevComm, sdmaRingDevice) X(ccoDevComm, sdmaSignals) \
  X(ccoDevComm, sdmaLocal) X(ccoDevComm, sdmaRingDepth) X(ccoDevComm, sdmaShadowOffset) X(ccoDevComm, trace) \
  X(ccoDevComm, hostBell) X(ccoDevComm, gdaHostSignals) X(ccoHostBell, rings) X(ccoHostBell, sleepers) \
  X(ccoGdaDesc, seq) X(ccoGdaDesc, op) X(ccoGdaDesc, signalOp) X(ccoGdaDesc, flags) X(ccoGdaDesc, signalId) \
  X(ccoGdaDesc, dstWindow) X(ccoGdaDesc, srcWindow) X(ccoGdaDesc, dstOffset) X(ccoGdaDesc, srcOffset) \
  X(ccoGdaDesc, bytes) X(ccoGdaDesc, signalValue) X(ccoGdaDesc, counterId) X(ccoGdaDesc, traceRecord) \
  X(ccoGdaRingHost, consumed) X(ccoGdaRingHost, pad0) X(ccoGdaRingHost, error) X(ccoGdaRingHost, errorPeer) \
  X(ccoGdaRingHost, consumerAsleep) X(ccoGdaRingHost, consumerWakeFd) X(ccoGdaRingHost, pad1) \
  X(ccoGdaRingDevice, head) X(ccoGdaRingDevice, released) X(ccoGdaRingDevice, consumedCache) X(ccoGdaRingDevice, failed) \
  X(ccoGdaRingDevice, pad) \
  X(ccoTraceBuffer, magic) X(ccoTraceBuffer, version) X(ccoTraceBuffer, capacity) X(ccoTraceBuffer, sampleCapacity) \
  X(ccoTraceBuffer, sampleEvery) X(ccoTraceBuffer, reserved0) X(ccoTraceBuffer, next) X(ccoTraceBuffer, samplesNext) \
  X(ccoTraceBuffer, hostClock) X(ccoTraceBuffer, reserved) \
  X(ccoTraceRecord, begin) X(ccoTraceRecord, end) X(ccoTraceRecord, bytes) X(ccoTraceRecord, ticket) \
  X(ccoTraceRecord, kind) X(ccoTraceRecord, flags) X(ccoTraceRecord, peer) X(ccoTraceRecord, ring) \
  X(ccoTraceRecord, block) X(ccoTraceRecord, warp) X(ccoTraceRecord, lane) X(ccoTraceRecord, status) \
  X(ccoTraceRecord, aux) X(ccoTraceRecord, seq) \
  X(ccoTraceClockSample, before) X(ccoTraceClockSample, host) X(ccoTraceClockSample, after) X(ccoTraceClockSample, seq)

#define CCO_LAYOUT_STRUCTS(X) \
  X(ccoTeam) X(ccoWindowDevice) X(ccoDevComm) X(ccoHostBell) X(ccoGdaDesc) X(ccoGdaRingHost) X(ccoGdaRingDevice) \
  X(ccoTraceBuffer) X(ccoTraceRecord) X(ccoTraceClockSample)
// clang-format on

#endif  // CCO_TESTS_ABI_LAYOUT_FIELDS_H_
