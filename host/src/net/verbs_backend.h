// SPDX-License-Identifier: MIT
// The verbs backend (net/backend.h): GDA between hosts over RDMA (rdma-core, loaded at run
// time: net/verbs_api.h). One RC queue pair per (lane, peer), lanes = GDA contexts modulo
// VerbsOptions::lanes; every window registered with the NIC (dma-buf for GPU memory where the
// driver exports one, else by address), its key exchanged with the peers.
//
//   put          RDMA WRITE from the local window into the peer's
//   put+signal   WRITE, then ATOMIC FETCH_AND_ADD of the amount into this rank's word of the
//                peer's signal, chained in one post (RC executes them in order at the target)
//   put_value    WRITE with the bytes inline in the work request
//   signal       FETCH_AND_ADD alone
//   get          RDMA READ into the local window, then an 8-byte READ fenced behind it (the
//                flush: it completes only after the data READ has landed)
//   marker       a zero-length WRITE: completes after everything before it on the queue pair
//
// Only the last request of a post asks for a completion; its wr_id is the op's cookie.
// Ranges are checked against the peer's window keys before anything is posted, and the
// target's NIC enforces each key's bounds again. A failed completion breaks its queue pair:
// the peer is lost, and every later op to it fails at once. This backend has never run on a
// NIC here (no RDMA device on these machines): tests drive it against a fake context.
#ifndef CCO_HOST_NET_VERBS_BACKEND_H_
#define CCO_HOST_NET_VERBS_BACKEND_H_

#include <stdint.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/backend.h"
#include "net/verbs_device.h"

namespace cco {

// What a rank tells a peer about the queue pair that serves it (the bootstrap carries it).
struct VerbsEndpoint {
  uint32_t qpn;
  uint32_t psn;
  uint16_t lid;
  uint8_t global;  // 1: address by GID (RoCE)
  uint8_t mtu;     // ibv_mtu of the port
  uint8_t gid[16];
  uint32_t reserved;
};
static_assert(sizeof(VerbsEndpoint) == 32, "VerbsEndpoint travels as 32 bytes");

// A registered window as its peers address it.
struct VerbsWindowKey {
  uint64_t address;
  uint64_t size;
  uint32_t rkey;
  uint32_t flags;  // kVerbsKeySignalsOnly, or 0
};
// The window holds device communicators' resources (comm/resource_pool.h): its memory takes
// the signals' atomics and nothing else (the NIC refuses a WRITE or READ with its key), and
// no put or get is built against it.
constexpr uint32_t kVerbsKeySignalsOnly = 1;

// A dma-buf of device memory [va, va + size): *fd (the caller closes it) and the offset of va
// in it; ccoUnsupported where the platform cannot export one.
using DmaBufExporter = std::function<Status(uint64_t va, size_t size, int* fd, uint64_t* offset)>;

class VerbsBackend : public NetBackend {
 public:
  static constexpr int kSendDepth = 256;  // work requests in flight per queue pair

  // Takes `device`: protection domain, completion queue and, for each rank q with peers[q],
  // options.lanes queue pairs in INIT.
  static Status Create(const VerbsApi* api, const VerbsOptions& options, VerbsDevice device, int rank,
                       const std::vector<bool>& peers, int64_t timeoutMs, DmaBufExporter exporter,
                       std::unique_ptr<VerbsBackend>* out);
  ~VerbsBackend() override;

  int lanes() const { return options_.lanes; }
  // This rank's end of lane `lane` toward `peer`, and its connection to the peer's end.
  VerbsEndpoint Endpoint(int peer, int lane) const;
  Status Connect(int peer, int lane, const VerbsEndpoint& theirs);

  // This rank's memory of window `id` (key for the peers), and the peers' keys. From user
  // threads, while the proxy thread posts. signalsOnly: the communicator's own window of
  // resources, registered for remote atomics only (kVerbsKeySignalsOnly).
  Status RegisterWindow(uint32_t id, uint64_t address, uint64_t size, VerbsWindowKey* key, bool signalsOnly = false);
  Status SetPeerWindow(int peer, uint32_t id, const VerbsWindowKey& key);
  void DeregisterWindow(uint32_t id);

  const char* name() const override { return "verbs"; }
  bool Reaches(int32_t peer) const override;
  void Post(const NetOp& op, NetTargetMap& map) override;
  bool Progress(NetTargetMap& map, std::vector<NetCompletion>* done) override;
  std::string lastError() const override;

 private:
  struct Lane;
  struct Work;
  VerbsBackend(const VerbsApi* api, const VerbsOptions& options, VerbsDevice device, int rank, int64_t timeoutMs,
               DmaBufExporter exporter);
  // The work requests of `op`, checked against the windows; an error refuses the op.
  Status Build(const NetOp& op, Work* work);
  // Posts `work` on its lane now; false when the lane is full (it waits in the backlog).
  bool TryPost(Lane& lane, Work& work, std::vector<NetCompletion>* done);
  void FailPeer(int peer, const Status& why, std::vector<NetCompletion>* done);

  const VerbsApi* api_;
  VerbsOptions options_;
  VerbsDevice device_;
  int rank_;
  int64_t timeoutMs_;
  DmaBufExporter exporter_;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  uint64_t* scratch_ = nullptr;  // where atomics' old values and the get flush land
  ibv_mr* scratchMr_ = nullptr;
  std::vector<std::vector<std::unique_ptr<Lane>>> lanes_;  // [peer][lane]; empty where unused
  std::vector<bool> lost_;
  std::vector<NetCompletion> refused_;

  mutable std::mutex windowsMu_;  // the window tables and lastError, written from user threads
  std::map<uint32_t, ibv_mr*> localWindows_;
  std::map<std::pair<int, uint32_t>, VerbsWindowKey> peerWindows_;
  std::string lastError_;
};

}  // namespace cco

#endif  // CCO_HOST_NET_VERBS_BACKEND_H_
