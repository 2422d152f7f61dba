// SPDX-License-Identifier: MIT
#include "comm/trace_json.h"

#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace cco {
namespace {

const char* KindName(uint16_t kind, uint16_t flags) {
  switch (kind) {
    case CCO_TRACE_GDA_PUT: return "gda.put";
    case CCO_TRACE_GDA_PUT_VALUE: return "gda.put_value";
    case CCO_TRACE_GDA_GET: return "gda.get";
    case CCO_TRACE_GDA_SIGNAL: return "gda.signal";
    case CCO_TRACE_GDA_COUNTER: return "gda.counter";
    case CCO_TRACE_GDA_WAIT_SIGNAL: return "gda.wait_signal";
    case CCO_TRACE_GDA_WAIT_COUNTER: return "gda.wait_counter";
    case CCO_TRACE_GDA_FLUSH: return "gda.flush";
    case CCO_TRACE_GDA_BARRIER: return "gda.barrier";
    case CCO_TRACE_SDMA_PUT: return "sdma.put";
    case CCO_TRACE_SDMA_GET: return "sdma.get";
    case CCO_TRACE_SDMA_QUIET: return "sdma.quiet";
    case CCO_TRACE_SDMA_WAIT: return (flags & CCO_TRACE_FLAG_LOCAL) ? "sdma.wait_local" : "sdma.wait_signal";
    case CCO_TRACE_LSA_BARRIER: return (flags & CCO_TRACE_FLAG_WAIT_ONLY) ? "lsa.barrier_wait" : "lsa.barrier";
    default: return nullptr;
  }
}

// A range's name: its tag's (ccoTraceTag), or "range N" for a kernel's own.
std::string RangeName(uint32_t tag) {
  switch (tag) {
    case CCO_TRACE_TAG_TILE: return "tile";
    case CCO_TRACE_TAG_PUSH: return "push";
    case CCO_TRACE_TAG_WAIT: return "wait";
    case CCO_TRACE_TAG_REDUCE: return "reduce";
    default: return "range " + std::to_string(tag);
  }
}

const char* StatusName(int32_t status) {
  switch (status) {
    case CCO_DEVICE_STATUS_OK: return "ok";
    case CCO_DEVICE_STATUS_TIMEOUT: return "timeout";
    case CCO_DEVICE_STATUS_ABORTED: return "aborted";
    case CCO_DEVICE_STATUS_INVALID_ARGUMENT: return "invalid_argument";
    default: return "unknown";
  }
}

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char esc[8];
      snprintf(esc, sizeof(esc), "\\u%04x", ch);
      out += esc;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

// Microseconds with nanosecond digits, exactly.
std::string Micros(uint64_t ns) {
  char text[32];
  snprintf(text, sizeof(text), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
           static_cast<unsigned long long>(ns % 1000));
  return text;
}

// One X event before it has a thread.
struct Slice {
  uint64_t begin = 0, end = 0;  // host clock, ns
  std::string name;
  const char* cat = "";
  std::string args;  // a JSON object
  size_t group = 0;  // which named thread it goes on (split further where events overlap)
  int tid = 0;
};

struct Flow {
  uint64_t id;
  size_t from, to;  // slices
};

// Named threads, each split into lanes where its slices would not nest: a slice goes on the
// first lane where it starts after, or ends inside, every slice still open there.
struct Threads {
  std::vector<std::string> names;  // by group
  std::map<std::string, size_t> byName;
  size_t Group(const std::string& name) {
    auto it = byName.find(name);
    if (it != byName.end()) return it->second;
    names.push_back(name);
    return byName[name] = names.size() - 1;
  }
};

std::vector<std::pair<int, std::string>> AssignThreads(const Threads& threads, std::vector<Slice>* slices) {
  std::vector<size_t> order(slices->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Slice &x = (*slices)[a], &y = (*slices)[b];
    if (x.group != y.group) return x.group < y.group;
    if (x.begin != y.begin) return x.begin < y.begin;
    return x.end > y.end;  // an enclosing slice before what it encloses
  });
  std::vector<std::pair<int, std::string>> named;  // (tid, name)
  std::vector<std::vector<uint64_t>> lanes;        // open ends, innermost last, of the group's lanes
  std::vector<int> laneTids;
  size_t group = ~size_t{0};
  for (size_t i : order) {
    Slice& s = (*slices)[i];
    if (s.group != group) {
      group = s.group;
      lanes.clear();
      laneTids.clear();
    }
    size_t lane = 0;
    for (; lane < lanes.size(); ++lane) {
      std::vector<uint64_t>& open = lanes[lane];
      while (!open.empty() && open.back() <= s.begin) open.pop_back();
      if (open.empty() || s.end <= open.back()) break;
    }
    if (lane == lanes.size()) {
      lanes.emplace_back();
      laneTids.push_back(static_cast<int>(named.size()) + 1);
      const std::string& base = threads.names[group];
      named.emplace_back(laneTids.back(), lane == 0 ? base : base + " (" + std::to_string(lane + 1) + ")");
    }
    lanes[lane].push_back(s.end);
    s.tid = laneTids[lane];
  }
  return named;
}

struct Args {
  std::string text;
  Args& Add(const char* key, const std::string& json) {
    text += (text.empty() ? "{" : ",") + Quoted(key) + ":" + json;
    return *this;
  }
  Args& Num(const char* key, int64_t v) { return Add(key, std::to_string(v)); }
  Args& Str(const char* key, const std::string& v) { return Add(key, Quoted(v)); }
  std::string Done() const { return text.empty() ? "{}" : text + "}"; }
};

std::string RecordArgs(const ccoTraceRecord& r, uint64_t index) {
  Args a;
  a.Num("record", static_cast<int64_t>(index));
  if (r.kind == CCO_TRACE_RANGE) return a.Num("tag", r.aux).Num("arg", static_cast<int64_t>(r.bytes)).Done();
  if (r.peer >= 0) a.Num("peer", r.peer);
  switch (r.kind) {
    case CCO_TRACE_GDA_PUT:
    case CCO_TRACE_GDA_PUT_VALUE:
    case CCO_TRACE_GDA_GET:
    case CCO_TRACE_GDA_SIGNAL:
    case CCO_TRACE_GDA_COUNTER:
    case CCO_TRACE_SDMA_PUT:
    case CCO_TRACE_SDMA_GET:
      a.Num("bytes", static_cast<int64_t>(r.bytes));
      if (r.kind == CCO_TRACE_GDA_COUNTER) a.Num("counter", r.aux);
      else if (r.kind == CCO_TRACE_SDMA_PUT || r.kind == CCO_TRACE_SDMA_GET) a.Num("queue", r.aux);
      else if (r.flags & CCO_TRACE_FLAG_SIGNAL) a.Num("signal", r.aux);
      if (r.flags & CCO_TRACE_FLAG_DIRECT) a.Add("direct", "true");
      else a.Num("ring", r.ring).Num("ticket", static_cast<int64_t>(r.ticket));
      break;
    case CCO_TRACE_GDA_WAIT_SIGNAL:
    case CCO_TRACE_GDA_WAIT_COUNTER: a.Num(r.kind == CCO_TRACE_GDA_WAIT_SIGNAL ? "signal" : "counter", r.aux);
    // fallthrough
    case CCO_TRACE_SDMA_WAIT: a.Num("least", static_cast<int64_t>(r.bytes)); break;
    case CCO_TRACE_GDA_BARRIER:
    case CCO_TRACE_LSA_BARRIER: a.Num("barrier", r.aux).Num("round", static_cast<int64_t>(r.bytes)); break;
    default: break;
  }
  return a.Str("status", StatusName(r.status)).Done();
}

// Host time of a device stamp.
uint64_t ToHost(uint64_t device, int64_t deviceMinusHost) { return device - static_cast<uint64_t>(deviceMinusHost); }

std::string Event(const char* ph, const std::string& name, const char* cat, int pid, int tid, uint64_t ts) {
  return std::string("{\"ph\":\"") + ph + "\",\"name\":" + Quoted(name) + ",\"cat\":" + Quoted(cat) +
         ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + Micros(ts);
}

std::string Meta(const char* what, int pid, int tid, const std::string& args) {
  return std::string("{\"ph\":\"M\",\"name\":\"") + what + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":" + args + "}";
}

std::string Optional(bool have, int64_t v) { return have ? std::to_string(v) : "null"; }

}  // namespace

ClockOffset EstimateClockOffset(const TraceCapture& capture, bool sameClock) {
  ClockOffset o;
  o.sameClock = sameClock;
  for (size_t i = 0; i < capture.records.size(); ++i) {
    const uint64_t taken = capture.stamps[i].taken;
    if (taken == 0) continue;
    const int64_t bound = static_cast<int64_t>(capture.records[i].begin - taken);
    if (!o.haveLower || bound > o.lowerNs) o.lowerNs = bound;
    o.haveLower = true;
  }
  for (const ccoTraceClockSample& s : capture.samples) {
    if (s.host == 0 || s.after == 0) continue;
    const int64_t bound = static_cast<int64_t>(s.after - s.host);
    if (!o.haveUpper || bound < o.upperNs) o.upperNs = bound;
    o.haveUpper = true;
    ++o.samples;
  }
  if (sameClock) o.deviceMinusHostNs = 0;
  else if (o.haveLower && o.haveUpper)
    o.deviceMinusHostNs = o.lowerNs <= o.upperNs ? o.lowerNs + (o.upperNs - o.lowerNs) / 2 : o.lowerNs;
  else if (o.haveLower) o.deviceMinusHostNs = o.lowerNs;
  else if (o.haveUpper) o.deviceMinusHostNs = o.upperNs;
  return o;
}

std::string TraceJson(const TraceMeta& meta, const TraceCapture& capture, const ClockOffset& offset) {
  const int pid = meta.rank;
  Threads threads;
  std::vector<Slice> slices;
  std::vector<Flow> flows;
  // Device threads first, in (block, warp) order; then the proxy's.
  std::vector<std::pair<uint64_t, size_t>> byPlace;
  for (size_t i = 0; i < capture.records.size(); ++i)
    byPlace.emplace_back(uint64_t{capture.records[i].block} << 16 | capture.records[i].warp, i);
  std::stable_sort(byPlace.begin(), byPlace.end());
  for (const auto& p : byPlace) {
    const ccoTraceRecord& r = capture.records[p.second];
    threads.Group("block " + std::to_string(r.block) + " warp " + std::to_string(r.warp));
  }
  const size_t proxyIssue = threads.Group("proxy");
  const size_t proxyFlight = threads.Group("proxy in flight");
  uint64_t lastTs = 0;
  for (size_t i = 0; i < capture.records.size(); ++i) {
    const ccoTraceRecord& r = capture.records[i];
    const TraceStamps::Stamp& st = capture.stamps[i];
    const char* kindName = KindName(r.kind, r.flags);
    if (kindName == nullptr && r.kind != CCO_TRACE_RANGE) continue;  // not one this writer knows
    const std::string name = kindName ? kindName : RangeName(r.aux);
    Slice dev;
    dev.begin = ToHost(r.begin, offset.deviceMinusHostNs);
    dev.end = std::max(dev.begin, ToHost(r.end, offset.deviceMinusHostNs));
    dev.name = name;
    dev.cat = r.kind == CCO_TRACE_RANGE ? "kernel" : "device";
    dev.args = RecordArgs(r, i);
    dev.group = threads.Group("block " + std::to_string(r.block) + " warp " + std::to_string(r.warp));
    slices.push_back(dev);
    lastTs = std::max(lastTs, dev.end);
    if (st.taken == 0) continue;  // the proxy never took it (a direct op, a span, a failed ring)
    const size_t devIndex = slices.size() - 1;
    Slice issue;
    issue.begin = st.taken;
    issue.end = std::max(st.taken, st.queued);
    issue.name = "issue " + name;
    issue.cat = "proxy";
    issue.args = Args()
                     .Num("record", static_cast<int64_t>(i))
                     .Num("ring", r.ring)
                     .Num("ticket", static_cast<int64_t>(r.ticket))
                     .Done();
    issue.group = proxyIssue;
    slices.push_back(issue);
    flows.push_back(Flow{2 * i + 1, devIndex, slices.size() - 1});
    lastTs = std::max(lastTs, issue.end);
    if (st.done == 0) continue;  // still in flight when flushed
    Slice flight;
    flight.begin = issue.end;
    flight.end = std::max(issue.end, st.done);
    flight.name = name;
    flight.cat = "proxy";
    flight.args = Args().Num("record", static_cast<int64_t>(i)).Num("bytes", static_cast<int64_t>(r.bytes)).Done();
    flight.group = proxyFlight;
    slices.push_back(flight);
    flows.push_back(Flow{2 * i + 2, slices.size() - 2, slices.size() - 1});
    lastTs = std::max(lastTs, flight.end);
  }
  const std::vector<std::pair<int, std::string>> named = AssignThreads(threads, &slices);

  std::string out = "{\"traceEvents\":[\n";
  out += Meta("process_name", pid, 0, Args().Str("name", "rank " + std::to_string(meta.rank)).Done());
  out += ",\n" + Meta("process_sort_index", pid, 0, Args().Num("sort_index", meta.rank).Done());
  for (const auto& t : named) {
    out += ",\n" + Meta("thread_name", pid, t.first, Args().Str("name", t.second).Done());
    out += ",\n" + Meta("thread_sort_index", pid, t.first, Args().Num("sort_index", t.first).Done());
  }
  for (const Slice& s : slices)
    out += ",\n" + Event("X", s.name, s.cat, pid, s.tid, s.begin) + ",\"dur\":" + Micros(s.end - s.begin) +
           ",\"args\":" + s.args + "}";
  for (const Flow& f : flows) {
    const Slice &from = slices[f.from], &to = slices[f.to];
    out += ",\n" + Event("s", "op", "flow", pid, from.tid, from.begin) + ",\"id\":" + std::to_string(f.id) + "}";
    out +=
        ",\n" + Event("f", "op", "flow", pid, to.tid, to.begin) + ",\"id\":" + std::to_string(f.id) + ",\"bp\":\"e\"}";
  }
  if (capture.dropped() > 0)
    out += ",\n" + Event("i", "trace buffer full", "trace", pid, 0, lastTs) + ",\"s\":\"p\",\"args\":" +
           Args().Num("dropped", static_cast<int64_t>(capture.dropped())).Num("capacity", capture.capacity).Done() +
           "}";
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"cco\":";
  Args clock;
  clock.Num("deviceMinusHostNs", offset.deviceMinusHostNs)
      .Add("lowerNs", Optional(offset.haveLower, offset.lowerNs))
      .Add("upperNs", Optional(offset.haveUpper, offset.upperNs))
      .Num("samples", offset.samples)
      .Add("sameClock", offset.sameClock ? "true" : "false");
  Args m;
  m.Num("version", CCO_TRACE_VERSION)
      .Num("rank", meta.rank)
      .Num("worldSize", meta.worldSize)
      .Num("lsaRank", meta.lsaRank)
      .Num("lsaSize", meta.lsaSize)
      .Str("platform", meta.platform)
      .Str("host", meta.host)
      .Str("hostHash", std::to_string(meta.hostHash))
      .Num("pid", meta.pid)
      .Num("devComm", meta.devComm)
      .Num("flush", meta.flush)
      .Num("capacity", capture.capacity)
      .Num("recorded", static_cast<int64_t>(capture.records.size()))
      .Num("dropped", static_cast<int64_t>(capture.dropped()))
      .Num("incomplete", static_cast<int64_t>(capture.incomplete))
      .Str("clockDomain", "CLOCK_MONOTONIC")
      .Num("realtimeMinusMonotonicNs", meta.realtimeMinusMonotonicNs)
      .Add("clock", clock.Done());
  out += m.Done() + "}\n}\n";
  return out;
}

Status WriteTraceJson(const std::string& path, const TraceMeta& meta, const TraceCapture& capture,
                      const ClockOffset& offset) {
  const std::string text = TraceJson(meta, capture, offset);
  const std::string partial = path + ".partial." + std::to_string(getpid());
  FILE* f = fopen(partial.c_str(), "w");
  if (f == nullptr) return SystemError(Fmt("opening ", partial, " for the trace"));
  const bool written = fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = fclose(f) == 0;
  if (!written || !closed || rename(partial.c_str(), path.c_str()) != 0) {
    unlink(partial.c_str());
    return SystemError(Fmt("writing the trace to ", path));
  }
  return Status::Ok();
}

}  // namespace cco
