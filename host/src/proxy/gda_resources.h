// What one device communicator's GDA needs on the host: the rings (abi/gda.h), this rank's
// signal and counter words, and every host peer's signal words mapped here so that this
// rank's proxy can apply signals on the target side. Made and freed collectively with the
// device communicator.
//
// Signal words live in shared host memory (a sealed memfd registered with the driver): the
// device polls them, and any proxy of the host adds to them atomically once the data it
// signals has landed. Counters live there too; only this rank's proxy writes them.
#ifndef CCO_HOST_PROXY_GDA_RESOURCES_H_
#define CCO_HOST_PROXY_GDA_RESOURCES_H_

#include <stdint.h>

#include <memory>
#include <vector>

#include "abi/cco_abi.h"
#include "common/status.h"
#include "proxy/ring_consumer.h"

struct ccoComm;

namespace cco {

struct GdaResources {
  int connectionType = CCO_GDA_CONNECTION_NONE;
  int contexts = 0;
  int peerCount = 0;      // rings per context
  uint32_t depth = 0;
  ccoGdaTopo topo{};
  std::vector<int> peerRank;  // by peer index (ring % peerCount): the world rank it connects
  std::vector<int> peerHost;  // ... and that rank's host index (-1: on another host)
  uint32_t signalWords = 0;   // user signals, then gdaBarrierCount * nRanks barrier words
  uint32_t counterWords = 0;

  // The rings: descriptors and host-side words (host-mapped), device-side words.
  void* ringHost = nullptr;
  uint64_t ringHostDevice = 0;
  size_t ringHostBytes = 0;
  uint64_t ringDevice = 0;
  std::vector<RingConsumer> consumers;  // by ring index

  // This rank's table (signals, then counters) and every host peer's, by host index.
  void* table = nullptr;
  uint64_t tableDevice = 0;
  size_t tableBytes = 0;
  std::vector<uint64_t*> peerTables;    // host addresses; this rank's own at its host index
  std::vector<bool> mappedTable;        // true: mapped here from a descriptor (unmap at the end)
  // Counter markers each ring has passed: [context][counter][peer index] (the proxy's own).
  std::vector<uint64_t> marks;

  uint32_t rings() const { return static_cast<uint32_t>(contexts * peerCount); }
  uint64_t* counters() const { return static_cast<uint64_t*>(table) + signalWords; }
  uint64_t& mark(int context, uint32_t counter, int peer) {
    return marks[(static_cast<size_t>(context) * counterWords + counter) * peerCount + peer];
  }
};

// Whether `reqs` asks for GDA connections (the connection type selects more than nothing).
bool WantsGda(const ccoComm& c, const ccoDevCommRequirements& reqs);

// Collective over the communicator: allocates, initialises and shares the GDA resources.
// `serial` numbers the device communicator (the same on every rank).
Status CreateGdaResources(ccoComm& c, const ccoDevCommRequirements& reqs, uint64_t serial,
                          std::shared_ptr<GdaResources>* out);
// Local: frees them (the caller has made sure no proxy of the host still uses them).
void DestroyGdaResources(ccoComm& c, GdaResources& g);

}  // namespace cco

#endif  // CCO_HOST_PROXY_GDA_RESOURCES_H_
