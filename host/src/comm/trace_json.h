// SPDX-License-Identifier: MIT
// A device communicator's trace as a Chrome trace-event JSON file (the JSON object form:
// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {"cco": {...}}}), which
// Perfetto and chrome://tracing open. One process per rank (pid = rank), named "rank R";
// one thread per (block, warp) of the device ("block B warp W"), one for the proxy's issue
// work ("proxy") and as many as overlapping work needs for what the proxy has in flight
// ("proxy in flight"). Events:
//   X on a device thread      a call: a post from its start to its descriptor being in the
//                             ring (or its direct work done), a wait, flush or barrier, a
//                             kernel's own range (a fused operator's tile)
//   X on "proxy"              the proxy took the descriptor and queued its work
//   X on "proxy in flight"    from queued to complete (the ring's `consumed` passed it)
//   s / f (flow)              from the post to the proxy's issue, and on to its flight
//   i (process scope)         the buffer was full: calls were not recorded
// Timestamps are the host's CLOCK_MONOTONIC in microseconds (ns precision): device stamps
// are moved by the estimated (device - host) clock offset (EstimateClockOffset), so that the
// files of the ranks of one host line up as they are; `cco trace merge` also lines up hosts.
// Threads of one name are split into as many as needed so that events on one thread nest.
#ifndef CCO_HOST_COMM_TRACE_JSON_H_
#define CCO_HOST_COMM_TRACE_JSON_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "abi/cco_abi.h"
#include "common/status.h"
#include "proxy/trace_stamps.h"

namespace cco {

// What one flush took out of a device communicator's trace buffer.
struct TraceCapture {
  uint32_t capacity = 0;
  uint64_t taken = 0;                        // record slots taken since the last flush (kept and dropped)
  uint64_t incomplete = 0;                   // slots taken but never finished (a kernel that died or still runs)
  std::vector<ccoTraceRecord> records;       // the finished ones, in slot order
  std::vector<TraceStamps::Stamp> stamps;    // the proxy's, beside each record
  std::vector<ccoTraceClockSample> samples;  // the finished ones
  uint64_t dropped() const { return taken > capacity ? taken - capacity : 0; }
};

// (device clock - host clock), from what the trace holds: a post began before the proxy took
// it (lower bound: max of begin - taken); the proxy wrote its clock word before the device read
// it (upper bound: min of after - host over the samples). The estimate is the middle of the
// two bounds, or the bound there is (the lower one where they cross: then every post still
// comes before its issue); 0 where the clocks are one (the cpu platform) or nothing bounds it.
struct ClockOffset {
  int64_t deviceMinusHostNs = 0;
  bool haveLower = false, haveUpper = false;
  int64_t lowerNs = 0, upperNs = 0;
  uint32_t samples = 0;
  bool sameClock = false;
};
ClockOffset EstimateClockOffset(const TraceCapture& capture, bool sameClock);

struct TraceMeta {
  int rank = 0, worldSize = 0, lsaRank = 0, lsaSize = 0;
  std::string platform;
  std::string host;       // the host's name
  uint64_t hostHash = 0;  // the communicator's identity of the host (CCO_HOSTID where set)
  int pid = 0;
  uint32_t devComm = 0;                  // ccoDevComm.hostSerial
  uint32_t flush = 0;                    // this device communicator's flushes before this one
  int64_t realtimeMinusMonotonicNs = 0;  // CLOCK_REALTIME - CLOCK_MONOTONIC when written
};

// The trace-event JSON document of one capture.
std::string TraceJson(const TraceMeta& meta, const TraceCapture& capture, const ClockOffset& offset);
// The same, written to `path` (replaced whole: written beside it, then renamed).
Status WriteTraceJson(const std::string& path, const TraceMeta& meta, const TraceCapture& capture,
                      const ClockOffset& offset);

}  // namespace cco

#endif  // CCO_HOST_COMM_TRACE_JSON_H_
