// SPDX-License-Identifier: MIT
#include "common/phase_trace.h"

#include <stdio.h>

#include "common/env.h"

namespace cco {
namespace {

bool TracingPhases() {
  static const bool on = env::Flag("CCO_TRACE_PHASES");
  return on;
}

double MsBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

PhaseTrace::PhaseTrace(int rank, const char* op, size_t bytes)
    : on_(TracingPhases()), rank_(rank), op_(op), bytes_(bytes) {
  if (on_) start_ = last_ = Clock::now();
}

void PhaseTrace::Record(const char* phase) {
  const Clock::time_point now = Clock::now();
  char part[96];
  snprintf(part, sizeof(part), "%s%s %.3f", phases_.empty() ? "" : " + ", phase, MsBetween(last_, now));
  phases_ += part;
  last_ = now;
}

PhaseTrace::~PhaseTrace() {
  if (!on_) return;
  Record("rest");
  // One write per line, so that ranks sharing a terminal do not interleave mid-line.
  // Where it began on the monotonic clock (seconds, as CLOCK_MONOTONIC): events of other
  // processes can be set beside it.
  const double began = std::chrono::duration<double>(start_.time_since_epoch()).count();
  fprintf(stderr, "cco rank %d: %s %zu B: %.3f ms = %s (began at %.6f s)\n", rank_, op_, bytes_,
          MsBetween(start_, last_), phases_.c_str(), began);
}

}  // namespace cco
