// SPDX-License-Identifier: MIT
// The proxy of one communicator: a progress thread that consumes the GDA and SDMA rings of
// every device communicator attached to it, moves the bytes through a backend and applies
// signals and counters after the data (abi/gda.h has the ring; this file the work).
//
// Backends: `local` for the ranks of this host, and a network backend (net/backend.h: tcp)
// for ranks of other hosts, or of other nodes when CCO_NET asks for it. Local: peers' windows
// and resource windows are mapped in this rank's flat range (window registration maps every
// host peer's copy), so a put or a get
// is one copy on the proxy's own stream (memcpy on the cpu platform), and a signal is a
// stream write of this rank's running sum into its own word of the target's signal
// (abi/gda.h), queued behind the copy. Everything of the communicator goes through that
// one stream in ring order, so a signal is never visible before its data nor before the
// data of earlier posts; counters and each ring's `consumed` are stream writes too. The
// thread only queues work and never waits for it: a put+signal reaches the target after
// one pass and the stream's own latency. Where the stream has run dry (its tail: copy_queue.h)
// a signal word in the target's host words and a ring's `consumed` are CPU stores instead,
// which land in about a microsecond (comm/host_words.h). SDMA rings (abi/sdma.h) go the same way, each
// queue index on a stream of its own (QueueStreams: shared by every device communicator),
// with the pool slots written behind the data.
//
// A network op is handed to the backend and its ring slot stays in use until the backend
// reports it done at the target; only then does `consumed` pass it (flush means remote
// completion on every backend), and markers count it.
//
// The thread spins while there is work, then (with cores to spare) yields, then naps until
// the network's input or a few microseconds pass: several ranks on few cores do not starve
// each other; with no rings at all it blocks on the host peers' sockets. Errors fail the
// ring (the device sees them in its waits) and are kept for the host (lastError).
//
// A rank lost (its process ended: its host-mesh socket hung up; or the network backend gave
// up on it) fails the communicator: every ring to that rank fails, now and in device
// communicators attached later, and the abort word rises (kAbortWordFailed), so that every
// device wait of every device communicator ends, whatever it waits for (an LSA barrier, a
// signal of another rank, a quiet), within a pass of the loss being seen.
//
// The proxy knows its communicator only through a ProxyContext (proxy/proxy_context.h), and
// its windows only by asking their owner. Its work, a file each: proxy.cc the thread, the
// passes over the rings, attaching and detaching; gda_issue.cc a GDA descriptor between ranks
// of this host; sdma_issue.cc an SDMA descriptor; net_issue.cc a GDA descriptor handed to the
// network backend, and its completion; net_target.cc what a peer's request may reach here;
// lost_ranks.cc ranks lost (host peers whose process ended, network peers given up on) and the
// communicator's failure.
#ifndef CCO_HOST_PROXY_PROXY_H_
#define CCO_HOST_PROXY_PROXY_H_

#include <stdint.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/phase_trace.h"
#include "net/backend.h"
#include "proxy/copy_queue.h"
#include "proxy/gda_resources.h"
#include "proxy/help_gate.h"
#include "proxy/proxy_context.h"
#include "proxy/sdma_resources.h"

namespace cco {

class Proxy : private NetTargetMap {
 public:
  explicit Proxy(ProxyContext context);
  ~Proxy() override;
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts serving the rings (and the thread, the first time); returns once the thread's
  // passes include them, so that a peer may act on them as soon as every rank attached (the
  // tcp target looks a request's device communicator up in the thread's list).
  Status Attach(const std::shared_ptr<GdaResources>& g);
  Status Attach(const std::shared_ptr<SdmaResources>& s);
  // Stops serving them; returns once neither the thread nor a stream touches them.
  void Detach(const GdaResources* g);
  void Detach(const SdmaResources* s);
  // The streams of SDMA queues 0 .. queues - 1, made on first need and kept until the proxy
  // goes: queue q of every device communicator runs on the same stream (its work stays in
  // order, as a queue's must). A process's streams share the GPU's few hardware work queues
  // (CUDA_DEVICE_MAX_CONNECTIONS; fewer under MPS): one queued behind a kernel that waits for
  // this stream's copies would never run, so the streams must stay few however many device
  // communicators the process makes.
  Status QueueStreams(int queues, std::vector<uint64_t>* streams);

  // Returns once the thread has begun a pass after this call and the streams have run dry:
  // nothing queued before still reads or writes memory. A window's owner calls it after
  // taking the window out of its table, before the memory goes.
  void Quiesce();

  // Starts the thread, if host peers in other processes are to be watched, though no rings
  // are attached yet: a device communicator without rings has waits (LSA barriers) that a
  // rank ending must end too.
  Status Watch();

  // This rank is leaving (its communicator is being destroyed): its status word says so, for
  // the host peers that see its process end.
  void Leaving();

  // The cpu platform: this rank's waits asleep on its bell (proxy/host_bell.h) look now.
  void RingOwnBell() const;

  // The cpu platform: one pass of the thread's work (rings, the network backend) made by a
  // rank's waiting device thread, with the gate's mutex held; whether it did anything. On a
  // small machine a hop then costs no hand-off to the proxy thread.
  bool Help();
  // The same for a waiting device thread (cco_host_proxy_help): a pass that reads the network's
  // input, which the thread's naps then leave to the waits (as after HelpNap).
  bool HelpWait();
  // The cpu platform: a waiting device thread, with the gate's mutex held, that would sleep on
  // its bell sleeps on the network's input instead (and the thread's wake-ups), up to `boundNs`,
  // then makes a pass: a reply from a peer then wakes the thread that waits for it, not the
  // proxy thread that would hand it on. False where there is no network input to sleep on, or
  // where `bell` rang since the wait read `seen` (it looks again at once).
  bool HelpNap(const void* bell, uint32_t seen, long boundNs);

  // The first error the proxy or its network backend met (ccoRemoteError), Ok if none. Once it
  // names a lost rank, every ring to that rank has failed.
  Status AsyncError() const;

  // The network backend, once (collectively, when a device communicator first needs one).
  void SetNet(std::shared_ptr<NetBackend> net);
  bool HasNet() const;
  const char* NetName() const;

 private:
  Status StartThread();
  void Loop();
  // One pass over every ring; whether anything was done.
  bool Pass(GdaResources& g);
  bool Pass(SdmaResources& s);
  // Pass over every ring set the thread serves, GDA and SDMA.
  bool PassAll();
  // fn(consumer) for every ring the thread serves.
  template <class Fn> void ForEachConsumer(Fn fn);
  // tail: the streams' StreamTail (copy_queue.h), where the ring set's words may be written
  // with CPU stores once its stream has run dry (GDA's one stream); null: always on the stream.
  template <class IssueFn, class StreamOf, class PeerOf, class NameOf>
  bool Drain(RingSet& rings, IssueFn issue, StreamOf streamOf, PeerOf peerOf, NameOf nameOf, StreamTail* tail);
  // Queues the work of descriptor `ticket` of ring `ring`; a failure names what was wrong.
  // *deferred: the work went to the network backend, which completes the ticket later.
  Status Issue(GdaResources& g, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, bool* deferred, CopyQueue& stream);
  Status IssueNet(GdaResources& g, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d);
  // The counter of a marker on `ring` once everything before it on the ring is done.
  Status PassMarker(GdaResources& g, uint32_t ring, uint32_t counterId, CopyQueue& stream);
  bool ProgressNet(NetBackend& net);
  // The network backend applied a peer's request just now: the rings alone are polled for up
  // to replyWait_, so that a kernel's answer leaves before the rest of the pass.
  void AwaitReply();
  // Host peers in other processes: one that ended (its descriptor-mesh socket hung up) fails
  // the communicator (lost_ranks.cc).
  void WatchHostPeers();
  // Host peer `hostIndex`'s liveness word (proxy/liveness.h), null where there is none.
  const PeerLiveness* PeerWord(int hostIndex) const;
  // Host peer `hostIndex`'s status word (what it wrote before it ended), kRankRunning where
  // there are none.
  uint64_t StatusWordOf(int hostIndex) const;
  // Fails every ring to the ranks lost so far (host peers and network peers): idempotent, and
  // repeated on every watch, so that rings attached since fail too.
  void FailLostPeers();
  void FailHostPeer(int hostIndex);
  void FailNetPeer(int32_t rank);
  // The network backend's lost peers: their rings fail, and the communicator.
  void TakeNetLosses(NetBackend& net);
  // The status word of world rank `rank` where it is a host peer in another process (what it
  // wrote before it ended), else kRankRunning.
  uint64_t HostPeerStatus(int32_t rank) const;
  // The communicator has failed because of world rank `blamed`: `why` is kept (the first
  // error), this rank's status word says so, and its network peers hear it. The caller then
  // fails the lost ranks' rings, and raises the abort word last (RaiseAbortWord).
  void FailCommunicator(int32_t blamed, const std::string& why, PhaseTrace* trace = nullptr);
  // Every device wait of the communicator ends (ccoDevCommAbort's word, as "failed").
  void RaiseAbortWord(PhaseTrace* trace);
  // With nothing to serve, blocks until a host peer's socket has news, Wake is called, or a
  // while has passed.
  void IdleWait();
  // An idle pause of kNap, ended sooner by the network backend's input, by Wake, and (the cpu
  // platform) by a kernel's doorbell.
  void Nap();
  // The cpu platform: a device thread holds the gate (Help): the thread sleeps on wake_ until a
  // doorbell or Wake, or for as long as the network's input is left to waits, and leaves that
  // helper the passes.
  void StandAside();
  // Up to `ns`, until the network's `input` (negative: none) or wake_ is readable; wake_ read
  // empty after.
  void SleepOn(int input, int64_t ns) const;
  void DrainWake() const;    // wake_ read empty
  uint64_t OwnBell() const;  // this rank's bell; 0 where there is none (not the cpu platform)
  // The cpu platform: every ring served says whether the thread sleeps (abi/ring.h).
  void SetAsleep(bool asleep);
  // The cpu platform, after a pass that did work: its writes may be what this rank's or a host
  // peer's waits watch, so every host member's bell rings.
  void RingBells() const;
  void Wake();
  // Waits (bounded) until no op of `g` is with the network backend.
  void WaitNetIdle(const GdaResources* g);
  // NetTargetMap, for ops arriving from other ranks.
  Status WindowAddress(uint32_t window, uint64_t offset, uint64_t bytes, uint64_t* address) override;
  Status SignalAddress(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t* address) override;
  Status AddSignal(uint32_t gdaId, uint32_t signalId, int32_t sender, uint64_t add, uint64_t* address,
                   uint64_t* sum) override;
  Status Issue(SdmaResources& s, uint32_t ring, uint64_t ticket, const ccoGdaDesc& d, CopyQueue& stream);
  Status Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* inSlice) const {
    return ctx_.windows->Resolve(id, offset, bytes, inSlice);
  }
  Status Endpoints(const ccoGdaDesc& d, uint64_t theirs, uint64_t* dst, uint64_t* src);
  Status FlatEndpoints(const ccoGdaDesc& d, int32_t lsaPeer, uint64_t* dst, uint64_t* src);
  // Stops ring `ring` (its posters' waits end), naming the peer and `where`.
  void Fail(RingSet& rings, uint32_t ring, int32_t peer, const std::string& where, const Status& why);
  void FailRing(RingSet& rings, uint32_t ring, ccoGdaRingError error, int32_t peer);
  template <class T> void Remove(std::vector<std::shared_ptr<T>>* list, const T* item);
  // Returns once the thread has finished a pass that began after generation `target`.
  void AwaitPass(uint64_t target);
  void Synchronize(uint64_t stream, const char* what);
  // The pair of windows a copy runs between: copies join only within one pair (copy_queue.h).
  static uint64_t WindowPair(const ccoGdaDesc& d) { return uint64_t{d.dstWindow} << 32 | d.srcWindow; }

  const ProxyContext ctx_;
  bool trace_ = false;                  // CCO_GDA_TRACE: every descriptor carried out, on stderr
  std::chrono::nanoseconds replyWait_;  // CCO_NET_REPLY_WAIT_US
  // CCO_TEST_LOSS_PAUSE_MS: a pause between a loss's verdict and its rings failing (tests).
  std::chrono::milliseconds lossPause_;
  // The cpu platform's long naps (kLongNap; CCO_TEST_PROXY_NAP_MS lengthens them for tests).
  std::chrono::nanoseconds longNap_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  uint64_t stream_ = 0;
  bool streamMade_ = false;
  // What still runs on stream_ (copy_queue.h): its marker word, host-mapped, made with it.
  void* tailWord_ = nullptr;
  std::unique_ptr<StreamTail> tail_;
  std::mutex queueStreamsMu_;
  std::vector<uint64_t> queueStreams_;  // SDMA queue q's stream (QueueStreams)

  mutable std::mutex mu_;  // attached, net, lastError
  // Held by the thread from a loss's verdict until the lost ranks' rings have failed, and taken
  // by AsyncError before mu_: an error reported to the user has its rings failed already (a put
  // to the dead rank after it fails), while a wait that ended on a failed ring finds it said.
  mutable std::mutex lossMu_;
  std::vector<std::shared_ptr<GdaResources>> attached_;
  std::vector<std::shared_ptr<SdmaResources>> attachedSdma_;
  std::string lastError_;
  std::shared_ptr<NetBackend> net_;
  // The thread's own: what it serves, and the ops with the network backend by cookie.
  struct NetPending {
    std::shared_ptr<GdaResources> g;
    uint32_t ring;
    uint64_t ticket;
    bool marker;
    uint32_t counterId;
  };
  std::vector<std::shared_ptr<GdaResources>> threadWork_;
  std::shared_ptr<NetBackend> threadNet_;
  std::vector<std::shared_ptr<SdmaResources>> threadSdma_;
  std::unordered_map<uint64_t, NetPending> netPending_;
  uint64_t nextCookie_ = 1;
  std::vector<NetCompletion> netDone_;
  std::vector<std::pair<int, int>> watched_;  // (host index, mesh socket)
  std::vector<int> deadHosts_;
  std::vector<int32_t> lostNetPeers_;
  std::vector<NetLoss> netLosses_;
  bool failed_ = false;          // FailCommunicator ran (under mu_)
  bool leaving_ = false;         // Leaving ran (under mu_)
  int wake_ = -1;                // an eventfd: Wake() makes IdleWait and Nap return
  bool doorbellsWake_ = false;   // the cpu platform: its kernels' doorbells write wake_ while it naps
  std::vector<uint64_t> bells_;  // the cpu platform: every host member's bell (by host index)
  std::chrono::steady_clock::time_point nextWatch_{};
  std::atomic<uint64_t> generation_{0};  // bumped by Attach and Detach; the thread acknowledges below
  std::atomic<uint64_t> seenGeneration_{0};
  // Held by whoever runs a pass: the thread, or a device thread in Help (through the
  // process's table of helped proxies, which may hold the gate after this proxy is gone).
  std::shared_ptr<HelpGate> gate_;
  // When a waiting device thread last read the network's input, in a pass (HelpWait) or asleep
  // on it (HelpNap; steady clock, ns): while one did lately, the thread's naps leave that input
  // to the waits, so a reply wakes no thread but the one that waits for it.
  std::atomic<int64_t> helperReadAt_{INT64_MIN / 2};
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_PROXY_H_
