// SPDX-License-Identifier: MIT
#include "net/verbs_backend.h"

#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>

namespace cco {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
// A window of resources: the signals' atomics only (remote atomics need local write).
constexpr int kSignalsAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
constexpr int kMaxInline = 64;
constexpr size_t kScratchWords = 8;

uint32_t RandomPsn() {
  uint32_t psn = 0;
  if (getrandom(&psn, sizeof(psn), 0) != static_cast<ssize_t>(sizeof(psn))) psn = static_cast<uint32_t>(getpid());
  return psn & 0xffffff;
}

const char* StatusName(int status) {
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR: return "transport retries exhausted (the peer is unreachable)";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "receiver-not-ready retries exhausted";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error (a key or range the peer refused)";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "flushed (the queue pair broke earlier)";
  }
  return "failed";
}

}  // namespace

// One queue pair toward one peer: its work in flight (only the last request of each op is
// signalled, so each entry is one completion), and ops waiting for room.
struct VerbsBackend::Lane {
  int peer = 0;
  ibv_qp* qp = nullptr;
  uint32_t psn = 0;
  int inFlight = 0;  // work requests posted and not yet completed
  struct Posted {
    uint64_t cookie;
    int requests;
    Clock::time_point at;
  };
  std::deque<Posted> posted;
  std::deque<Work> backlog;
};

// An op's work requests, ready to post (pointers are fixed up at post time: Work moves).
struct VerbsBackend::Work {
  uint64_t cookie = 0;
  int peer = 0, lane = 0;
  int count = 0;
  ibv_send_wr wr[2];
  ibv_sge sge[2];
  uint64_t inlineValue = 0;  // put_value's bytes
};

VerbsBackend::VerbsBackend(const VerbsApi* api, const VerbsOptions& options, VerbsDevice device, int rank,
                           int64_t timeoutMs, DmaBufExporter exporter)
    : api_(api),
      options_(options),
      device_(std::move(device)),
      rank_(rank),
      timeoutMs_(timeoutMs),
      exporter_(std::move(exporter)) {}

Status VerbsBackend::Create(const VerbsApi* api, const VerbsOptions& options, VerbsDevice device, int rank,
                            const std::vector<bool>& peers, int64_t timeoutMs, DmaBufExporter exporter,
                            std::unique_ptr<VerbsBackend>* out) {
  std::unique_ptr<VerbsBackend> b(
      new VerbsBackend(api, options, std::move(device), rank, timeoutMs, std::move(exporter)));
  const std::string where = Fmt("RDMA device ", b->device_.name);
  b->pd_ = api->allocPd(b->device_.context);
  if (b->pd_ == nullptr) return SystemError(Fmt(where, ": ibv_alloc_pd failed"));
  const int peerCount = static_cast<int>(std::count(peers.begin(), peers.end(), true));
  const int cqDepth = std::max(64, peerCount * options.lanes * kSendDepth);
  b->cq_ = api->createCq(b->device_.context, cqDepth, nullptr, nullptr, 0);
  if (b->cq_ == nullptr) return SystemError(Fmt(where, ": ibv_create_cq of ", cqDepth, " entries failed"));
  b->scratch_ = new uint64_t[kScratchWords]();
  b->scratchMr_ = api->regMr(b->pd_, b->scratch_, sizeof(uint64_t) * kScratchWords, IBV_ACCESS_LOCAL_WRITE);
  if (b->scratchMr_ == nullptr) return SystemError(Fmt(where, ": registering the scratch words failed"));
  b->lanes_.resize(peers.size());
  b->lost_.assign(peers.size(), false);
  for (size_t q = 0; q < peers.size(); ++q) {
    if (!peers[q]) continue;
    for (int l = 0; l < options.lanes; ++l) {
      ibv_qp_init_attr init;
      memset(&init, 0, sizeof(init));
      init.send_cq = b->cq_;
      init.recv_cq = b->cq_;
      init.qp_type = IBV_QPT_RC;
      init.sq_sig_all = 0;
      init.cap.max_send_wr = kSendDepth;
      init.cap.max_recv_wr = 1;
      init.cap.max_send_sge = 1;
      init.cap.max_recv_sge = 1;
      init.cap.max_inline_data = kMaxInline;
      std::unique_ptr<Lane> lane(new Lane);
      lane->peer = static_cast<int>(q);
      lane->psn = RandomPsn();
      lane->qp = api->createQp(b->pd_, &init);
      if (lane->qp == nullptr) return SystemError(Fmt(where, ": ibv_create_qp for rank ", q, " failed"));
      ibv_qp_attr attr;
      memset(&attr, 0, sizeof(attr));
      attr.qp_state = IBV_QPS_INIT;
      attr.pkey_index = 0;
      attr.port_num = b->device_.port;
      attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
      if (api->modifyQp(lane->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
        return SystemError(Fmt(where, ": queue pair for rank ", q, " refused INIT"));
      b->lanes_[q].push_back(std::move(lane));
    }
  }
  *out = std::move(b);
  return Status::Ok();
}

VerbsBackend::~VerbsBackend() {
  for (auto& perPeer : lanes_)
    for (auto& lane : perPeer)
      if (lane->qp != nullptr) api_->destroyQp(lane->qp);
  for (auto& w : localWindows_) api_->deregMr(w.second);
  if (scratchMr_ != nullptr) api_->deregMr(scratchMr_);
  delete[] scratch_;
  if (cq_ != nullptr) api_->destroyCq(cq_);
  if (pd_ != nullptr) api_->deallocPd(pd_);
  if (device_.context != nullptr) api_->closeDevice(device_.context);
}

VerbsEndpoint VerbsBackend::Endpoint(int peer, int lane) const {
  VerbsEndpoint e;
  memset(&e, 0, sizeof(e));
  const Lane& l = *lanes_.at(peer).at(lane);
  e.qpn = l.qp->qp_num;
  e.psn = l.psn;
  e.lid = device_.portAttr.lid;
  e.global = device_.portAttr.link_layer == IBV_LINK_LAYER_ETHERNET ? 1 : 0;
  e.mtu = static_cast<uint8_t>(device_.portAttr.active_mtu);
  memcpy(e.gid, device_.gid.raw, sizeof(e.gid));
  return e;
}

Status VerbsBackend::Connect(int peer, int lane, const VerbsEndpoint& theirs) {
  if (peer < 0 || static_cast<size_t>(peer) >= lanes_.size() || lane < 0 ||
      lane >= static_cast<int>(lanes_[peer].size()))
    return InvalidArgument(Fmt("no queue pair for rank ", peer, " lane ", lane));
  if (theirs.mtu < IBV_MTU_256 || theirs.mtu > IBV_MTU_4096 || theirs.reserved != 0)
    return RemoteError(Fmt("rank ", peer, " announced a malformed queue pair"));
  Lane& l = *lanes_[peer][lane];
  const std::string where = Fmt("the queue pair to rank ", peer, " (lane ", lane, ")");
  ibv_qp_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = static_cast<ibv_mtu>(std::min<int>(theirs.mtu, device_.portAttr.active_mtu));
  attr.dest_qp_num = theirs.qpn;
  attr.rq_psn = theirs.psn;
  attr.max_dest_rd_atomic = 16;
  attr.min_rnr_timer = 12;
  attr.ah_attr.port_num = device_.port;
  attr.ah_attr.sl = static_cast<uint8_t>(options_.serviceLevel);
  if (theirs.global || device_.portAttr.link_layer == IBV_LINK_LAYER_ETHERNET) {
    attr.ah_attr.is_global = 1;
    memcpy(attr.ah_attr.grh.dgid.raw, theirs.gid, sizeof(theirs.gid));
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(options_.gidIndex);
    attr.ah_attr.grh.hop_limit = 64;
    attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(options_.trafficClass);
  } else {
    attr.ah_attr.dlid = theirs.lid;
  }
  if (api_->modifyQp(l.qp, &attr,
                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
    return SystemError(Fmt(where, " refused RTR"));
  memset(&attr, 0, sizeof(attr));
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;  // 4.096 us x 2^14 = 67 ms per try
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = l.psn;
  attr.max_rd_atomic = 16;
  if (api_->modifyQp(l.qp, &attr,
                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                         IBV_QP_MAX_QP_RD_ATOMIC) != 0)
    return SystemError(Fmt(where, " refused RTS"));
  return Status::Ok();
}

Status VerbsBackend::RegisterWindow(uint32_t id, uint64_t address, uint64_t size, VerbsWindowKey* key,
                                    bool signalsOnly) {
  const int access = signalsOnly ? kSignalsAccess : kAccess;
  ibv_mr* mr = nullptr;
  std::string dmabuf = "no dma-buf exporter";
  int fd = -1;
  uint64_t offset = 0;
  if (api_->regDmabufMr == nullptr) dmabuf = "the verbs library has no ibv_reg_dmabuf_mr";
  else if (exporter_) {
    Status exported = exporter_(address, size, &fd, &offset);
    if (exported.ok()) {
      mr = api_->regDmabufMr(pd_, offset, size, address, fd, access);
      close(fd);
      if (mr == nullptr) dmabuf = "ibv_reg_dmabuf_mr failed";
    } else {
      dmabuf = exported.message();
    }
  }
  // By address: host memory, or device memory through the driver's peer-memory module.
  if (mr == nullptr) mr = api_->regMr(pd_, reinterpret_cast<void*>(address), size, access);
  if (mr == nullptr)
    return SystemError(Fmt("registering window ", id, " (", size, " bytes) with ", device_.name,
                           " failed (dma-buf: ", dmabuf, "; by address: refused)"));
  std::lock_guard<std::mutex> lock(windowsMu_);
  auto it = localWindows_.find(id);
  if (it != localWindows_.end()) api_->deregMr(it->second);
  localWindows_[id] = mr;
  *key = VerbsWindowKey{address, size, mr->rkey, signalsOnly ? kVerbsKeySignalsOnly : 0u};
  return Status::Ok();
}

Status VerbsBackend::SetPeerWindow(int peer, uint32_t id, const VerbsWindowKey& key) {
  if ((key.flags & ~kVerbsKeySignalsOnly) != 0 || key.address + key.size < key.address)
    return RemoteError(Fmt("rank ", peer, " announced a malformed key for window ", id));
  std::lock_guard<std::mutex> lock(windowsMu_);
  peerWindows_[{peer, id}] = key;
  return Status::Ok();
}

void VerbsBackend::DeregisterWindow(uint32_t id) {
  std::lock_guard<std::mutex> lock(windowsMu_);
  auto it = localWindows_.find(id);
  if (it != localWindows_.end()) {
    api_->deregMr(it->second);
    localWindows_.erase(it);
  }
  for (auto p = peerWindows_.begin(); p != peerWindows_.end();) p = p->first.second == id ? peerWindows_.erase(p) : ++p;
}

bool VerbsBackend::Reaches(int32_t peer) const {
  return peer >= 0 && static_cast<size_t>(peer) < lanes_.size() && !lanes_[peer].empty();
}

std::string VerbsBackend::lastError() const {
  std::lock_guard<std::mutex> lock(windowsMu_);
  return lastError_;
}

Status VerbsBackend::Build(const NetOp& op, Work* w) {
  std::lock_guard<std::mutex> lock(windowsMu_);
  // data: a put's or get's window, which must be a data window (not a signals-only one).
  auto remote = [&](uint32_t window, uint64_t offset, uint64_t bytes, uint64_t* address, uint32_t* rkey,
                    bool data = true) {
    auto it = peerWindows_.find({op.peer, window});
    if (it == peerWindows_.end()) return InvalidArgument(Fmt("window ", window, " has no key from rank ", op.peer));
    if (data && (it->second.flags & kVerbsKeySignalsOnly))
      return InvalidArgument(
          Fmt("window ", window, " of rank ", op.peer, " holds device communicators' resources, not data"));
    if (offset > it->second.size || bytes > it->second.size - offset)
      return InvalidArgument(Fmt(bytes, " bytes at offset ", offset, " run past rank ", op.peer, "'s window ", window));
    *address = it->second.address + offset;
    *rkey = it->second.rkey;
    return Status::Ok();
  };
  auto local = [&](uint64_t address, uint64_t bytes, uint32_t* lkey) {
    auto it = localWindows_.find(op.localWindow);
    if (it == localWindows_.end()) return InvalidArgument(Fmt("window ", op.localWindow, " is not registered here"));
    const uint64_t start = reinterpret_cast<uint64_t>(it->second->addr);
    if (address < start || bytes > it->second->length || address - start > it->second->length - bytes)
      return InvalidArgument(Fmt(bytes, " bytes at ", address, " lie outside window ", op.localWindow));
    *lkey = it->second->lkey;
    return Status::Ok();
  };
  memset(w->wr, 0, sizeof(w->wr));
  memset(w->sge, 0, sizeof(w->sge));
  w->cookie = op.cookie;
  w->peer = op.peer;
  w->lane = op.context % options_.lanes;
  w->count = 0;
  ibv_send_wr& first = w->wr[0];
  switch (op.kind) {
    case NetOpKind::kPut:
    case NetOpKind::kPutValue: {
      first.opcode = IBV_WR_RDMA_WRITE;
      CCO_RETURN_IF_ERROR(remote(op.window, op.offset, op.bytes, &first.wr.rdma.remote_addr, &first.wr.rdma.rkey));
      if (op.kind == NetOpKind::kPutValue) {
        if (op.bytes < 1 || op.bytes > sizeof(uint64_t))
          return InvalidArgument(Fmt("put_value of ", op.bytes, " bytes"));
        w->inlineValue = op.value;
        w->sge[0].length = static_cast<uint32_t>(op.bytes);
        first.send_flags = IBV_SEND_INLINE;  // the bytes are copied when posted
      } else if (op.bytes > 0) {
        if (op.bytes > UINT32_MAX)
          return InvalidArgument(Fmt("a put of ", op.bytes, " bytes (at most 4 GiB - 1 per request)"));
        w->sge[0].addr = op.local;
        w->sge[0].length = static_cast<uint32_t>(op.bytes);
        CCO_RETURN_IF_ERROR(local(op.local, op.bytes, &w->sge[0].lkey));
      }
      first.num_sge = op.bytes > 0 ? 1 : 0;
      w->count = 1;
      break;
    }
    case NetOpKind::kSignal: break;
    case NetOpKind::kGet: {
      if (op.bytes > UINT32_MAX)
        return InvalidArgument(Fmt("a get of ", op.bytes, " bytes (at most 4 GiB - 1 per request)"));
      first.opcode = IBV_WR_RDMA_READ;
      CCO_RETURN_IF_ERROR(remote(op.window, op.offset, op.bytes, &first.wr.rdma.remote_addr, &first.wr.rdma.rkey));
      w->sge[0].addr = op.local;
      w->sge[0].length = static_cast<uint32_t>(op.bytes);
      CCO_RETURN_IF_ERROR(local(op.local, op.bytes, &w->sge[0].lkey));
      first.num_sge = op.bytes > 0 ? 1 : 0;
      // The flush: 8 bytes read again into the scratch words, fenced behind the data READ.
      ibv_send_wr& flush = w->wr[1];
      flush.opcode = IBV_WR_RDMA_READ;
      flush.send_flags = IBV_SEND_FENCE;
      flush.wr.rdma.remote_addr = first.wr.rdma.remote_addr;
      flush.wr.rdma.rkey = first.wr.rdma.rkey;
      w->sge[1] = ibv_sge{reinterpret_cast<uint64_t>(scratch_), 8, scratchMr_->lkey};
      flush.num_sge = op.bytes >= 8 ? 1 : 0;
      w->count = 2;
      break;
    }
  }
  if (op.signal) {
    ibv_send_wr& atomic = w->wr[w->count];
    atomic.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    CCO_RETURN_IF_ERROR(remote(op.signalWindow, op.signalWindowOffset, sizeof(uint64_t), &atomic.wr.atomic.remote_addr,
                               &atomic.wr.atomic.rkey, /*data=*/false));
    if (atomic.wr.atomic.remote_addr % sizeof(uint64_t) != 0) return InvalidArgument("a misaligned signal word");
    atomic.wr.atomic.compare_add = op.signalAdd;
    w->sge[w->count] = ibv_sge{reinterpret_cast<uint64_t>(scratch_ + 1), 8, scratchMr_->lkey};
    atomic.num_sge = 1;
    ++w->count;
  }
  if (w->count == 0) return InvalidArgument("an op with nothing to do");
  return Status::Ok();
}

void VerbsBackend::Post(const NetOp& op, NetTargetMap&) {
  auto refuse = [&](const Status& why, bool lost) {
    NetCompletion c;
    c.cookie = op.cookie;
    c.status = why;
    c.peerLost = lost;
    refused_.push_back(c);
  };
  if (!Reaches(op.peer)) return refuse(RemoteError(Fmt("no queue pair to rank ", op.peer)), true);
  if (lost_[op.peer]) return refuse(RemoteError(Fmt("rank ", op.peer, " was lost earlier: ", lastError())), true);
  Work w;
  Status built = Build(op, &w);
  if (!built.ok()) return refuse(built, false);
  Lane& lane = *lanes_[op.peer][w.lane];
  if (!lane.backlog.empty() || !TryPost(lane, w, &refused_)) lane.backlog.push_back(w);
}

bool VerbsBackend::TryPost(Lane& lane, Work& w, std::vector<NetCompletion>* done) {
  if (lane.inFlight + w.count > kSendDepth) return false;
  for (int i = 0; i < w.count; ++i) {
    w.wr[i].wr_id = w.cookie;
    w.wr[i].sg_list = &w.sge[i];
    w.wr[i].next = i + 1 < w.count ? &w.wr[i + 1] : nullptr;
  }
  if (w.wr[0].send_flags & IBV_SEND_INLINE) w.sge[0].addr = reinterpret_cast<uint64_t>(&w.inlineValue);
  w.wr[w.count - 1].send_flags |= IBV_SEND_SIGNALED;  // one completion per op
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(lane.qp, w.wr, &bad);
  if (rc != 0) {
    FailPeer(lane.peer, ErrnoError(Fmt("ibv_post_send to rank ", lane.peer), rc), done);
    NetCompletion c;
    c.cookie = w.cookie;
    c.peerLost = true;
    c.status = RemoteError(Fmt("ibv_post_send to rank ", lane.peer, " failed"));
    done->push_back(c);
    return true;  // consumed (failed)
  }
  lane.inFlight += w.count;
  lane.posted.push_back(Lane::Posted{w.cookie, w.count, Clock::now()});
  return true;
}

bool VerbsBackend::Progress(NetTargetMap&, std::vector<NetCompletion>* done) {
  bool did = !refused_.empty();
  done->insert(done->end(), refused_.begin(), refused_.end());
  refused_.clear();
  ibv_wc wcs[32];
  const int n = ibv_poll_cq(cq_, 32, wcs);
  for (int i = 0; i < n; ++i) {
    did = true;
    // The lane of this completion (completions of one queue pair come in posting order).
    Lane* lane = nullptr;
    for (auto& perPeer : lanes_)
      for (auto& l : perPeer)
        if (l->qp->qp_num == wcs[i].qp_num) lane = l.get();
    if (lane == nullptr || lane->posted.empty() || lane->posted.front().cookie != wcs[i].wr_id) continue;
    const Lane::Posted p = lane->posted.front();
    lane->posted.pop_front();
    lane->inFlight -= p.requests;
    NetCompletion c;
    c.cookie = p.cookie;
    if (wcs[i].status != IBV_WC_SUCCESS) {
      c.peerLost = true;
      c.status = RemoteError(
          Fmt("rank ", lane->peer, ": ", StatusName(wcs[i].status), " (ibv_wc_status ", wcs[i].status, ")"));
      if (!lost_[lane->peer]) FailPeer(lane->peer, c.status, done);
    }
    done->push_back(c);
  }
  const Clock::time_point now = Clock::now();
  for (size_t q = 0; q < lanes_.size(); ++q) {
    for (auto& l : lanes_[q]) {
      // The front leaves the backlog before it is posted: a failed post fails the peer,
      // which completes (and clears) the backlog, and must not find this op there too.
      while (!l->backlog.empty() && !lost_[q]) {
        Work w = l->backlog.front();
        l->backlog.pop_front();
        if (!TryPost(*l, w, done)) {
          l->backlog.push_front(w);  // the lane is full: it stays first in line
          break;
        }
        did = true;
      }
      if (!lost_[q] && !l->posted.empty() && now - l->posted.front().at > std::chrono::milliseconds(timeoutMs_))
        FailPeer(static_cast<int>(q), Timeout(Fmt("rank ", q, ": no completion for ", timeoutMs_, " ms")), done);
    }
  }
  return did;
}

void VerbsBackend::FailPeer(int peer, const Status& why, std::vector<NetCompletion>* done) {
  lost_[peer] = true;
  NoteLost(peer, why);
  {
    std::lock_guard<std::mutex> lock(windowsMu_);
    if (lastError_.empty()) lastError_ = why.message();
  }
  // Work not yet posted fails now; posted work completes (flushed) through the queue.
  for (auto& l : lanes_[peer]) {
    for (const Work& w : l->backlog) {
      NetCompletion c;
      c.cookie = w.cookie;
      c.peerLost = true;
      c.status = RemoteError(why.message());
      done->push_back(c);
    }
    l->backlog.clear();
  }
}

}  // namespace cco
