// The GDA proxy of one communicator: a progress thread that consumes the rings of every
// device communicator attached to it, moves the bytes through a backend and applies signals
// and counters after the data (abi/gda.h has the ring; this file the work).
//
// Backend here: `local`, the ranks of this host. Peers' windows are mapped in this rank's
// flat range (comm/window.cc maps every host peer), so a put or a get is one copy on the
// proxy's own stream (memcpy on the cpu platform); a signal is an atomic add on the target
// rank's signal word in shared host memory, done after the copy has completed, so a signal
// is never visible before its data nor before the data of earlier posts to that peer on
// that context (one ring, consumed in order).
//
// The thread spins while there is work, then yields, then sleeps a little: several ranks on
// few cores do not starve each other. Errors fail the ring (the device sees them in its
// waits) and are kept for the host (lastError).
#ifndef CCO_HOST_PROXY_PROXY_H_
#define CCO_HOST_PROXY_PROXY_H_

#include <stdint.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "proxy/gda_resources.h"

struct ccoComm;

namespace cco {

class Proxy {
 public:
  explicit Proxy(ccoComm* comm);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts serving `g`'s rings (and the thread, the first time).
  Status Attach(const std::shared_ptr<GdaResources>& g);
  // Stops serving `g`; returns once the thread no longer touches it.
  void Detach(const GdaResources* g);

  // The windows descriptors may name (ccoWindowDevice.id): where each starts in every slice
  // and how large it is. Changed by (de)registration, read by the thread.
  void AddWindow(uint32_t id, uint64_t offset, uint64_t size);
  void RemoveWindow(uint32_t id);

  // The first error the proxy met, "" if none.
  std::string lastError() const;

 private:
  struct Window {
    uint64_t offset, size;
  };
  void Loop();
  // One pass over every ring; whether anything was done.
  bool Pass(GdaResources& g);
  // Carries out one descriptor of ring `ring`; a failure names what was wrong.
  Status Execute(GdaResources& g, uint32_t ring, const ccoGdaDesc& d);
  Status Resolve(uint32_t id, uint64_t offset, uint64_t bytes, uint64_t* windowOffset);
  void Fail(GdaResources& g, uint32_t ring, int32_t peer, const Status& why);

  ccoComm* comm_;
  bool trace_ = false;  // CCO_GDA_TRACE: every descriptor carried out, on stderr
  std::thread thread_;
  std::atomic<bool> stop_{false};
  uint64_t stream_ = 0;
  bool streamMade_ = false;
  uint64_t* staging_ = nullptr;  // pinned: put_value's value, as a copy source
  uint64_t stagingDevice_ = 0;

  mutable std::mutex mu_;  // attached, windows, lastError
  std::vector<std::shared_ptr<GdaResources>> attached_;
  std::map<uint32_t, Window> windows_;
  std::string lastError_;
  std::atomic<uint64_t> generation_{0};  // bumped by Attach and Detach; the thread acknowledges below
  std::atomic<uint64_t> seenGeneration_{0};
};

}  // namespace cco

#endif  // CCO_HOST_PROXY_PROXY_H_
