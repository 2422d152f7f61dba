// SPDX-License-Identifier: MIT
// The verbs backend against a fake rdma-core: a VerbsApi table of fakes and a context whose
// ops capture every work request posted and hand back the completions a test queues. No NIC
// is needed (these machines have none); what a real one would be asked to do is checked:
// op codes, flags, chaining, keys, inline sizes, queue-pair attributes (TC, SL, GID, LID) and
// the device selection.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "net/verbs_backend.h"
#include "net/verbs_device.h"

namespace cco {
namespace {

struct CapturedWr {
  uint64_t wrId;
  int opcode;
  unsigned flags;
  int numSge;
  ibv_sge sge;
  uint64_t remoteAddr;
  uint32_t rkey;
  uint64_t compareAdd;
  std::string inlineBytes;
};

// The fake library's state (its functions are plain pointers, so it is one global).
struct Fake {
  std::vector<std::string> names{"mlx5_0", "mlx5_1"};
  ibv_device devices[2];
  std::map<std::string, ibv_port_attr> ports;  // "name:port"
  std::deque<ibv_context> contexts;
  std::vector<std::vector<CapturedWr>> posts;  // one entry per ibv_post_send
  std::vector<std::pair<ibv_qp_attr, int>> modifies;
  std::deque<ibv_wc> completions;
  int postResult = 0;
  uint32_t nextQpn = 100, nextKey = 1;
  int dmabufRegistrations = 0, addressRegistrations = 0;
  uint64_t lastDmabufOffset = 0, lastDmabufIova = 0;
  int lastAccess = 0;  // of the last memory registration
};
Fake* fake = nullptr;

int Index(ibv_device* d) { return static_cast<int>(d - fake->devices); }

int PostSend(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad) {
  if (fake->postResult != 0) {
    *bad = wr;
    return fake->postResult;
  }
  std::vector<CapturedWr> chain;
  for (; wr != nullptr; wr = wr->next) {
    CapturedWr c{wr->wr_id, wr->opcode, wr->send_flags, wr->num_sge, {}, 0, 0, 0, {}};
    if (wr->num_sge > 0) c.sge = wr->sg_list[0];
    if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      c.remoteAddr = wr->wr.atomic.remote_addr;
      c.rkey = wr->wr.atomic.rkey;
      c.compareAdd = wr->wr.atomic.compare_add;
    } else {
      c.remoteAddr = wr->wr.rdma.remote_addr;
      c.rkey = wr->wr.rdma.rkey;
    }
    if (wr->send_flags & IBV_SEND_INLINE)  // inline bytes are read at post time
      c.inlineBytes.assign(reinterpret_cast<const char*>(wr->sg_list[0].addr), wr->sg_list[0].length);
    chain.push_back(c);
  }
  fake->posts.push_back(chain);
  return 0;
}

int PollCq(ibv_cq*, int n, ibv_wc* wc) {
  int got = 0;
  while (got < n && !fake->completions.empty()) {
    wc[got++] = fake->completions.front();
    fake->completions.pop_front();
  }
  return got;
}

ibv_device** GetDeviceList(int* count) {
  *count = 2;
  auto** list = new ibv_device*[3];
  list[0] = &fake->devices[0];
  list[1] = &fake->devices[1];
  list[2] = nullptr;
  return list;
}
void FreeDeviceList(ibv_device** list) { delete[] list; }
const char* GetDeviceName(ibv_device* d) { return fake->names[Index(d)].c_str(); }
ibv_context* OpenDevice(ibv_device* d) {
  fake->contexts.emplace_back();
  ibv_context* c = &fake->contexts.back();
  memset(c, 0, sizeof(*c));
  c->device = d;
  c->ops.post_send = PostSend;
  c->ops.poll_cq = PollCq;
  return c;
}
int CloseDevice(ibv_context*) { return 0; }
int QueryPort(ibv_context* c, uint8_t port, ibv_port_attr* attr) {
  auto it = fake->ports.find(fake->names[Index(c->device)] + ":" + std::to_string(port));
  if (it == fake->ports.end()) return EINVAL;
  *attr = it->second;
  return 0;
}
int QueryGid(ibv_context*, uint8_t, int index, ibv_gid* gid) {
  memset(gid, 0, sizeof(*gid));
  gid->raw[15] = static_cast<uint8_t>(index + 1);
  gid->raw[0] = 0xfe;
  return 0;
}
ibv_pd* AllocPd(ibv_context* c) {
  auto* pd = new ibv_pd;
  pd->context = c;
  return pd;
}
int DeallocPd(ibv_pd* pd) {
  delete pd;
  return 0;
}
ibv_mr* NewMr(ibv_pd* pd, uint64_t address, size_t length) {
  auto* mr = new ibv_mr;
  memset(mr, 0, sizeof(*mr));
  mr->pd = pd;
  mr->addr = reinterpret_cast<void*>(address);
  mr->length = length;
  mr->lkey = 1000 + fake->nextKey;
  mr->rkey = 2000 + fake->nextKey++;
  return mr;
}
ibv_mr* RegMr(ibv_pd* pd, void* address, size_t length, int access) {
  ++fake->addressRegistrations;
  fake->lastAccess = access;
  return NewMr(pd, reinterpret_cast<uint64_t>(address), length);
}
ibv_mr* RegDmabufMr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int, int access) {
  ++fake->dmabufRegistrations;
  fake->lastAccess = access;
  fake->lastDmabufOffset = offset;
  fake->lastDmabufIova = iova;
  return NewMr(pd, iova, length);
}
int DeregMr(ibv_mr* mr) {
  delete mr;
  return 0;
}
ibv_cq* CreateCq(ibv_context* c, int, void*, ibv_comp_channel*, int) {
  auto* cq = new ibv_cq;
  memset(cq, 0, sizeof(*cq));
  cq->context = c;
  return cq;
}
int DestroyCq(ibv_cq* cq) {
  delete cq;
  return 0;
}
ibv_qp* CreateQp(ibv_pd* pd, ibv_qp_init_attr* init) {
  EXPECT_EQ(init->qp_type, IBV_QPT_RC);
  EXPECT_GE(init->cap.max_inline_data, 8u);
  auto* qp = new ibv_qp;
  memset(qp, 0, sizeof(*qp));
  qp->context = pd->context;
  qp->pd = pd;
  qp->qp_num = fake->nextQpn++;
  return qp;
}
int ModifyQp(ibv_qp*, ibv_qp_attr* attr, int mask) {
  fake->modifies.emplace_back(*attr, mask);
  return 0;
}
int DestroyQp(ibv_qp* qp) {
  delete qp;
  return 0;
}

VerbsApi FakeApi() {
  VerbsApi a;
  a.getDeviceList = GetDeviceList;
  a.freeDeviceList = FreeDeviceList;
  a.getDeviceName = GetDeviceName;
  a.openDevice = OpenDevice;
  a.closeDevice = CloseDevice;
  a.queryPort = QueryPort;
  a.queryGid = QueryGid;
  a.allocPd = AllocPd;
  a.deallocPd = DeallocPd;
  a.regMr = RegMr;
  a.regDmabufMr = RegDmabufMr;
  a.deregMr = DeregMr;
  a.createCq = CreateCq;
  a.destroyCq = DestroyCq;
  a.createQp = CreateQp;
  a.modifyQp = ModifyQp;
  a.destroyQp = DestroyQp;
  return a;
}

ibv_port_attr Port(bool active, int linkLayer, uint16_t lid) {
  ibv_port_attr p;
  memset(&p, 0, sizeof(p));
  p.state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  p.link_layer = static_cast<uint8_t>(linkLayer);
  p.lid = lid;
  p.active_mtu = IBV_MTU_4096;
  return p;
}

class NoTargets : public NetTargetMap {
  Status WindowAddress(uint32_t, uint64_t, uint64_t, uint64_t*) override { return Unsupported("none"); }
  Status SignalAddress(uint32_t, uint32_t, int32_t, uint64_t*) override { return Unsupported("none"); }
  Status AddSignal(uint32_t, uint32_t, int32_t, uint64_t, uint64_t*, uint64_t*) override { return Unsupported("none"); }
};

class VerbsFake : public ::testing::Test {
 protected:
  void SetUp() override {
    fake = &state_;
    for (const char* v : {"CCO_RDMA_DEVICES", "MORI_RDMA_DEVICES", "CCO_RDMA_TC", "MORI_RDMA_TC", "CCO_RDMA_SL",
                          "MORI_RDMA_SL", "CCO_RDMA_GID_INDEX"})
      unsetenv(v);
    state_.ports["mlx5_0:1"] = Port(false, IBV_LINK_LAYER_INFINIBAND, 3);
    state_.ports["mlx5_0:2"] = Port(true, IBV_LINK_LAYER_ETHERNET, 0);
    state_.ports["mlx5_1:1"] = Port(true, IBV_LINK_LAYER_INFINIBAND, 7);
    api_ = FakeApi();
  }
  void TearDown() override {
    backend_.reset();
    fake = nullptr;
  }

  // Rank 0 of 2 with its queue pairs to rank 1 connected, window 1 registered here (at
  // buffer_) and at rank 1 (0x10000, 4096 bytes, rkey 77), and the resource window 9 at rank 1.
  void MakeConnected(const std::string& devices, DmaBufExporter exporter = nullptr) {
    if (!devices.empty()) setenv("CCO_RDMA_DEVICES", devices.c_str(), 1);
    VerbsOptions options;
    ASSERT_TRUE(VerbsOptionsFromEnv(&options).ok());
    VerbsDevice device;
    ASSERT_TRUE(OpenVerbsDevice(api_, options, &device).ok());
    ASSERT_TRUE(VerbsBackend::Create(&api_, options, device, 0, {false, true}, 60000, exporter, &backend_).ok());
    for (int lane = 0; lane < backend_->lanes(); ++lane) {
      VerbsEndpoint theirs = backend_->Endpoint(1, lane);  // a peer like this rank
      theirs.qpn = 500 + lane;
      ASSERT_TRUE(backend_->Connect(1, lane, theirs).ok());
    }
    VerbsWindowKey key;
    ASSERT_TRUE(backend_->RegisterWindow(1, reinterpret_cast<uint64_t>(buffer_), sizeof(buffer_), &key).ok());
    ASSERT_TRUE(backend_->SetPeerWindow(1, 1, VerbsWindowKey{0x10000, 4096, 77, 0}).ok());
    ASSERT_TRUE(backend_->SetPeerWindow(1, 9, VerbsWindowKey{0x20000, 4096, 88, 0}).ok());
  }

  NetOp Op(NetOpKind kind, uint64_t offset, uint64_t bytes, uint64_t cookie) {
    NetOp op;
    op.kind = kind;
    op.peer = 1;
    op.window = 1;
    op.offset = offset;
    op.bytes = bytes;
    op.localWindow = 1;
    op.local = reinterpret_cast<uint64_t>(buffer_) + 64;
    op.cookie = cookie;
    return op;
  }
  void Signal(NetOp* op, uint64_t add) {
    op->signal = true;
    op->signalAdd = add;
    op->signalWindow = 9;
    op->signalWindowOffset = 40;
  }
  std::vector<NetCompletion> Progress() {
    std::vector<NetCompletion> done;
    backend_->Progress(targets_, &done);
    return done;
  }
  void Complete(uint64_t cookie, ibv_wc_status status, uint32_t qpn) {
    ibv_wc wc;
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = cookie;
    wc.status = status;
    wc.qp_num = qpn;
    state_.completions.push_back(wc);
  }
  uint32_t LaneQpn(int lane) { return backend_->Endpoint(1, lane).qpn; }

  Fake state_;
  VerbsApi api_;
  std::unique_ptr<VerbsBackend> backend_;
  NoTargets targets_;
  alignas(8) unsigned char buffer_[4096] = {};
};

TEST_F(VerbsFake, OptionsFromTheEnvironmentAndTheirAliases) {
  setenv("MORI_RDMA_DEVICES", "mlx5_1:2,mlx5_0", 1);
  setenv("CCO_RDMA_TC", "106", 1);
  setenv("MORI_RDMA_SL", "3", 1);
  VerbsOptions o;
  ASSERT_TRUE(VerbsOptionsFromEnv(&o).ok());
  ASSERT_EQ(o.devices.size(), 2u);
  EXPECT_EQ(o.devices[0], std::make_pair(std::string("mlx5_1"), 2));
  EXPECT_EQ(o.devices[1], std::make_pair(std::string("mlx5_0"), 1));
  EXPECT_EQ(o.trafficClass, 106);
  EXPECT_EQ(o.serviceLevel, 3);
  for (const char* bad : {"256", "-1", "x", ""}) {
    setenv("CCO_RDMA_TC", bad, 1);
    EXPECT_EQ(VerbsOptionsFromEnv(&o).code(), ccoInvalidArgument) << bad;
  }
  unsetenv("CCO_RDMA_TC");
  setenv("CCO_RDMA_SL", "16", 1);
  EXPECT_EQ(VerbsOptionsFromEnv(&o).code(), ccoInvalidArgument);
  unsetenv("CCO_RDMA_SL");
  unsetenv("MORI_RDMA_SL");
  for (const char* bad : {"mlx5_0:0", "mlx5_0:x", "ml x", "a/b"}) {
    setenv("MORI_RDMA_DEVICES", bad, 1);
    EXPECT_EQ(VerbsOptionsFromEnv(&o).code(), ccoInvalidArgument) << bad;
  }
}

TEST_F(VerbsFake, DeviceSelectionFollowsTheListAndSkipsDownPorts) {
  VerbsOptions o;
  VerbsDevice d;
  ASSERT_TRUE(OpenVerbsDevice(api_, o, &d).ok());  // unlisted: mlx5_0 port 1 is down, mlx5_1 port 1 is up
  EXPECT_EQ(d.name, "mlx5_1");
  EXPECT_EQ(d.port, 1);
  o.devices = {{"mlx5_0", 2}, {"mlx5_1", 1}};
  ASSERT_TRUE(OpenVerbsDevice(api_, o, &d).ok());
  EXPECT_EQ(d.name, "mlx5_0");
  EXPECT_EQ(d.port, 2);
  EXPECT_EQ(d.gid.raw[15], 1);  // RoCE: the GID at index 0
  o.devices = {{"mlx5_0", 1}};
  Status s = OpenVerbsDevice(api_, o, &d);
  EXPECT_EQ(s.code(), ccoUnsupported);
  EXPECT_NE(s.message().find("not active"), std::string::npos) << s.message();
  o.devices = {{"mlx9", 1}};
  s = OpenVerbsDevice(api_, o, &d);
  EXPECT_NE(s.message().find("mlx5_0, mlx5_1"), std::string::npos) << s.message();
}

TEST_F(VerbsFake, RoceQueuePairsCarryTrafficClassServiceLevelAndGid) {
  setenv("CCO_RDMA_TC", "106", 1);
  setenv("CCO_RDMA_SL", "5", 1);
  setenv("CCO_RDMA_GID_INDEX", "3", 1);
  MakeConnected("mlx5_0:2");
  // Per lane: INIT at creation, then RTR and RTS at connection.
  ASSERT_EQ(state_.modifies.size(), 3u * backend_->lanes());
  const ibv_qp_attr& init = state_.modifies[0].first;
  EXPECT_EQ(init.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(init.port_num, 2);
  EXPECT_EQ(init.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  const auto& rtr = state_.modifies[backend_->lanes()];
  EXPECT_EQ(rtr.first.qp_state, IBV_QPS_RTR);
  EXPECT_TRUE(rtr.second & IBV_QP_AV);
  EXPECT_EQ(rtr.first.dest_qp_num, 500u);
  EXPECT_EQ(rtr.first.ah_attr.is_global, 1);
  EXPECT_EQ(rtr.first.ah_attr.grh.traffic_class, 106);
  EXPECT_EQ(rtr.first.ah_attr.grh.sgid_index, 3);
  EXPECT_EQ(rtr.first.ah_attr.grh.dgid.raw[15], 4);  // the peer's GID (index 3 + 1 in the fake)
  EXPECT_EQ(rtr.first.ah_attr.sl, 5);
  const auto& rts = state_.modifies[backend_->lanes() + 1];
  EXPECT_EQ(rts.first.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(rts.first.retry_cnt, 7);
}

TEST_F(VerbsFake, InfinibandQueuePairsAddressByLid) {
  setenv("CCO_RDMA_SL", "2", 1);
  MakeConnected("mlx5_1");
  const ibv_qp_attr& rtr = state_.modifies[backend_->lanes()].first;
  EXPECT_EQ(rtr.ah_attr.is_global, 0);
  EXPECT_EQ(rtr.ah_attr.dlid, 7);
  EXPECT_EQ(rtr.ah_attr.sl, 2);
  EXPECT_EQ(rtr.ah_attr.port_num, 1);
}

TEST_F(VerbsFake, PutWithSignalIsAWriteThenAnAtomicInOnePost) {
  MakeConnected("mlx5_1");
  NetOp op = Op(NetOpKind::kPut, 128, 256, 42);
  Signal(&op, 5);
  backend_->Post(op, targets_);
  ASSERT_EQ(state_.posts.size(), 1u);
  const auto& chain = state_.posts[0];
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(chain[0].flags & IBV_SEND_SIGNALED, 0u);  // one completion per op: the last request's
  EXPECT_EQ(chain[0].sge.addr, op.local);
  EXPECT_EQ(chain[0].sge.length, 256u);
  EXPECT_EQ(chain[0].sge.lkey, 1002u);  // the window's (the scratch words took the first key)
  EXPECT_EQ(chain[0].remoteAddr, 0x10000u + 128);
  EXPECT_EQ(chain[0].rkey, 77u);
  EXPECT_EQ(chain[1].opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
  EXPECT_TRUE(chain[1].flags & IBV_SEND_SIGNALED);
  EXPECT_EQ(chain[1].remoteAddr, 0x20000u + 40);
  EXPECT_EQ(chain[1].rkey, 88u);
  EXPECT_EQ(chain[1].compareAdd, 5u);
  EXPECT_EQ(chain[1].wrId, 42u);
  EXPECT_TRUE(Progress().empty());
  Complete(42, IBV_WC_SUCCESS, LaneQpn(0));
  auto done = Progress();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].cookie, 42u);
  EXPECT_TRUE(done[0].status.ok());
}

TEST_F(VerbsFake, PutValueGoesInlineAndContextsPickLanes) {
  MakeConnected("mlx5_1");
  NetOp op = Op(NetOpKind::kPutValue, 8, 3, 7);
  op.value = 0x0000000000c0ffeeull;
  op.context = 1;
  backend_->Post(op, targets_);
  ASSERT_EQ(state_.posts.size(), 1u);
  const CapturedWr& w = state_.posts[0][0];
  EXPECT_EQ(w.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(w.flags, unsigned{IBV_SEND_INLINE | IBV_SEND_SIGNALED});
  EXPECT_EQ(w.inlineBytes, std::string("\xee\xff\xc0", 3));
  EXPECT_EQ(w.remoteAddr, 0x10000u + 8);
  Complete(7, IBV_WC_SUCCESS, LaneQpn(1));  // context 1 posted on lane 1
  ASSERT_EQ(Progress().size(), 1u);
}

TEST_F(VerbsFake, GetIsAReadAndAFencedFlushRead) {
  MakeConnected("mlx5_1");
  backend_->Post(Op(NetOpKind::kGet, 256, 128, 9), targets_);
  ASSERT_EQ(state_.posts.size(), 1u);
  const auto& chain = state_.posts[0];
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].opcode, IBV_WR_RDMA_READ);
  EXPECT_EQ(chain[0].sge.length, 128u);
  EXPECT_EQ(chain[0].remoteAddr, 0x10000u + 256);
  EXPECT_EQ(chain[1].opcode, IBV_WR_RDMA_READ);
  EXPECT_EQ(chain[1].flags, unsigned{IBV_SEND_FENCE | IBV_SEND_SIGNALED});
  EXPECT_EQ(chain[1].sge.length, 8u);
  EXPECT_EQ(chain[1].remoteAddr, chain[0].remoteAddr);
}

TEST_F(VerbsFake, SignalAloneAndMarkers) {
  MakeConnected("mlx5_1");
  NetOp signal = Op(NetOpKind::kSignal, 0, 0, 1);
  Signal(&signal, 1);
  backend_->Post(signal, targets_);
  backend_->Post(Op(NetOpKind::kPut, 0, 0, 2), targets_);  // a marker: an empty write, completing in order
  ASSERT_EQ(state_.posts.size(), 2u);
  ASSERT_EQ(state_.posts[0].size(), 1u);
  EXPECT_EQ(state_.posts[0][0].opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
  EXPECT_EQ(state_.posts[0][0].compareAdd, 1u);
  ASSERT_EQ(state_.posts[1].size(), 1u);
  EXPECT_EQ(state_.posts[1][0].opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(state_.posts[1][0].numSge, 0);
  EXPECT_TRUE(state_.posts[1][0].flags & IBV_SEND_SIGNALED);
}

TEST_F(VerbsFake, RangesAreCheckedBeforeAnythingIsPosted) {
  MakeConnected("mlx5_1");
  backend_->Post(Op(NetOpKind::kPut, 4000, 200, 1), targets_);  // past the peer's 4096 bytes
  NetOp unknown = Op(NetOpKind::kPut, 0, 8, 2);
  unknown.window = 3;  // no key from the peer
  backend_->Post(unknown, targets_);
  NetOp local = Op(NetOpKind::kPut, 0, 8, 3);
  local.local = reinterpret_cast<uint64_t>(buffer_) + 4092;  // runs past the local window
  backend_->Post(local, targets_);
  EXPECT_TRUE(state_.posts.empty());
  auto done = Progress();
  ASSERT_EQ(done.size(), 3u);
  for (const auto& c : done) {
    EXPECT_EQ(c.status.code(), ccoInvalidArgument) << c.status.message();
    EXPECT_FALSE(c.peerLost);
  }
}

TEST_F(VerbsFake, AFailedCompletionLosesThePeer) {
  MakeConnected("mlx5_1");
  backend_->Post(Op(NetOpKind::kPut, 0, 64, 1), targets_);
  backend_->Post(Op(NetOpKind::kPut, 64, 64, 2), targets_);
  Complete(1, IBV_WC_RETRY_EXC_ERR, LaneQpn(0));
  Complete(2, IBV_WC_WR_FLUSH_ERR, LaneQpn(0));
  auto done = Progress();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(done[0].peerLost);
  EXPECT_NE(done[0].status.message().find("rank 1"), std::string::npos);
  EXPECT_NE(done[0].status.message().find("retries exhausted"), std::string::npos);
  backend_->Post(Op(NetOpKind::kPut, 0, 64, 3), targets_);
  EXPECT_EQ(state_.posts.size(), 2u);  // not posted: the peer is gone
  done = Progress();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].peerLost);
  EXPECT_NE(backend_->lastError().find("rank 1"), std::string::npos);
}

TEST_F(VerbsFake, AFullSendQueueHoldsOpsBackInOrder) {
  MakeConnected("mlx5_1");
  const int ops = VerbsBackend::kSendDepth / 2 + 10;  // two requests each
  for (int i = 0; i < ops; ++i) {
    NetOp op = Op(NetOpKind::kPut, 0, 64, 100 + i);
    Signal(&op, 1);
    backend_->Post(op, targets_);
  }
  EXPECT_EQ(state_.posts.size(), size_t{VerbsBackend::kSendDepth / 2});
  for (int i = 0; i < 10; ++i) Complete(100 + i, IBV_WC_SUCCESS, LaneQpn(0));
  EXPECT_EQ(Progress().size(), 10u);
  ASSERT_EQ(state_.posts.size(), size_t(ops));
  EXPECT_EQ(state_.posts.back()[1].wrId, uint64_t(100 + ops - 1));  // in posting order
}

// A post that fails while the lane drains its backlog fails the peer: every op completes
// exactly once (the one being posted included), and the backlog is left empty, not popped
// past its end.
TEST_F(VerbsFake, AFailedPostFromTheBacklogFailsEachOpOnce) {
  MakeConnected("mlx5_1");
  const int ops = VerbsBackend::kSendDepth / 2 + 3;  // two requests each: 3 wait in the backlog
  for (int i = 0; i < ops; ++i) {
    NetOp op = Op(NetOpKind::kPut, 0, 64, 100 + i);
    Signal(&op, 1);
    backend_->Post(op, targets_);
  }
  ASSERT_EQ(state_.posts.size(), size_t{VerbsBackend::kSendDepth / 2});
  state_.postResult = EIO;
  Complete(100, IBV_WC_SUCCESS, LaneQpn(0));  // room for one: the backlog's front is posted, and fails
  std::map<uint64_t, int> seen;
  for (const auto& c : Progress()) ++seen[c.cookie];
  EXPECT_EQ(seen[100], 1);
  for (int i = ops - 3; i < ops; ++i) EXPECT_EQ(seen[100 + i], 1) << "op " << 100 + i;
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_NE(backend_->lastError().find("ibv_post_send"), std::string::npos);
  EXPECT_TRUE(Progress().empty());  // nothing left to fail twice
}

TEST_F(VerbsFake, DeviceMemoryRegistersByDmaBufWhenTheDriverExportsOne) {
  int exported = 0;
  MakeConnected("mlx5_1", [&](uint64_t va, size_t, int* fd, uint64_t* offset) {
    ++exported;
    *fd = eventfd(0, 0);
    *offset = va & 4095;
    return Status::Ok();
  });
  EXPECT_EQ(exported, 1);
  EXPECT_EQ(state_.dmabufRegistrations, 1);
  EXPECT_EQ(state_.lastDmabufIova, reinterpret_cast<uint64_t>(buffer_));
  EXPECT_EQ(state_.lastDmabufOffset, reinterpret_cast<uint64_t>(buffer_) & 4095);
  // Without an exporter (host memory), by address.
  VerbsWindowKey key;
  const int before = state_.addressRegistrations;
  backend_.reset();
  MakeConnected("mlx5_1", [](uint64_t, size_t, int*, uint64_t*) { return Unsupported("host memory"); });
  EXPECT_EQ(state_.addressRegistrations, before + 2);  // the scratch words and the window
  ASSERT_TRUE(backend_->RegisterWindow(2, reinterpret_cast<uint64_t>(buffer_), 64, &key).ok());
  EXPECT_EQ(key.address, reinterpret_cast<uint64_t>(buffer_));
  EXPECT_EQ(key.size, 64u);
}

// The communicator's resources (its resource pool) are registered for the signals' atomics
// only: the NIC refuses a WRITE or READ with their key, and no put or get is built against a
// peer's key that says so, while the signal's atomic still goes there.
TEST_F(VerbsFake, TheResourceWindowTakesSignalsOnly) {
  MakeConnected("mlx5_1");
  VerbsWindowKey key;
  ASSERT_TRUE(backend_->RegisterWindow(5, reinterpret_cast<uint64_t>(buffer_), 256, &key, /*signalsOnly=*/true).ok());
  EXPECT_EQ(state_.lastAccess, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  EXPECT_EQ(key.flags, kVerbsKeySignalsOnly);
  ASSERT_TRUE(backend_->RegisterWindow(6, reinterpret_cast<uint64_t>(buffer_), 256, &key).ok());
  EXPECT_EQ(state_.lastAccess & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
            IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(key.flags, 0u);
  // A peer's key with a flag this side does not know is refused.
  EXPECT_FALSE(backend_->SetPeerWindow(1, 10, VerbsWindowKey{0x30000, 4096, 99, 2}).ok());
  ASSERT_TRUE(backend_->SetPeerWindow(1, 9, VerbsWindowKey{0x20000, 4096, 88, kVerbsKeySignalsOnly}).ok());
  for (NetOpKind kind : {NetOpKind::kPut, NetOpKind::kGet, NetOpKind::kPutValue}) {
    NetOp op = Op(kind, 0, 8, 70 + static_cast<int>(kind));
    op.window = 9;  // the peer's resources as a put's, get's or put_value's window
    backend_->Post(op, targets_);
  }
  EXPECT_TRUE(state_.posts.empty());
  auto done = Progress();
  ASSERT_EQ(done.size(), 3u);
  for (const auto& c : done) {
    EXPECT_FALSE(c.status.ok());
    EXPECT_FALSE(c.peerLost);
    EXPECT_NE(c.status.message().find("not data"), std::string::npos) << c.status.message();
  }
  NetOp signal = Op(NetOpKind::kSignal, 0, 0, 80);
  Signal(&signal, 1);
  backend_->Post(signal, targets_);
  ASSERT_EQ(state_.posts.size(), 1u);
  EXPECT_EQ(state_.posts[0].back().opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
  EXPECT_EQ(state_.posts[0].back().rkey, 88u);
}

}  // namespace
}  // namespace cco
