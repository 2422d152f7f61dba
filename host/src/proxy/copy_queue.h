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
// Copies that do not continue one another are held too, up to kMaxCopies, and issued in one
// Platform::CopiesOnStream (on CUDA with CCO_COPY_GRAPHS=1, one launch of a prepared graph);
// the writes behind them go with them (Platform::CopiesThenWrites: there, a node of that graph).
//
// Rules:
//   - Stream order is kept: writes (a signal, a counter, `consumed`) are held behind the copies
//     held before them and submitted with them, after them; a copy after writes first issues
//     everything held, and never joins a copy that writes are held behind. So nothing is ever
//     ahead of the data before it, nor a copy ahead of a write before it.
//   - Only copies between the same pair of windows join (`windows`, 0: never): one copy
//     never spans two separately mapped allocations that happen to be neighbours.
//   - Copies whose joined ranges would overlap stay apart (a chain of copies, each reading
//     what the one before wrote, is well defined; one overlapping copy is not).
//   - The copies of one submission run in no order among themselves, so a copy that touches
//     a byte another held copy reads or writes (a chain) first issues those held.
//   - The first submission that fails fails every call after it: the owner must not publish
//     `consumed` over a copy that was held back and never submitted.
// The owner calls Flush() before the stream is used any other way, and sees its status; the
// destructor flushes too, unreported.
//
// With a StreamTail, the queue also tells whether everything ever submitted to the stream has
// completed (Idle): then the owner may write a word with a CPU store instead (a signal in host
// memory, a ring's `consumed`), which lands in a microsecond where a stream write takes
// several, and still after everything before it.
#ifndef CCO_HOST_PROXY_COPY_QUEUE_H_
#define CCO_HOST_PROXY_COPY_QUEUE_H_

#include <stdint.h>

#include "common/status.h"

namespace cco {

class Platform;

// What is still running on one stream, for every CopyQueue over it: submissions since the
// last marker, and the marker, a count the stream writes into host memory behind its work.
// Used from the proxy's thread only.
class StreamTail {
 public:
  // host/device: one 8-byte word of host memory, as the CPU and the stream reach it.
  StreamTail(const uint64_t* host, uint64_t device) : host_(host), device_(device) {}
  // Whether everything submitted so far has completed: no submission since the last marker,
  // and the marker landed.
  // (Acquire: the words the owner stores next are ordered after the load, on every CPU.)
  bool Idle() const { return !unmarked_ && (marked_ == 0 || __atomic_load_n(host_, __ATOMIC_ACQUIRE) >= marked_); }

 private:
  friend class CopyQueue;
  const uint64_t* host_;
  uint64_t device_;
  uint64_t next_ = 0;      // the last marker value handed out
  uint64_t marked_ = 0;    // the marker whose landing vouches for everything submitted
  bool unmarked_ = false;  // something was submitted after it
};

class CopyQueue {
 public:
  CopyQueue(Platform* platform, int device, uint64_t stream, StreamTail* tail = nullptr)
      : platform_(platform), device_(device), stream_(stream), tail_(tail) {}
  ~CopyQueue();
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  // Queues a copy of `bytes` from src to dst: joined to the one held back where it continues
  // it between the same `windows` (a key naming both windows; 0 joins nothing), else after it.
  Status Copy(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t windows);
  // Writes `value` at `address` behind everything queued so far.
  Status WriteValue64(uint64_t address, uint64_t value);
  // Issues what is held back (copies, or writes), if anything.
  Status Flush();
  // With a tail: a marker written behind everything queued so far (held with the writes
  // before it, so it costs no submission of its own). Without one, nothing.
  Status Mark();
  // Nothing held back, nothing failed, and (the tail says) nothing still running on the
  // stream: a word written now with a CPU store lands after everything queued before.
  bool Idle() const { return tail_ != nullptr && failed_.ok() && copies_ == 0 && writes_ == 0 && tail_->Idle(); }

  // Submissions so far (copies issued, writes): what the joining saves shows here.
  uint64_t submissions() const { return submissions_; }

 private:
  Status Submitted(Status s);  // keeps the first failure

  Platform* platform_;
  int device_;
  uint64_t stream_;
  StreamTail* tail_;
  Status FlushCopy();
  Status FlushWrites();
  Status FlushBoth();  // the copies held, then the writes held behind them: one submission
  // After a submission that ended in writes: whether the tail's marker now vouches for it.
  void Marked(const Status& submitted);

  // Whether a copy of `bytes` from src to dst writes a byte a held copy reads or writes, or
  // reads one it writes (skipLast: the last held copy left out, which the copy would extend).
  bool TouchesHeld(uint64_t dst, uint64_t src, uint64_t bytes, bool skipLast) const;

  static constexpr int kMaxWrites = 16;  // writes held back at most, then issued
  static constexpr int kMaxCopies = 16;  // copies held back at most, then issued
  // The copies held back, in order (copies_ 0: none); the last one may still grow (joining),
  // between the windows named by `windows_`.
  uint64_t dsts_[kMaxCopies], srcs_[kMaxCopies], sizes_[kMaxCopies];
  int copies_ = 0;
  uint64_t windows_ = 0;
  // The writes held back, in order (writes_ 0: none), behind every copy held back.
  uint64_t writeAddresses_[kMaxWrites], writeValues_[kMaxWrites];
  int writes_ = 0;
  bool markerLast_ = false;  // the last write held back is the tail's marker
  uint64_t submissions_ = 0;
  Status failed_ = Status::Ok();
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_COPY_QUEUE_H_
