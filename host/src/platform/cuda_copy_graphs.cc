// SPDX-License-Identifier: MIT
#include "platform/cuda_copy_graphs.h"

#include <stdio.h>

namespace cco {
namespace gpu {
namespace {

constexpr DriverResult kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE
constexpr int kMemoryTypeDevice = 2;       // CU_MEMORYTYPE_DEVICE
constexpr int kMemoryTypeUnified = 4;      // CU_MEMORYTYPE_UNIFIED

// A node whose operands are the device addresses alone (srcDevice, dstDevice), of one
// dimension, as the driver holds it: the only kind whose operands this file knows how to move.
// Host-typed operands would keep their host pointer whatever dstDevice said.
bool Movable(const Memcpy3D& p) {
  const auto byAddress = [](int type) { return type == kMemoryTypeDevice || type == kMemoryTypeUnified; };
  return byAddress(p.srcMemoryType) && byAddress(p.dstMemoryType) && p.srcXInBytes == 0 && p.srcY == 0 && p.srcZ == 0 &&
         p.dstXInBytes == 0 && p.dstY == 0 && p.dstZ == 0 && p.Height == 1 && p.Depth == 1;
}

// The node's copy is this one: nothing to set before launching it again.
bool Holds(const Memcpy3D& p, DeviceAddress dst, DeviceAddress src, uint64_t bytes) {
  return p.dstDevice == dst && p.srcDevice == src && p.WidthInBytes == bytes;
}

// Said once a process: CCO_COPY_GRAPHS asked for graphs, and some runs go without them.
void SayRefused(const char* what, DriverResult result) {
  static bool said = false;
  if (said) return;
  said = true;
  fprintf(stderr, "cco: CCO_COPY_GRAPHS: %s (CUresult %d); such runs go one cuMemcpyAsync a copy\n", what, result);
}

void Describe(const DeviceAddress* addresses, const uint64_t* values, unsigned writes, BatchWrite64* ops) {
  for (unsigned i = 0; i < writes; ++i)
    ops[i] = BatchWrite64{kStreamMemOpWriteValue64, 0, addresses[i], values[i], 0, 0, 0, 0};
}

}  // namespace

DriverResult WriteValuesInBatches(StreamBatchMemOp batchMemOp, void* stream, const DeviceAddress* addresses,
                                  const uint64_t* values, unsigned count) {
  constexpr unsigned kBatch = 64;  // operations a call
  BatchWrite64 ops[kBatch];
  for (unsigned done = 0; done < count;) {
    const unsigned n = count - done < kBatch ? count - done : kBatch;
    Describe(addresses + done, values + done, n, ops);
    const DriverResult r = batchMemOp(stream, n, ops, 0);
    if (r != kDriverSuccess) return r;
    done += n;
  }
  return kDriverSuccess;
}

bool ResolveCopyGraphCalls(const DriverLibrary& library, CopyGraphCalls* c) {
  return library.ResolveOptional("cuCtxGetCurrent", &c->ctxGetCurrent) &&
         library.ResolveOptional("cuMemcpyAsync", &c->copyAsync) &&
         library.ResolveOptional("cuGraphCreate", &c->graphCreate) &&
         library.ResolveOptional("cuGraphAddMemcpyNode", &c->addMemcpyNode) &&
         library.ResolveOptional("cuGraphMemcpyNodeGetParams", &c->memcpyNodeGetParams) &&
         library.ResolveOptional("cuGraphInstantiateWithFlags", &c->instantiate) &&
         library.ResolveOptional("cuGraphExecMemcpyNodeSetParams", &c->execMemcpyNodeSetParams) &&
         library.ResolveOptional("cuGraphAddBatchMemOpNode", &c->addBatchMemOpNode) &&
         library.ResolveOptional("cuGraphExecBatchMemOpNodeSetParams", &c->execBatchMemOpNodeSetParams) &&
         library.ResolveOptional("cuStreamBatchMemOp_v2", &c->streamBatchMemOp) &&
         library.ResolveOptional("cuGraphUpload", &c->upload) && library.ResolveOptional("cuGraphLaunch", &c->launch) &&
         library.ResolveOptional("cuGraphExecDestroy", &c->execDestroy) &&
         library.ResolveOptional("cuGraphDestroy", &c->graphDestroy);
}

DriverResult CopyGraphs::PrepareStream(void* stream, DeviceAddress scratch) {
  std::lock_guard<std::mutex> lock(mu_);
  DriverResult first = kDriverSuccess;
  for (unsigned count = 1; count <= kMaxNodes; ++count)
    for (unsigned writes = 0; writes <= kPreparedWrites; ++writes) {
      Prepared made;
      const DriverResult r = Make(stream, scratch, count, writes, &made);  // refused: kept without an exec
      if (r != kDriverSuccess && first == kDriverSuccess) first = r;
      Prepared& slot = prepared_[std::make_tuple(stream, count, writes)];
      Free(&slot);  // a stream prepared twice keeps only its newest graphs
      slot = std::move(made);
    }
  if (first != kDriverSuccess) SayRefused("a graph of copies could not be made", first);
  return first;
}

DriverResult CopyGraphs::Copy(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                              unsigned count, const DeviceAddress* addresses, const uint64_t* values, unsigned writes) {
  if (count == 0) return WriteValuesInBatches(calls_.streamBatchMemOp, stream, addresses, values, writes);
  for (unsigned done = 0; done < count;) {
    const unsigned n = count - done < kMaxNodes ? count - done : kMaxNodes;
    const bool last = done + n == count;  // the writes go behind the last launch
    // One copy too: a one-node graph launches for 1.8 us, set for 3.1, against 5.0 a cuMemcpyAsync.
    const DriverResult r = Run(stream, dsts + done, srcs + done, sizes + done, n, addresses, values, last ? writes : 0);
    if (r != kDriverSuccess) return r;
    done += n;
  }
  return kDriverSuccess;
}

CopyGraphs::Prepared* CopyGraphs::Find(void* stream, unsigned count, unsigned writes) {
  auto found = prepared_.find(std::make_tuple(stream, count, writes));
  return found == prepared_.end() || found->second.exec == nullptr ? nullptr : &found->second;
}

DriverResult CopyGraphs::Run(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs, const uint64_t* sizes,
                             unsigned count, const DeviceAddress* addresses, const uint64_t* values, unsigned writes) {
  std::lock_guard<std::mutex> lock(mu_);
  Prepared* p = writes <= kPreparedWrites ? Find(stream, count, writes) : nullptr;
  const bool writesApart = p == nullptr && writes > 0;  // then the copies' graph alone, if there is one
  if (writesApart) p = Find(stream, count, 0);
  if (p == nullptr) {  // never made for this stream, or refused when it was (said then)
    SayRefused("a run of copies on a stream without prepared graphs", 0);
    ++refusals_;
    return OneByOne(stream, dsts, srcs, sizes, count, addresses, values, writes);
  }
  DriverResult r = SetOperands(p, dsts, srcs, sizes, count);
  if (r == kDriverSuccess && !writesApart && writes > 0) r = SetWrites(p, addresses, values, writes);
  if (r != kDriverSuccess) {  // this run's operands refused: the nodes it touched are set again
    SayRefused("the driver refused a prepared node's new operands", r);
    ++refusals_;
    return OneByOne(stream, dsts, srcs, sizes, count, addresses, values, writes);
  }
  r = calls_.launch(p->exec, stream);
  if (r != kDriverSuccess) return r;
  ++launches_;
  return writesApart ? WriteValuesInBatches(calls_.streamBatchMemOp, stream, addresses, values, writes)
                     : kDriverSuccess;
}

DriverResult CopyGraphs::SetOperands(Prepared* p, const DeviceAddress* dsts, const DeviceAddress* srcs,
                                     const uint64_t* sizes, unsigned count) {
  // First the copies some node holds already (the nodes have no order: any may carry any copy),
  // then the others onto the nodes left.
  bool taken[kMaxNodes] = {}, placed[kMaxNodes] = {};
  for (unsigned i = 0; i < count; ++i)
    for (unsigned k = 0; k < count; ++k)
      if (!taken[k] && Holds(p->params[k], dsts[i], srcs[i], sizes[i])) {
        taken[k] = placed[i] = true;
        break;
      }
  DriverResult r = kDriverSuccess;
  unsigned k = 0;
  for (unsigned i = 0; r == kDriverSuccess && i < count; ++i) {
    if (placed[i]) continue;
    while (taken[k]) ++k;
    Memcpy3D params = p->params[k];
    params.srcDevice = srcs[i], params.dstDevice = dsts[i], params.WidthInBytes = sizes[i];
    r = calls_.execMemcpyNodeSetParams(p->exec, p->nodes[k], &params, p->context);
    // What the node holds now: the new copy, or (refused) nothing any copy would match.
    if (r == kDriverSuccess) p->params[k] = params;
    else p->params[k].WidthInBytes = 0;
    taken[k] = true;
  }
  return r;
}

DriverResult CopyGraphs::SetWrites(Prepared* p, const DeviceAddress* addresses, const uint64_t* values,
                                   unsigned writes) {
  BatchWrite64 ops[kPreparedWrites];
  Describe(addresses, values, writes, ops);
  const BatchMemOpNodeParams params{p->context, writes, ops, 0};  // the driver copies the ops
  return calls_.execBatchMemOpNodeSetParams(p->exec, p->writes, &params);
}

DriverResult CopyGraphs::Make(void* stream, DeviceAddress scratch, unsigned count, unsigned writes, Prepared* p) {
  DriverResult r = calls_.ctxGetCurrent(&p->context);
  if (r == kDriverSuccess) r = calls_.graphCreate(&p->graph, 0);
  p->nodes.assign(count, nullptr);
  p->params.resize(count);
  for (unsigned k = 0; r == kDriverSuccess && k < count; ++k) {
    Memcpy3D params = {};
    params.srcMemoryType = params.dstMemoryType = kMemoryTypeUnified;  // what cuMemcpyAsync's capture gives
    params.srcDevice = scratch + 16 * k, params.dstDevice = scratch + 16 * k + 8;
    params.WidthInBytes = 8, params.Height = 1, params.Depth = 1;
    r = calls_.addMemcpyNode(&p->nodes[k], p->graph, nullptr, 0, &params, p->context);
    if (r == kDriverSuccess) r = calls_.memcpyNodeGetParams(p->nodes[k], &p->params[k]);
    if (r == kDriverSuccess && !Movable(p->params[k])) r = kInvalidValue;
  }
  if (r == kDriverSuccess && writes > 0) {
    DeviceAddress addresses[kPreparedWrites];
    uint64_t values[kPreparedWrites] = {};
    for (unsigned j = 0; j < writes; ++j) addresses[j] = scratch + 16 * kMaxNodes + 8 * j;
    BatchWrite64 ops[kPreparedWrites];
    Describe(addresses, values, writes, ops);
    const BatchMemOpNodeParams params{p->context, writes, ops, 0};
    r = calls_.addBatchMemOpNode(&p->writes, p->graph, p->nodes.data(), count, &params);
  }
  if (r == kDriverSuccess) r = calls_.instantiate(&p->exec, p->graph, 0);
  // Its device copy made now: a first launch would otherwise allocate while kernels wait.
  if (r == kDriverSuccess) r = calls_.upload(p->exec, stream);
  if (r != kDriverSuccess) Free(p);
  return r;
}

DriverResult CopyGraphs::OneByOne(void* stream, const DeviceAddress* dsts, const DeviceAddress* srcs,
                                  const uint64_t* sizes, unsigned count, const DeviceAddress* addresses,
                                  const uint64_t* values, unsigned writes) {
  for (unsigned i = 0; i < count; ++i) {
    const DriverResult r = calls_.copyAsync(dsts[i], srcs[i], sizes[i], stream);
    if (r != kDriverSuccess) return r;
  }
  return WriteValuesInBatches(calls_.streamBatchMemOp, stream, addresses, values, writes);
}

void CopyGraphs::Forget(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = prepared_.lower_bound(std::make_tuple(stream, 0u, 0u));
       it != prepared_.end() && std::get<0>(it->first) == stream;) {
    Free(&it->second);  // a launch still running is freed by the driver when it completes
    it = prepared_.erase(it);
  }
}

void CopyGraphs::Free(Prepared* p) {
  if (p->exec != nullptr) (void)calls_.execDestroy(p->exec);
  if (p->graph != nullptr) (void)calls_.graphDestroy(p->graph);
  *p = Prepared();
}

}  // namespace gpu
}  // namespace cco
