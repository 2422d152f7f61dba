// SPDX-License-Identifier: MIT
#include "comm/sdma_setup.h"

#include "comm/agree.h"
#include "common/env.h"

namespace cco {

bool SdmaEnabled() { return env::Flag("CCO_ENABLE_SDMA"); }

int SdmaQueues(const ccoDevCommRequirements& reqs) {
  return reqs.sdmaQueueCount > 0 ? reqs.sdmaQueueCount : static_cast<int>(CCO_SDMA_QUEUES_DEFAULT);
}

Status CreateSdmaResources(ccoComm& c, const ccoDevCommRequirements& reqs, std::shared_ptr<SdmaResources>* out) {
  auto s = std::make_shared<SdmaResources>();
  s->queues = SdmaQueues(reqs);
  s->lsaSize = c.topo.lsaSize;
  s->lsaRank = c.topo.lsaRank;
  const uint32_t slots = static_cast<uint32_t>(s->lsaSize * s->queues);
  s->sent.assign(slots, 0);
  s->landed.assign(slots, 0);
  // Mirrored: SDMA's `consumed` always goes behind copies on a stream, and its waiters are
  // whole programs that would otherwise poll host memory while those copies run.
  Status local =
      AllocateRings(c.platform, c.device, slots, CCO_SDMA_RING_DEPTH_DEFAULT, /*mirrorConsumed=*/true, &s->rings)
          .Prefixed("SDMA");
  if (local.ok()) local = c.proxy->QueueStreams(s->queues, &s->streams);
  Status agreed = Agree(c, "ccoDevCommCreate (SDMA resources)", local);
  if (!agreed.ok()) {
    (void)DestroySdmaResources(c, *s);  // the failure that came first is the one to report
    return agreed;
  }
  *out = std::move(s);
  return Status::Ok();
}

Status DestroySdmaResources(ccoComm& c, SdmaResources& s) {
  Failures failures;
  // The streams are the proxy's, shared by every device communicator's queues: Proxy::Detach
  // (or the proxy's end) drained them of this one's work, and the proxy destroys them.
  s.streams.clear();
  failures.Note(FreeRings(c.platform, c.device, &s.rings));
  return failures.Summary("freeing SDMA queues");
}

}  // namespace cco
