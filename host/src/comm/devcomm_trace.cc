// SPDX-License-Identifier: MIT
#include "comm/devcomm_trace.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "comm/communicator.h"
#include "common/env.h"

namespace cco {
namespace {

constexpr int64_t kMaxEvents = int64_t{1} << 24;

// Makes `folder` and what it lies in, where missing.
Status MakeFolders(const std::string& folder) {
  for (size_t at = 1; at <= folder.size(); ++at) {
    if (at != folder.size() && folder[at] != '/') continue;
    const std::string part = folder.substr(0, at);
    if (mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return ErrnoError(Fmt("CCO_TRACE: making ", part), errno);
  }
  struct stat st;
  if (stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return InvalidUsage(Fmt("CCO_TRACE=\"", folder, "\" is not a folder"));
  return Status::Ok();
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "host";
  return name;
}

// The host name as a file name's part: letters, digits, '-', '_'.
std::string FilePart(std::string s) {
  for (char& ch : s)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'))
      ch = '_';
  return s;
}

int64_t RealtimeMinusMonotonic() {
  struct timespec real, mono;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<int64_t>(real.tv_sec) - mono.tv_sec) * 1000000000 + (real.tv_nsec - mono.tv_nsec);
}

std::atomic<uint32_t> filesWritten{0};

}  // namespace

Status DevCommTrace::Create(Platform* platform, int device, std::shared_ptr<DevCommTrace>* out) {
  out->reset();
  const std::string folder = env::Get("CCO_TRACE");
  if (folder.empty()) return Status::Ok();
  const int64_t events = env::Int("CCO_TRACE_EVENTS", CCO_TRACE_EVENTS_DEFAULT);
  if (events < 1 || events > kMaxEvents)
    return InvalidUsage(
        Fmt("CCO_TRACE_EVENTS=\"", env::Get("CCO_TRACE_EVENTS"), "\": a count of records from 1 to ", kMaxEvents));
  CCO_RETURN_IF_ERROR(MakeFolders(folder));
  std::shared_ptr<DevCommTrace> t(new DevCommTrace(platform, device));
  t->folder_ = folder;
  t->capacity_ = static_cast<uint32_t>(events);
  t->sampleCapacity_ = CCO_TRACE_SAMPLES_DEFAULT;
  const uint64_t bytes = cco_trace_buffer_bytes(t->capacity_, t->sampleCapacity_);
  CCO_RETURN_IF_ERROR(platform->DeviceAlloc(device, bytes, &t->buffer_).Prefixed("the trace buffer"));
  CCO_RETURN_IF_ERROR(platform->Memset(device, t->buffer_, 0, bytes).Prefixed("the trace buffer"));
  CCO_RETURN_IF_ERROR(platform->HostMappedAlloc(device, sizeof(uint64_t), &t->clockHost_, &t->clockDevice_)
                          .Prefixed("the trace clock"));
  uint64_t* clock = static_cast<uint64_t*>(t->clockHost_);
  __atomic_store_n(clock, TraceNow(), __ATOMIC_RELAXED);
  ccoTraceBuffer header = {};
  header.magic = CCO_TRACE_MAGIC;
  header.version = CCO_TRACE_VERSION;
  header.capacity = t->capacity_;
  header.sampleCapacity = t->sampleCapacity_;
  header.sampleEvery = CCO_TRACE_SAMPLE_EVERY_DEFAULT;
  header.hostClock = t->clockDevice_;
  CCO_RETURN_IF_ERROR(platform->CopyToDevice(device, t->buffer_, &header, sizeof(header)).Prefixed("the trace buffer"));
  t->stamps_ = std::make_shared<TraceStamps>(t->capacity_, clock);
  *out = std::move(t);
  return Status::Ok();
}

DevCommTrace::~DevCommTrace() {
  if (buffer_ != 0) platform_->DeviceFree(device_, buffer_);
  if (clockHost_ != nullptr) platform_->HostMappedFree(device_, clockHost_);
}

std::shared_ptr<RingTrace> DevCommTrace::ForRings(uint32_t rings) const {
  return std::make_shared<RingTrace>(stamps_, rings);
}

Status DevCommTrace::Take(TraceCapture* out) {
  ccoTraceBuffer header;
  CCO_RETURN_IF_ERROR(
      platform_->CopyFromDevice(device_, &header, buffer_, sizeof(header)).Prefixed("the trace buffer"));
  const uint64_t kept = header.next < capacity_ ? header.next : capacity_;
  const uint64_t sampled = header.samplesNext < sampleCapacity_ ? header.samplesNext : sampleCapacity_;
  std::vector<ccoTraceRecord> records(kept);
  std::vector<ccoTraceClockSample> samples(sampled);
  const uint64_t recordsAt = cco_trace_record_address(buffer_, 0),
                 samplesAt = cco_trace_sample_address(buffer_, capacity_, 0);
  if (kept > 0)
    CCO_RETURN_IF_ERROR(platform_->CopyFromDevice(device_, records.data(), recordsAt, kept * sizeof(ccoTraceRecord)));
  if (sampled > 0)
    CCO_RETURN_IF_ERROR(
        platform_->CopyFromDevice(device_, samples.data(), samplesAt, sampled * sizeof(ccoTraceClockSample)));
  const std::vector<TraceStamps::Stamp> stamps = stamps_->Snapshot();

  TraceCapture capture;
  capture.capacity = capacity_;
  capture.taken = header.next;
  for (uint64_t i = 0; i < kept; ++i) {
    if (records[i].seq != i + 1) {
      ++capture.incomplete;
      continue;
    }
    capture.records.push_back(records[i]);
    capture.stamps.push_back(stamps[i]);
  }
  for (uint64_t i = 0; i < sampled; ++i)
    if (samples[i].seq == i + 1) capture.samples.push_back(samples[i]);

  // Empty again: the slots used are zeroed (a slot taken again but never finished must not
  // show what it held), then the counters.
  if (kept > 0) CCO_RETURN_IF_ERROR(platform_->Memset(device_, recordsAt, 0, kept * sizeof(ccoTraceRecord)));
  if (sampled > 0) CCO_RETURN_IF_ERROR(platform_->Memset(device_, samplesAt, 0, sampled * sizeof(ccoTraceClockSample)));
  const uint64_t zero[2] = {0, 0};
  static_assert(offsetof(ccoTraceBuffer, samplesNext) == offsetof(ccoTraceBuffer, next) + 8, "the two counters");
  CCO_RETURN_IF_ERROR(platform_->CopyToDevice(device_, buffer_ + offsetof(ccoTraceBuffer, next), zero, sizeof(zero)));
  stamps_->Reset();
  ++flushes_;
  *out = std::move(capture);
  return Status::Ok();
}

Status CaptureDevCommTrace(ccoComm& c, const DevCommRecord& record, TraceMeta* meta, TraceCapture* capture,
                           ClockOffset* offset) {
  *capture = TraceCapture();
  *meta = TraceMeta();
  *offset = ClockOffset();
  if (!record.trace) return Status::Ok();
  // The proxy stamps completion in its passes: once the streams ran dry (the first Quiesce),
  // one more whole pass sees every `consumed` that the work wrote.
  if ((record.gda || record.sdma) && c.proxy) {
    c.proxy->Quiesce();
    c.proxy->Quiesce();
  }
  DevCommTrace& t = *record.trace;
  meta->flush = t.flushes();
  CCO_RETURN_IF_ERROR(t.Take(capture).Prefixed("reading the trace"));
  meta->rank = c.topo.rank;
  meta->worldSize = c.topo.nRanks;
  meta->lsaRank = c.topo.lsaRank;
  meta->lsaSize = c.topo.lsaSize;
  meta->platform = c.platform->name();
  meta->host = HostName();
  meta->hostHash = c.hostInfos.empty() ? 0 : c.hostInfos[c.topo.hostRank].hostHash;
  meta->pid = static_cast<int>(getpid());
  meta->devComm = record.serial;
  meta->realtimeMinusMonotonicNs = RealtimeMinusMonotonic();
  *offset = EstimateClockOffset(*capture, c.platform->kind() == ccoPlatformCpu);
  return Status::Ok();
}

Status FlushDevCommTrace(ccoComm& c, const DevCommRecord& record, const std::string& path, bool always) {
  if (!record.trace) return Status::Ok();
  TraceMeta meta;
  TraceCapture capture;
  ClockOffset offset;
  CCO_RETURN_IF_ERROR(CaptureDevCommTrace(c, record, &meta, &capture, &offset));
  if (!always && capture.records.empty() && capture.taken == 0) return Status::Ok();
  std::string file = path;
  if (file.empty())
    file = Fmt(record.trace->folder(), "/cco-trace.r", c.topo.rank, ".", FilePart(meta.host), ".", meta.pid, ".",
               filesWritten++, ".json");
  return WriteTraceJson(file, meta, capture, offset);
}

Status TraceFlush(ccoComm& c, const ccoDevComm* dc, const char* path) {
  if (dc == nullptr) return InvalidArgument("devComm is NULL");
  auto it = c.devComms.find(dc->ptr);
  if (dc->magic != CCO_DEV_COMM_MAGIC || it == c.devComms.end() || it->second.serial != dc->hostSerial)
    return InvalidArgument("devComm is not a live device communicator of this communicator");
  return FlushDevCommTrace(c, it->second, path != nullptr ? path : "", /*always=*/true);
}

}  // namespace cco
