// SPDX-License-Identifier: MIT
// What a proxy knows of the communicator it serves, and no more: the device it queues work
// on, who is where, where every host rank's slice lies in this rank's flat range, the host
// peers whose end it watches for, and a way to ask about windows. comm/ builds it once the
// flat range is reserved and the host mesh is connected; nothing in it changes after that
// but the windows, which stay with their one owner (WindowLookup).
#ifndef CCO_HOST_PROXY_PROXY_CONTEXT_H_
#define CCO_HOST_PROXY_PROXY_CONTEXT_H_

#include <stdint.h>

#include <atomic>
#include <utility>
#include <vector>

#include "common/status.h"
#include "platform/platform.h"
#include "proxy/liveness.h"
#include "topology/topology.h"

namespace cco {

// The communicator's windows as the proxy asks about them, by ccoWindowDevice.id, offsets
// inside a slice. Registration and deregistration change them on the caller's thread while the
// proxy's thread asks, so every answer is safe from any thread; a deregistration removes the
// window here first and then waits for the proxy (Proxy::Quiesce), so no work queued later
// names it.
class WindowLookup {
 public:
  virtual ~WindowLookup() = default;
  // Where `bytes` at `offset` of window `id` start inside a slice; InvalidArgument naming what
  // is wrong where the window is not a live data window (the communicator's own windows of
  // resources are not) or they run past its end.
  virtual Status Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* inSlice) const = 0;
  // Whether `bytes` at `inSlice` lie inside one live data window.
  virtual bool Covers(uint64_t inSlice, uint64_t bytes) const = 0;
};

// The communicator's abort word (ccoDevComm.abortFlag, host-mapped: kernels poll it) holds
// one of these; any non-zero value ends every device wait.
constexpr uint32_t kAbortWordLive = 0;
constexpr uint32_t kAbortWordAborted = 1;  // ccoCommAbort
constexpr uint32_t kAbortWordFailed = 2;   // the proxy saw a rank end or a network peer lost

// Each rank's word in its resource pool (ProxyContext::statusOffset) says how its process went
// on, for the host peers that see it end: whether it had failed because of another rank, or
// left after destroying its communicator. Only for naming the rank at fault in messages.
constexpr uint64_t kRankRunning = 0;
constexpr uint64_t kRankLeft = uint64_t{1} << 32;
constexpr uint64_t kRankFailedAfter = uint64_t{2} << 32;  // | the world rank it blamed

struct ProxyContext {
  Platform* platform = nullptr;
  int device = 0;
  int64_t timeoutMs = 0;  // how long ccoDevCommDestroy waits for network ops to come back
  // The abort word's host address: the proxy raises it (kAbortWordFailed) once the
  // communicator fails, so that every device wait of it ends.
  uint32_t* abortWord = nullptr;
  // ccoCommAbort's flag: the proxy's host-side waits (ccoDevCommDestroy's) end at once.
  const std::atomic<bool>* aborted = nullptr;
  // Where each rank's status word lies inside its slice (its resource pool's start); whether
  // there are any (a communicator being made has none yet).
  uint64_t statusOffset = 0;
  bool statusWords = false;
  // The cpu platform: every rank's bell lies beside its status word (proxy/host_bell.h), and the
  // proxy rings its own and its host peers' after a pass that wrote words for the device.
  bool bells = false;
  Topology topo;
  std::vector<uint64_t> hostSlices;  // by host index: where that rank's slice starts here
  uint64_t stride = 0;               // bytes from one slice to the next
  // (host index, descriptor-mesh socket) of every host peer in another process: the socket
  // hangs up when that process ends.
  std::vector<std::pair<int, int>> peerSockets;
  // This rank's liveness word, which the proxy's thread holds while it runs, and each host
  // peer's (by host index; null where none: in this process, or not exchanged). Both outlive
  // the proxy.
  OwnLiveness* liveness = nullptr;
  std::vector<const PeerLiveness*> peerLiveness;
  const WindowLookup* windows = nullptr;  // outlives the proxy
  // Each host rank's host words (comm/host_words.h) by host index, for the CPU and for the
  // device; empty where this rank has none. They outlive the proxy.
  std::vector<char*> hostWordsCpu;
  std::vector<uint64_t> hostWordsDevice;

  uint64_t MySlice() const { return hostSlices[topo.hostRank]; }
  uint64_t LsaSlice(int lsaRank) const { return hostSlices[topo.lsaHostBase + lsaRank]; }
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_PROXY_CONTEXT_H_
