// SPDX-License-Identifier: MIT
// The device-side trace on the CPU (abi/trace.h, device/trace.hpp, comm/devcomm_trace.h): the
// device API compiled for the host, ranks as threads of one process on the cpu platform, GDA
// through the local backend and through tcp, SDMA, the GDA and LSA barriers and a kernel's own
// ranges. Every traced call is recorded with its rank, kind, peer and bytes; the stamps are in
// order (post <= taken <= queued <= complete: one clock on the host); a full buffer keeps what
// came first and counts the rest; a flush empties it; files are written at flush and at
// destroy; and a device communicator made without CCO_TRACE has no buffer at all.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/comm_registry.h"
#include "cco/cco.h"
#include "comm/communicator.h"
#include "comm/devcomm_trace.h"
#include "device/cco_device.hpp"
#include "device/gda.hpp"
#include "device/sdma.hpp"
#include "device/trace.hpp"
#include "tests/device/gda_ranks.h"

namespace {

using namespace cco::gda_test;
using cco::ClockOffset;
using cco::TraceCapture;
using cco::TraceMeta;

constexpr uint64_t kTimeout = 10'000'000'000ull;

// A folder of its own, named by CCO_TRACE while the test runs.
class TraceFolder {
 public:
  TraceFolder() {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern = std::string(base ? base : "/tmp") + "/cco-trace-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    path_ = mkdtemp(name.data());
    setenv("CCO_TRACE", path_.c_str(), 1);
  }
  ~TraceFolder() {
    unsetenv("CCO_TRACE");
    unsetenv("CCO_TRACE_EVENTS");
    for (const std::string& f : Files()) unlink((path_ + "/" + f).c_str());
    rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    DIR* d = opendir(path_.c_str());
    if (d == nullptr) return out;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    closedir(d);
    return out;
  }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Seen {
  TraceMeta meta;
  TraceCapture capture;
  ClockOffset offset;
};

// What this rank's device communicator recorded so far (and an empty buffer after).
bool Capture(Rank& k, Seen* seen, const ccoDevComm& dc) {
  const std::shared_ptr<ccoComm> comm = cco::LookupComm(k.comm);  // the handle's communicator
  if (!comm) return false;
  std::lock_guard<std::mutex> lock(comm->mu);
  auto it = comm->devComms.find(dc.ptr);
  if (it == comm->devComms.end()) return false;
  return cco::CaptureDevCommTrace(*comm, it->second, &seen->meta, &seen->capture, &seen->offset).ok();
}
bool Capture(Rank& k, Seen* seen) { return Capture(k, seen, k.dc); }

// A post through a ring: the proxy took it after it began, queued it, and saw it complete.
bool StampedInOrder(const ccoTraceRecord& r, const cco::TraceStamps::Stamp& s) {
  return r.begin != 0 && r.begin <= r.end && s.taken != 0 && r.begin <= s.taken && s.taken <= s.queued &&
         s.queued <= s.done;
}

// A call the proxy did not carry (a span, a direct post): device stamps only.
bool DeviceOnly(const ccoTraceRecord& r, const cco::TraceStamps::Stamp& s) {
  return r.begin != 0 && r.begin <= r.end && s.taken == 0 && s.queued == 0 && s.done == 0;
}

std::vector<uint16_t> Kinds(const TraceCapture& c) {
  std::vector<uint16_t> kinds;
  for (const ccoTraceRecord& r : c.records) kinds.push_back(r.kind);
  return kinds;
}

// The clocks are one on the cpu platform, so the bounds must hold 0 between them.
bool ClockBoundsHoldZero(const ClockOffset& o) {
  return o.sameClock && o.deviceMinusHostNs == 0 && o.haveLower && o.lowerNs <= 0 && o.haveUpper && o.upperNs >= 0 &&
         o.samples >= 1;
}

// Every GDA post kind, a counter, the waits and a flush, through the proxy (the direct path
// off): recorded in call order with their peers, bytes and stamps.
TEST(TraceOnHost, GdaThroughTheLocalProxy) {
  TraceFolder folder;
  setenv("CCO_GDA_DIRECT_MAX_BYTES", "0", 1);
  EXPECT_EQ(RunGdaRanks(
                3, CCO_GDA_CONNECTION_FULL,
                [](Rank& k) {
                  CHECK_OR_FAIL(k.dc.trace != 0);
                  ccoGda<> gda(k.dc, 0, kTimeout);
                  Fill(k.mem, k.rank, 1024);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  const int right = (k.rank + 1) % k.n;
                  CHECK_OR_FAIL(gda.put(right, k.win, 8192, k.win, 0, 4096, CCO_SIGNAL_INC, 3) == 0);
                  CHECK_OR_FAIL(gda.put_value(right, k.win, 16384, 42, CCO_SIGNAL_NONE, 0, 0, 8) == 0);
                  CHECK_OR_FAIL(gda.get(right, k.win, 0, k.win, 20480, 1024) == 0);
                  CHECK_OR_FAIL(gda.signal(right, 6) == 0);
                  CHECK_OR_FAIL(gda.counter(2) == 0);
                  CHECK_OR_FAIL(gda.wait_signal(3, 1) == 0);
                  CHECK_OR_FAIL(gda.wait_signal(6, 1) == 0);
                  CHECK_OR_FAIL(gda.wait_counter(2, 1) == 0);
                  CHECK_OR_FAIL(gda.flush() == 0);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);

                  Seen seen;
                  CHECK_OR_FAIL(Capture(k, &seen));
                  const TraceCapture& c = seen.capture;
                  const std::vector<uint16_t> want = {
                      CCO_TRACE_GDA_PUT,          CCO_TRACE_GDA_PUT_VALUE,   CCO_TRACE_GDA_GET,
                      CCO_TRACE_GDA_SIGNAL,       CCO_TRACE_GDA_COUNTER,     CCO_TRACE_GDA_COUNTER,
                      CCO_TRACE_GDA_COUNTER,      CCO_TRACE_GDA_WAIT_SIGNAL, CCO_TRACE_GDA_WAIT_SIGNAL,
                      CCO_TRACE_GDA_WAIT_COUNTER, CCO_TRACE_GDA_FLUSH};
                  CHECK_OR_FAIL(Kinds(c) == want);
                  CHECK_OR_FAIL(c.dropped() == 0 && c.incomplete == 0 && c.taken == want.size());
                  CHECK_OR_FAIL(seen.meta.rank == k.rank && seen.meta.worldSize == k.n && seen.meta.platform == "cpu");
                  // The posts: peer, bytes, signal, ring, each stamped by the proxy in order.
                  const uint64_t bytes[] = {4096, 8, 1024, 0};
                  for (int i = 0; i < 4; ++i) {
                    const ccoTraceRecord& r = c.records[i];
                    CHECK_OR_FAIL(r.peer == right && r.bytes == bytes[i] && r.status == 0 &&
                                  r.ring == static_cast<uint32_t>(right));
                    CHECK_OR_FAIL(r.block == 0 && r.warp == 0 && r.lane == 0 && (r.flags & CCO_TRACE_FLAG_DIRECT) == 0);
                    CHECK_OR_FAIL(StampedInOrder(r, c.stamps[i]));
                  }
                  CHECK_OR_FAIL((c.records[0].flags & CCO_TRACE_FLAG_SIGNAL) && c.records[0].aux == 3);
                  CHECK_OR_FAIL((c.records[1].flags & CCO_TRACE_FLAG_SIGNAL) == 0);
                  CHECK_OR_FAIL((c.records[3].flags & CCO_TRACE_FLAG_SIGNAL) && c.records[3].aux == 6);
                  // The ticket of each ring grows: the put, put_value, get and signal went to one ring.
                  CHECK_OR_FAIL(c.records[0].ticket < c.records[1].ticket && c.records[2].ticket < c.records[3].ticket);
                  // A marker into each ring of the context, to each GDA-team peer in turn.
                  for (int p = 0; p < k.n; ++p) {
                    const ccoTraceRecord& r = c.records[4 + p];
                    CHECK_OR_FAIL(r.peer == p && r.aux == 2 && r.ring == static_cast<uint32_t>(p) &&
                                  StampedInOrder(r, c.stamps[4 + p]));
                  }
                  // The waits and the flush: spans of the device alone.
                  CHECK_OR_FAIL(c.records[7].aux == 3 && c.records[7].bytes == 1 && c.records[8].aux == 6 &&
                                c.records[9].aux == 2);
                  for (int i = 7; i < 11; ++i)
                    CHECK_OR_FAIL(DeviceOnly(c.records[i], c.stamps[i]) && c.records[i].status == 0);
                  // One call after another: each began after the one before it began.
                  for (size_t i = 1; i < c.records.size(); ++i)
                    CHECK_OR_FAIL(c.records[i - 1].begin <= c.records[i].begin);
                  CHECK_OR_FAIL(ClockBoundsHoldZero(seen.offset));
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                }),
            0);
  unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
}

// The direct path: done by the device's own stores, recorded without proxy stamps.
TEST(TraceOnHost, GdaDirectPath) {
  TraceFolder folder;
  EXPECT_EQ(
      RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                  [](Rank& k) {
                    ccoGda<> gda(k.dc, 0, kTimeout);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    const int right = (k.rank + 1) % k.n;
                    CHECK_OR_FAIL(gda.put(right, k.win, 8192, k.win, 0, 64, CCO_SIGNAL_INC, 1) == 0);
                    CHECK_OR_FAIL(gda.wait_signal(1, 1) == 0);
                    CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                    Seen seen;
                    CHECK_OR_FAIL(Capture(k, &seen));
                    const TraceCapture& c = seen.capture;
                    CHECK_OR_FAIL(Kinds(c) == (std::vector<uint16_t>{CCO_TRACE_GDA_PUT, CCO_TRACE_GDA_WAIT_SIGNAL}));
                    const ccoTraceRecord& put = c.records[0];
                    CHECK_OR_FAIL(put.peer == right && put.bytes == 64 && (put.flags & CCO_TRACE_FLAG_DIRECT) &&
                                  (put.flags & CCO_TRACE_FLAG_SIGNAL) && DeviceOnly(put, c.stamps[0]));
                    return ccoBarrierAll(k.comm) == ccoSuccess;
                  }),
      0);
}

// Between two "nodes" through the tcp backend: the proxy's completion comes when the peer
// answered, after the op was queued with the backend.
TEST(TraceOnHost, GdaOverTcp) {
  TraceFolder folder;
  setenv("CCO_NET", "tcp", 1);
  setenv("CCO_SOCKET_IFNAME", "=lo", 1);
  EXPECT_EQ(
      RunGdaRanks(
          2, CCO_GDA_CONNECTION_FULL,
          [](Rank& k) {
            ccoGda<> gda(k.dc, 0, kTimeout);
            Fill(k.mem, k.rank, 1024);
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            const int other = 1 - k.rank;
            CHECK_OR_FAIL(gda.put(other, k.win, 32768, k.win, 0, 16384, CCO_SIGNAL_INC, 2) == 0);
            CHECK_OR_FAIL(gda.get(other, k.win, 0, k.win, 49152, 4096) == 0);
            CHECK_OR_FAIL(gda.wait_signal(2, 1) == 0);
            CHECK_OR_FAIL(gda.flush() == 0);
            CHECK_OR_FAIL(Holds(k.mem + 49152, other, 1024));
            CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
            Seen seen;
            CHECK_OR_FAIL(Capture(k, &seen));
            const TraceCapture& c = seen.capture;
            CHECK_OR_FAIL(Kinds(c) == (std::vector<uint16_t>{CCO_TRACE_GDA_PUT, CCO_TRACE_GDA_GET,
                                                             CCO_TRACE_GDA_WAIT_SIGNAL, CCO_TRACE_GDA_FLUSH}));
            CHECK_OR_FAIL(c.records[0].peer == other && c.records[0].bytes == 16384 && c.records[1].bytes == 4096);
            CHECK_OR_FAIL(StampedInOrder(c.records[0], c.stamps[0]) && StampedInOrder(c.records[1], c.stamps[1]));
            CHECK_OR_FAIL(ClockBoundsHoldZero(seen.offset));
            return ccoBarrierAll(k.comm) == ccoSuccess;
          },
          /*nodesPerHost=*/2),
      0);
  unsetenv("CCO_NET");
  unsetenv("CCO_SOCKET_IFNAME");
}

// SDMA: puts and gets on a queue's stream, the quiet and the pool waits.
TEST(TraceOnHost, Sdma) {
  TraceFolder folder;
  EXPECT_EQ(RunGdaRanks(
                2, CCO_GDA_CONNECTION_NONE,
                [](Rank& k) {
                  ccoSdma sdma(k.dc, kTimeout);
                  Fill(k.mem, k.rank, 256);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  const int peer = 1 - k.rank;
                  CHECK_OR_FAIL((sdma.put<ccoCoopThread, true>(peer, k.win, 8192, k.win, 0, 1024, 1)) == 0);
                  CHECK_OR_FAIL((sdma.get<ccoCoopThread, true>(peer, k.win, 16384, k.win, 0, 512, 0)) == 0);
                  CHECK_OR_FAIL(sdma.quiet(peer) == 0);
                  CHECK_OR_FAIL(sdma.wait_signal(peer, 1, 1) == 0);
                  CHECK_OR_FAIL(sdma.wait_local(peer, 0, 1) == 0);
                  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                  Seen seen;
                  CHECK_OR_FAIL(Capture(k, &seen));
                  const TraceCapture& c = seen.capture;
                  CHECK_OR_FAIL(Kinds(c) ==
                                (std::vector<uint16_t>{CCO_TRACE_SDMA_PUT, CCO_TRACE_SDMA_GET, CCO_TRACE_SDMA_QUIET,
                                                       CCO_TRACE_SDMA_WAIT, CCO_TRACE_SDMA_WAIT}));
                  const uint32_t queues = k.dc.sdmaQueueCount;
                  CHECK_OR_FAIL(c.records[0].peer == peer && c.records[0].aux == 1 && c.records[0].bytes == 1024 &&
                                c.records[0].ring == cco_sdma_slot(peer, 1, queues) &&
                                (c.records[0].flags & CCO_TRACE_FLAG_SIGNAL));
                  CHECK_OR_FAIL(c.records[1].peer == peer && c.records[1].aux == 0 && c.records[1].bytes == 512 &&
                                c.records[1].ring == cco_sdma_slot(peer, 0, queues));
                  CHECK_OR_FAIL(StampedInOrder(c.records[0], c.stamps[0]) && StampedInOrder(c.records[1], c.stamps[1]));
                  CHECK_OR_FAIL((c.records[3].flags & CCO_TRACE_FLAG_LOCAL) == 0 &&
                                (c.records[4].flags & CCO_TRACE_FLAG_LOCAL));
                  for (int i = 2; i < 5; ++i)
                    CHECK_OR_FAIL(DeviceOnly(c.records[i], c.stamps[i]) && c.records[i].peer == peer);
                  return ccoBarrierAll(k.comm) == ccoSuccess;
                },
                1, /*sdmaQueues=*/2),
            0);
}

// The barriers and a kernel's own ranges; an LSA barrier of a device communicator without
// rings (made before the agreement round, with no proxy) is traced too.
bool BarriersAndRangesOf(Rank& k) {
  ccoGda<> gda(k.dc, 0, kTimeout);
  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
  const uint64_t begin = ccoTraceClock(k.dc);
  CHECK_OR_FAIL(begin != 0);
  CHECK_OR_FAIL((ccoGdaBarrierSession<ccoCoopThread>(ccoCoopThread(), gda, 1).sync()) == 0);
  ccoTraceRange<ccoCoopThread>(k.dc, CCO_TRACE_TAG_TILE, 7, begin);
  ccoTraceRange<ccoCoopThread>(k.dc, CCO_TRACE_TAG_USER + 5, 9, 0);  // begin 0: nothing

  ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.gdaConnectionType = CCO_GDA_CONNECTION_NONE;
  reqs.lsaBarrierCount = 1;
  ccoDevComm plain;
  CHECK_OR_FAIL(ccoDevCommCreate(k.comm, &reqs, &plain) == ccoSuccess);
  CHECK_OR_FAIL(plain.trace != 0 && plain.trace != k.dc.trace);
  CHECK_OR_FAIL((ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), plain, 0).sync(kTimeout)) == 0);
  // Nobody arrives again: this wait alone times out (both ranks make it).
  CHECK_OR_FAIL((ccoLsaBarrierSession<ccoCoopThread>(ccoCoopThread(), plain, 0).wait(1'000'000)) ==
                CCO_DEVICE_STATUS_TIMEOUT);
  Seen lsa;
  CHECK_OR_FAIL(Capture(k, &lsa, plain));
  CHECK_OR_FAIL(ccoDevCommDestroy(k.comm, &plain) == ccoSuccess);
  CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);

  const TraceCapture& l = lsa.capture;
  CHECK_OR_FAIL(Kinds(l) == (std::vector<uint16_t>{CCO_TRACE_LSA_BARRIER, CCO_TRACE_LSA_BARRIER}));
  CHECK_OR_FAIL(l.records[0].flags == 0 && l.records[0].status == 0 && l.records[0].bytes == 1 &&
                l.records[0].aux == 0);
  CHECK_OR_FAIL(l.records[1].flags == CCO_TRACE_FLAG_WAIT_ONLY && l.records[1].status == CCO_DEVICE_STATUS_TIMEOUT);

  Seen seen;
  CHECK_OR_FAIL(Capture(k, &seen));
  const TraceCapture& c = seen.capture;
  // The GDA barrier: its signal to the other rank (through the proxy), then the round.
  CHECK_OR_FAIL(Kinds(c) == (std::vector<uint16_t>{CCO_TRACE_GDA_SIGNAL, CCO_TRACE_GDA_BARRIER, CCO_TRACE_RANGE}));
  const ccoTraceRecord &sig = c.records[0], &round = c.records[1], &tile = c.records[2];
  CHECK_OR_FAIL(sig.peer == 1 - k.rank && sig.aux == k.dc.gdaSignalCount + 1 && StampedInOrder(sig, c.stamps[0]));
  CHECK_OR_FAIL(round.aux == 1 && round.bytes == 1 && round.status == 0 && DeviceOnly(round, c.stamps[1]));
  CHECK_OR_FAIL(tile.aux == CCO_TRACE_TAG_TILE && tile.bytes == 7 && tile.begin == begin &&
                DeviceOnly(tile, c.stamps[2]));
  CHECK_OR_FAIL(tile.begin <= round.begin && round.end <= tile.end);  // the range holds the round
  return true;
}

TEST(TraceOnHost, BarriersAndRanges) {
  TraceFolder folder;
  setenv("CCO_GDA_DIRECT_MAX_BYTES", "0", 1);
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL, BarriersAndRangesOf), 0);
  unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
}

// A full buffer keeps the first CCO_TRACE_EVENTS calls and counts the others; a flush empties
// it, and the next calls are recorded from slot 0 again.
TEST(TraceOnHost, BoundedBufferCountsWhatItDropped) {
  TraceFolder folder;
  setenv("CCO_TRACE_EVENTS", "4", 1);
  setenv("CCO_GDA_DIRECT_MAX_BYTES", "0", 1);
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [](Rank& k) {
                          ccoGda<> gda(k.dc, 0, kTimeout);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          const int other = 1 - k.rank;
                          for (int i = 0; i < 10; ++i) CHECK_OR_FAIL(gda.signal(other, 0) == 0);
                          CHECK_OR_FAIL(gda.wait_signal(0, 10) == 0 && gda.flush() == 0);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          Seen seen;
                          CHECK_OR_FAIL(Capture(k, &seen));
                          const TraceCapture& c = seen.capture;
                          CHECK_OR_FAIL(c.capacity == 4 && c.records.size() == 4 && c.taken == 12 && c.dropped() == 8 &&
                                        c.incomplete == 0);
                          for (int i = 0; i < 4; ++i)
                            CHECK_OR_FAIL(c.records[i].kind == CCO_TRACE_GDA_SIGNAL &&
                                          c.records[i].seq == static_cast<uint32_t>(i + 1) &&
                                          StampedInOrder(c.records[i], c.stamps[i]));
                          // Emptied: two more calls land in slots 0 and 1, with the proxy's stamps of their own.
                          CHECK_OR_FAIL(gda.signal(other, 0) == 0 && gda.wait_signal(0, 1) == 0);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          CHECK_OR_FAIL(Capture(k, &seen));
                          CHECK_OR_FAIL(Kinds(seen.capture) ==
                                        (std::vector<uint16_t>{CCO_TRACE_GDA_SIGNAL, CCO_TRACE_GDA_WAIT_SIGNAL}));
                          CHECK_OR_FAIL(seen.capture.dropped() == 0 && seen.meta.flush == 1);
                          CHECK_OR_FAIL(StampedInOrder(seen.capture.records[0], seen.capture.stamps[0]));
                          return ccoBarrierAll(k.comm) == ccoSuccess;
                        }),
            0);
  unsetenv("CCO_GDA_DIRECT_MAX_BYTES");
}

// ccoDevCommTraceFlush writes a file where it is told; ccoDevCommDestroy writes what is left
// into CCO_TRACE's folder, one file per rank.
TEST(TraceOnHost, FilesAtFlushAndAtDestroy) {
  TraceFolder folder;
  const std::string dir = folder.path();
  EXPECT_EQ(RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                        [&](Rank& k) {
                          ccoGda<> gda(k.dc, 0, kTimeout);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          CHECK_OR_FAIL(gda.signal(1 - k.rank, 0) == 0 && gda.wait_signal(0, 1) == 0);
                          CHECK_OR_FAIL(ccoBarrierAll(k.comm) == ccoSuccess);
                          const std::string path = dir + "/explicit." + std::to_string(k.rank) + ".json";
                          CHECK_OR_FAIL(ccoDevCommTraceFlush(k.comm, &k.dc, path.c_str()) == ccoSuccess);
                          const std::string text = ReadFile(path);
                          CHECK_OR_FAIL(text.rfind("{\"traceEvents\":[", 0) == 0);
                          CHECK_OR_FAIL(text.find("\"name\":\"gda.signal\"") != std::string::npos);
                          CHECK_OR_FAIL(text.find("\"name\":\"process_name\",\"pid\":" + std::to_string(k.rank)) !=
                                        std::string::npos);
                          CHECK_OR_FAIL(text.find("\"otherData\":{\"cco\":{\"version\":1,\"rank\":" +
                                                  std::to_string(k.rank)) != std::string::npos);
                          CHECK_OR_FAIL(ccoDevCommTraceFlush(nullptr, &k.dc, nullptr) != ccoSuccess);
                          CHECK_OR_FAIL(ccoDevCommTraceFlush(k.comm, nullptr, nullptr) != ccoSuccess);
                          CHECK_OR_FAIL(gda.signal(1 - k.rank, 0) == 0 &&
                                        gda.wait_signal(0, 1) == 0);  // left for destroy to write
                          return ccoBarrierAll(k.comm) == ccoSuccess;
                        }),
            0);
  int explicitFiles = 0, atDestroy[2] = {0, 0};
  for (const std::string& f : folder.Files()) {
    if (f.rfind("explicit.", 0) == 0) ++explicitFiles;
    for (int r = 0; r < 2; ++r)
      if (f.rfind("cco-trace.r" + std::to_string(r) + ".", 0) == 0) {
        ++atDestroy[r];
        const std::string text = ReadFile(dir + "/" + f);
        EXPECT_NE(text.find("\"flush\":1"), std::string::npos) << f;
        EXPECT_NE(text.find("\"recorded\":2"), std::string::npos) << f;
      }
  }
  EXPECT_EQ(explicitFiles, 2);
  EXPECT_EQ(atDestroy[0], 1);
  EXPECT_EQ(atDestroy[1], 1);
}

// Without CCO_TRACE: no buffer (ccoDevComm.trace is 0, the trace points' one test), no file,
// and a flush is no error.
TEST(TraceOnHost, OffWithoutCcoTrace) {
  unsetenv("CCO_TRACE");
  EXPECT_EQ(
      RunGdaRanks(2, CCO_GDA_CONNECTION_FULL,
                  [](Rank& k) {
                    CHECK_OR_FAIL(k.dc.trace == 0);
                    ccoGda<> gda(k.dc, 0, kTimeout);
                    CHECK_OR_FAIL(ccoTraceClock(k.dc) == 0);
                    CHECK_OR_FAIL(gda.signal(1 - k.rank, 0) == 0 && gda.wait_signal(0, 1) == 0);
                    CHECK_OR_FAIL(ccoDevCommTraceFlush(k.comm, &k.dc, "/nonexistent/never-written.json") == ccoSuccess);
                    return ccoBarrierAll(k.comm) == ccoSuccess;
                  }),
      0);
}

// A record count out of range is refused by name, on every rank.
TEST(TraceOnHost, BadEventCountIsRefused) {
  TraceFolder folder;
  for (const char* bad : {"0", "99999999999"}) {
    setenv("CCO_TRACE_EVENTS", bad, 1);
    ccoUniqueId id;
    ASSERT_EQ(ccoGetUniqueId(&id), ccoSuccess);
    setenv("CCO_PLATFORM", "cpu", 1);
    ccoComm* comm = nullptr;
    ASSERT_EQ(ccoCommCreate(id, 1, 0, 8 << 20, &comm), ccoSuccess);
    ccoDevCommRequirements reqs = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
    ccoDevComm dc;
    EXPECT_NE(ccoDevCommCreate(comm, &reqs, &dc), ccoSuccess);
    EXPECT_NE(std::string(ccoGetLastError()).find("CCO_TRACE_EVENTS"), std::string::npos) << ccoGetLastError();
    ccoCommDestroy(comm);
  }
  unsetenv("CCO_TRACE_EVENTS");
}

}  // namespace
