// SPDX-License-Identifier: MIT
#include "proxy/ring_set.h"

#include "platform/platform.h"

namespace cco {

Status AllocateRings(Platform* platform, int device, uint32_t count, uint32_t depth, bool mirrorConsumed,
                     RingSet* rings) {
  RingSet& r = *rings;
  r.count = count;
  r.depth = depth;
  r.mirrorConsumed = mirrorConsumed;
  r.hostBytes = cco_gda_host_bytes(count, depth);
  CCO_RETURN_IF_ERROR(platform->HostMappedAlloc(device, r.hostBytes, &r.host, &r.hostDevice).Prefixed("proxy rings"));
  auto* slots = static_cast<ccoGdaDesc*>(r.host);
  const uint64_t words = reinterpret_cast<uint64_t>(r.host) + cco_gda_host_words_offset(count, depth);
  r.consumers.clear();
  for (uint32_t i = 0; i < count; ++i) {
    const RingMemory ring{slots + static_cast<size_t>(i) * depth,
                          reinterpret_cast<uint64_t*>(cco_gda_ring_marks_address(words, depth, i)),
                          reinterpret_cast<ccoGdaRingHost*>(cco_gda_ring_host_address(words, i)), depth};
    RingConsumer::Initialize(ring, 0);
    r.consumers.emplace_back(ring, 0);
  }
  void* staging = nullptr;
  CCO_RETURN_IF_ERROR(platform->HostMappedAlloc(device, sizeof(uint64_t) * count * depth, &staging, &r.stagingDevice)
                          .Prefixed("proxy staging words"));
  r.staging = static_cast<uint64_t*>(staging);
  CCO_RETURN_IF_ERROR(
      platform->DeviceAlloc(device, count * sizeof(ccoGdaRingDevice), &r.device).Prefixed("proxy ring state"));
  return platform->Memset(device, r.device, 0, count * sizeof(ccoGdaRingDevice));
}

Status FreeRings(Platform* platform, int device, RingSet* rings) {
  RingSet& r = *rings;
  Failures failures;
  if (r.device != 0) failures.Note(platform->DeviceFree(device, r.device));
  r.device = 0;
  if (r.staging != nullptr) failures.Note(platform->HostMappedFree(device, r.staging));
  r.staging = nullptr;
  if (r.host != nullptr) failures.Note(platform->HostMappedFree(device, r.host));
  r.host = nullptr;
  r.consumers.clear();
  return failures.Summary("freeing proxy rings");
}

}  // namespace cco
