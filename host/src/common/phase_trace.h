// SPDX-License-Identifier: MIT
// Where a control-plane call spends its time. With CCO_TRACE_PHASES=1, each traced call
// prints one line to stderr when it returns, e.g.
//   cco rank 3: ccoWindowRegister 1073741824 B: 41.20 ms = agree 0.31 + import 2.10 + map 38.02 + ...
// Off (the default), a trace costs one cached flag test per mark.
#ifndef CCO_HOST_COMMON_PHASE_TRACE_H_
#define CCO_HOST_COMMON_PHASE_TRACE_H_

#include <stddef.h>

#include <chrono>
#include <string>

namespace cco {

class PhaseTrace {
 public:
  PhaseTrace(int rank, const char* op, size_t bytes = 0);
  ~PhaseTrace();
  PhaseTrace(const PhaseTrace&) = delete;
  PhaseTrace& operator=(const PhaseTrace&) = delete;

  // The time since the previous mark (or the start) was spent in `phase`.
  void Mark(const char* phase) {
    if (on_) Record(phase);
  }

 private:
  using Clock = std::chrono::steady_clock;
  void Record(const char* phase);

  const bool on_;
  int rank_;
  const char* op_;
  size_t bytes_;
  Clock::time_point start_, last_;
  std::string phases_;
};

}  // namespace cco

#endif  // CCO_HOST_COMMON_PHASE_TRACE_H_
