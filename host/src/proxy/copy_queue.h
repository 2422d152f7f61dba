// SPDX-License-Identifier: MIT
// What the proxy queues on one stream while it drains one ring: copies, and words written
// behind them. A copy that continues the one before it (its destination and its source
// both start where the other's end, as the pieces of a put cut up by a kernel or the lanes
// of an AGGREGATE post do) joins it, so the pieces cost the driver one submission: a
// submission costs microseconds of host time (tools/perf/copy_enqueue_probe.cu), which, one per
// piece, bounds puts through the proxy far below memcpy's bandwidth. Words written one after
// another (a signal, then the ring's `consumed`) go as one submission too, where the driver
// batches them (Platform::StreamWriteValues64: tools/perf/stream_write_probe.cu).
//
// Rules:
//   - Stream order is kept: a write (a signal, a counter, `consumed`) first issues the copy
//     held back, and a copy the writes held back, so nothing is ever ahead of the data
//     before it, nor a copy ahead of a write before it.
//   - Only copies between the same pair of windows join (`windows`, 0: never): one copy
//     never spans two separately mapped allocations that happen to be neighbours.
//   - Copies whose joined ranges would overlap stay apart (a chain of copies, each reading
//     what the one before wrote, is well defined; one overlapping copy is not).
//   - The first submission that fails fails every call after it: the owner must not publish
//     `consumed` over a copy that was held back and never submitted.
// The owner calls Flush() before the stream is used any other way, and sees its status; the
// destructor flushes too, unreported.
#ifndef CCO_HOST_PROXY_COPY_QUEUE_H_
#define CCO_HOST_PROXY_COPY_QUEUE_H_

#include <stdint.h>

#include "common/status.h"

namespace cco {

class Platform;

class CopyQueue {
 public:
  CopyQueue(Platform* platform, int device, uint64_t stream) : platform_(platform), device_(device), stream_(stream) {}
  ~CopyQueue();
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  // Queues a copy of `bytes` from src to dst: joined to the one held back where it continues
  // it between the same `windows` (a key naming both windows; 0 joins nothing), else after it.
  Status Copy(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t windows);
  // Writes `value` at `address` behind everything queued so far.
  Status WriteValue64(uint64_t address, uint64_t value);
  // Issues what is held back (a copy, or writes), if anything.
  Status Flush();

  // Submissions so far (copies issued, writes): what the joining saves shows here.
  uint64_t submissions() const { return submissions_; }

 private:
  Status Submitted(Status s);  // keeps the first failure

  Platform* platform_;
  int device_;
  uint64_t stream_;
  Status FlushCopy();
  Status FlushWrites();

  static constexpr int kMaxWrites = 16;                   // writes held back at most, then issued
  uint64_t dst_ = 0, src_ = 0, bytes_ = 0, windows_ = 0;  // the copy held back (bytes_ 0: none)
  // The writes held back, in order (writes_ 0: none); never at once with a copy.
  uint64_t writeAddresses_[kMaxWrites], writeValues_[kMaxWrites];
  int writes_ = 0;
  uint64_t submissions_ = 0;
  Status failed_ = Status::Ok();
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_COPY_QUEUE_H_
