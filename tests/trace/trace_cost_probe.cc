// SPDX-License-Identifier: MIT
// What the device API's trace points cost, counted in instructions on the host arch: the same
// calls built with the trace points compiled in (tracing off or on at run time) and built with
// -DCCO_DEVICE_TRACE=0. trace_cost_test.py runs it under callgrind, which counts the
// instructions executed inside cco_trace_cost_workload exactly, for two iteration counts, so
// that the fixed costs cancel.
//
//   trace_cost_probe ITERATIONS on|off
//
// One rank alone, a device communicator laid out by hand in plain memory (no proxy: a ring deep
// enough for every post, never consumed): each iteration posts a put, a put_value and a signal
// through the ring (the direct path off), waits for a signal that is already there, and records
// a kernel's range (ccoTraceClock / ccoTraceRange).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "device/trace.hpp"

namespace {

constexpr uint32_t kDepth = 1u << 16;
constexpr uint32_t kSignals = 4;
constexpr uint64_t kWindowBytes = 1 << 16;

struct Fake {
  ccoDevComm dc = {};
  ccoWindowDevice win = {};
  std::vector<uint64_t> memory, hostSide, deviceSide, signalWords, counters, trace;
  uint64_t clockWord = 1;
};

uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

void Lay(Fake* f, bool traced, uint32_t posts) {
  ccoDevComm& dc = f->dc;
  dc.magic = CCO_DEV_COMM_MAGIC;
  dc.abiVersion = CCO_ABI_VERSION;
  dc.size = sizeof(ccoDevComm);
  dc.worldSize = dc.lsaSize = dc.nNodes = 1;
  dc.teamWorld = dc.teamLsa = dc.teamRail = ccoTeam{1, 0, 1, 0};
  // This rank's slice: the window's bytes, then the resources (signal shadows, flush targets).
  f->memory.assign((kWindowBytes + 4096) / 8, 0);
  dc.lsaFlatBase = Address(f->memory.data());
  dc.lsaStride = f->memory.size() * 8;
  dc.resourceOffset = kWindowBytes;
  dc.gdaShadowOffset = 0;
  dc.gdaFlushOffset = 1024;
  dc.gdaConnectionType = CCO_GDA_CONNECTION_FULL;
  dc.gdaContextCount = 1;
  dc.gdaSignalCount = kSignals;
  dc.gdaCounterCount = 1;
  dc.gdaPeerCount = 1;
  dc.gdaUniformNodes = 1;
  dc.gdaRingDepth = kDepth;
  f->hostSide.assign(cco_gda_host_bytes(1, kDepth) / 8, 0);
  f->deviceSide.assign(sizeof(ccoGdaRingDevice) / 8, 0);
  for (uint32_t slot = 0; slot < kDepth; ++slot) {
    ccoGdaDesc* d = reinterpret_cast<ccoGdaDesc*>(f->hostSide.data()) + slot;
    d->seq = cco_gda_initial_seq(slot, 0, kDepth);
  }
  dc.gdaRingSlots = Address(f->hostSide.data());
  dc.gdaRingHost = Address(f->hostSide.data()) + cco_gda_host_words_offset(1, kDepth);
  dc.gdaRingDevice = Address(f->deviceSide.data());
  f->signalWords.assign(cco_gda_signal_words(kSignals, 1, 1), 0);
  f->counters.assign(1, 0);
  dc.gdaSignals = Address(f->signalWords.data());
  dc.gdaCounters = Address(f->counters.data());
  ccoWindowDevice& w = f->win;
  w.magic = CCO_WINDOW_MAGIC;
  w.abiVersion = CCO_ABI_VERSION;
  w.flatBase = dc.lsaFlatBase;
  w.stride = dc.lsaStride;
  w.size = kWindowBytes;
  w.lsaSize = 1;
  w.id = 1;
  if (traced) {
    const uint32_t capacity = posts + 8;  // every call of the workload
    f->trace.assign(cco_trace_buffer_bytes(capacity, CCO_TRACE_SAMPLES_DEFAULT) / 8, 0);
    ccoTraceBuffer* b = reinterpret_cast<ccoTraceBuffer*>(f->trace.data());
    b->magic = CCO_TRACE_MAGIC;
    b->version = CCO_TRACE_VERSION;
    b->capacity = capacity;
    b->sampleCapacity = CCO_TRACE_SAMPLES_DEFAULT;
    b->sampleEvery = CCO_TRACE_SAMPLE_EVERY_DEFAULT;
    b->hostClock = Address(&f->clockWord);
    dc.trace = Address(b);
  }
}

}  // namespace

// Everything callgrind counts. The device communicator is read through memory, as the bitcode's
// wrappers hand it to the handles.
extern "C" __attribute__((noinline)) int cco_trace_cost_workload(const ccoDevComm* dc, ccoWindow_t win,
                                                                 int iterations) {
  int failed = 0;
  for (int i = 0; i < iterations; ++i) {
    ccoGda<> gda(*dc, 0);
    failed |= gda.put(0, win, 0, win, 4096, 64);
    failed |= gda.put_value(0, win, 64, static_cast<uint64_t>(i));
    failed |= gda.signal(0, 1);
    failed |= gda.wait_signal(2, 0);
    const uint64_t begin = ccoTraceClock(*dc);
    ccoTraceRange<ccoCoopThread>(*dc, CCO_TRACE_TAG_TILE, static_cast<uint64_t>(i), begin);
  }
  return failed;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s ITERATIONS on|off\n", argv[0]);
    return 2;
  }
  const int iterations = atoi(argv[1]);
  const bool traced = strcmp(argv[2], "on") == 0;
  if (iterations < 1 || 3 * iterations >= static_cast<int>(kDepth)) return 2;
  Fake f;
  Lay(&f, traced, 5 * static_cast<uint32_t>(iterations));
  const int failed = cco_trace_cost_workload(&f.dc, Address(&f.win), iterations);
  uint64_t recorded = 0;
  if (traced) recorded = reinterpret_cast<const ccoTraceBuffer*>(f.dc.trace)->next;
  printf("{\"compiled\": %s, \"traced\": %s, \"iterations\": %d, \"failed\": %d, \"recorded\": %llu}\n",
         cco::trace::kCompiled ? "true" : "false", traced ? "true" : "false", iterations, failed,
         static_cast<unsigned long long>(recorded));
  return failed != 0;
}
