// SPDX-License-Identifier: MIT
// A device communicator's device-side trace on the host (abi/trace.h, device/trace.hpp): made
// at ccoDevCommCreate where CCO_TRACE names a folder, written out as a trace-event JSON file
// (comm/trace_json.h) by ccoDevCommTraceFlush, and when the device communicator, or its
// communicator, is destroyed.
//
//   CCO_TRACE         the folder (made where missing); each file is
//                     cco-trace.r<rank>.<host>.<pid>.<n>.json, n counting the files this
//                     process wrote
//   CCO_TRACE_EVENTS  records per device communicator, 1 to 2^24 (default 65536), 64 bytes each
//                     in device memory: calls past them until the next flush are dropped, and
//                     the file counts them
//
// Tracing is each rank's own: ranks need not agree on it.
#ifndef CCO_HOST_COMM_DEVCOMM_TRACE_H_
#define CCO_HOST_COMM_DEVCOMM_TRACE_H_

#include <stdint.h>

#include <memory>
#include <string>

#include "comm/trace_json.h"
#include "common/status.h"
#include "platform/platform.h"
#include "proxy/trace_stamps.h"

struct ccoComm;

namespace cco {

struct DevCommRecord;

class DevCommTrace {
 public:
  // The buffer in device memory, the proxy's clock word and stamps; *out stays null where
  // CCO_TRACE is not set.
  static Status Create(Platform* platform, int device, std::shared_ptr<DevCommTrace>* out);
  ~DevCommTrace();
  DevCommTrace(const DevCommTrace&) = delete;
  DevCommTrace& operator=(const DevCommTrace&) = delete;

  // What ccoDevComm.trace holds.
  uint64_t buffer() const { return buffer_; }
  const std::string& folder() const { return folder_; }
  // The proxy's view of a ring set of `rings` rings of this device communicator.
  std::shared_ptr<RingTrace> ForRings(uint32_t rings) const;

  // What the device recorded since the last Take, beside the proxy's stamps; the buffer is
  // then empty again. No kernel may be using the device communicator, and the proxy must have
  // finished a pass since its work completed.
  Status Take(TraceCapture* out);
  // Flushes so far.
  uint32_t flushes() const { return flushes_; }

 private:
  DevCommTrace(Platform* platform, int device) : platform_(platform), device_(device) {}

  Platform* platform_;
  int device_;
  uint64_t buffer_ = 0;
  uint32_t capacity_ = 0, sampleCapacity_ = 0;
  void* clockHost_ = nullptr;
  uint64_t clockDevice_ = 0;
  std::shared_ptr<TraceStamps> stamps_;
  std::string folder_;
  uint32_t flushes_ = 0;
};

// What `record`'s trace holds (empty where it does not trace), its metadata and the clock
// offset, after the proxy's work of the device communicator; the trace is then empty again.
// No kernel may be using the device communicator.
Status CaptureDevCommTrace(ccoComm& c, const DevCommRecord& record, TraceMeta* meta, TraceCapture* capture,
                           ClockOffset* offset);

// Writes what `record`'s trace holds to `path` (empty: the next file in CCO_TRACE's folder)
// and empties it; nothing where the device communicator does not trace. `always`: write a file
// even where nothing was recorded (an explicit flush; one at destroy writes none then).
// Waits for the proxy's work of the device communicator first; no kernel may be using it.
Status FlushDevCommTrace(ccoComm& c, const DevCommRecord& record, const std::string& path, bool always);

// ccoDevCommTraceFlush.
Status TraceFlush(ccoComm& c, const ccoDevComm* dc, const char* path);

}  // namespace cco

#endif  // CCO_HOST_COMM_DEVCOMM_TRACE_H_
