// SPDX-License-Identifier: MIT
// What one device communicator's GDA needs on the host: the rings (abi/gda.h), where the
// signal and counter words sit, and the proxy's running sums. Made collectively with the
// device communicator (comm/gda_setup.h), freed locally.
//
// Signal and counter words live in each rank's resources (device memory, mapped in
// every host peer's flat range): the device polls its own memory, and a sender's proxy
// writes the sender's words there with stream writes behind the data (abi/gda.h). The words of
// senders in the target's LSA team live in its host words instead where the device
// communicator has them (comm/host_words.h): written with a CPU store once the proxy's stream
// has run dry, else on the stream.
#ifndef CCO_HOST_PROXY_GDA_RESOURCES_H_
#define CCO_HOST_PROXY_GDA_RESOURCES_H_

#include <stdint.h>

#include <atomic>
#include <memory>
#include <vector>

#include "abi/cco_abi.h"
#include "proxy/ring_set.h"

namespace cco {

// Shared with the proxy's in-flight network ops (shared_from_this), which keep it alive.
struct GdaResources : std::enable_shared_from_this<GdaResources> {
  int connectionType = CCO_GDA_CONNECTION_NONE;
  int contexts = 0;
  int peerCount = 0;  // rings per context
  ccoGdaTopo topo{};
  std::vector<int> peerRank;     // by peer index (ring % peerCount): the world rank it connects
  std::vector<int> peerHost;     // ... and that rank's host index (-1: on another host)
  std::vector<uint8_t> peerNet;  // ... and whether the network backend serves it
  uint32_t id = 0;               // names this device communicator on the wire (alike on every rank)
  uint32_t signalWindow = 0;     // the id of the window that holds its signal words
  uint32_t signalIds = 0;        // user signals, then barrier signals; each has worldSize words
  uint32_t counterWords = 0;

  RingSet rings;  // contexts * peerCount, ring [context * peerCount + peer index]

  // Offsets in a rank's slice of the flat range (where the resources start + layout), set by
  // ccoDevCommCreate once the resources are placed.
  uint64_t signalOffset = 0;
  uint64_t signalWindowOffset = 0;  // ... the same, from the start of window `signalWindow`
  uint64_t counterOffset = 0;
  // Where the device communicator has host signal words (abi/gda.h): their offset in every
  // host rank's host words. The proxy stores there its signals to LSA peers that follow no
  // work still running.
  bool hostSignals = false;
  uint64_t hostSignalOffset = 0;

  // Proxy state: the running sum this rank has written into each peer's word of each signal
  // [peer index][signal id], the same for its host words, and the counter markers each ring
  // has passed [context][counter][peer index].
  std::vector<uint64_t> sent;
  std::vector<uint64_t> sentHost;
  std::vector<uint64_t> marks;
  std::atomic<int64_t> netInFlight{0};  // ops with the network backend
  // Set when ccoDevCommDestroy gave up waiting for them: their completions then touch nothing.
  std::atomic<bool> netAbandoned{false};
  // What each sender on the network has added to each signal here [signal id][world rank]:
  // the proxy writes these sums into the senders' words as their requests are applied.
  std::vector<uint64_t> received;

  uint64_t& sentTo(int peer, uint32_t signalId) { return sent[static_cast<size_t>(peer) * signalIds + signalId]; }
  uint64_t& sentToHost(int peer, uint32_t signalId) {
    return sentHost[static_cast<size_t>(peer) * signalIds + signalId];
  }
  uint64_t& mark(int context, uint32_t counter, int peer) {
    return marks[(static_cast<size_t>(context) * counterWords + counter) * peerCount + peer];
  }
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_GDA_RESOURCES_H_
