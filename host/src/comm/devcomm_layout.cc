// SPDX-License-Identifier: MIT
#include "comm/devcomm_layout.h"

#include <string.h>

#include <algorithm>

#include "abi/gda.h"

namespace cco {
namespace {

// Each region starts on its own 256-byte boundary (no false sharing between regions).
constexpr size_t kAlign = 256;
size_t Up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Generous bounds that still keep a resource window small and offsets within uint32.
constexpr int kMaxCount = 1 << 20;

}  // namespace

Status ReadRequirements(const ccoDevCommRequirements* user, ccoDevCommRequirements* out) {
  if (user == nullptr) return InvalidArgument("reqs is NULL");
  if (user->magic != CCO_DEV_COMM_REQUIREMENTS_MAGIC)
    return InvalidArgument("reqs has a wrong magic: initialise it with CCO_DEV_COMM_REQUIREMENTS_INITIALIZER");
  if (user->size < kRequirementsMinSize)
    return InvalidArgument(Fmt("reqs->size=", user->size,
                               " is smaller than any ccoDevCommRequirements this library takes (", kRequirementsMinSize,
                               ")"));
  if (user->version != CCO_ABI_VERSION)
    return InvalidArgument(
        Fmt("reqs->version=", user->version, " but this library speaks ABI version ", CCO_ABI_VERSION));
  const ccoDevCommRequirements defaults = CCO_DEV_COMM_REQUIREMENTS_INITIALIZER;
  *out = defaults;
  memcpy(out, user, std::min<size_t>(user->size, sizeof(*out)));
  out->size = sizeof(*out);
  const ccoDevCommRequirements* reqs = out;
  // Counts from 0; the direct path's bounds from -1 (its variable).
  const struct {
    const char* name;
    int value, least, most;
  } fields[] = {{"gdaContextCount", reqs->gdaContextCount, 0, kMaxCount},
                {"gdaSignalCount", reqs->gdaSignalCount, 0, kMaxCount},
                {"gdaCounterCount", reqs->gdaCounterCount, 0, kMaxCount},
                {"lsaBarrierCount", reqs->lsaBarrierCount, 0, kMaxCount},
                {"sdmaQueueCount", reqs->sdmaQueueCount, 0, kMaxCount},
                {"gdaBarrierCount", reqs->gdaBarrierCount, 0, kMaxCount},
                {"gdaDirectMaxBytes", reqs->gdaDirectMaxBytes, -1, kGdaDirectMaxBytesLimit},
                {"gdaDirectGroupMaxBytes", reqs->gdaDirectGroupMaxBytes, -1, kGdaDirectMaxBytesLimit}};
  for (const auto& f : fields)
    if (f.value < f.least || f.value > f.most)
      return InvalidArgument(Fmt("reqs->", f.name, "=", f.value, " is not in [", f.least, ", ", f.most, "]"));
  if (reqs->gdaConnectionType < CCO_GDA_CONNECTION_NONE || reqs->gdaConnectionType > CCO_GDA_CONNECTION_RAIL)
    return InvalidArgument(Fmt("reqs->gdaConnectionType=", reqs->gdaConnectionType, " is not a ccoGdaConnectionType"));
  return Status::Ok();
}

ResourceLayout LayoutResources(const ccoDevCommRequirements& reqs, int worldSize, int lsaSize, int gdaPeerCount,
                               int sdmaQueues) {
  ResourceLayout l;
  size_t at = 0;
  l.barrierEpochs = at;
  at = Up(at + 2 * sizeof(uint32_t) * reqs.lsaBarrierCount);
  l.barrierInboxes = at;
  at = Up(at + sizeof(uint32_t) * static_cast<size_t>(reqs.lsaBarrierCount) * lsaSize);
  l.shadows = at;
  at = Up(at + sizeof(uint64_t) * (static_cast<size_t>(reqs.gdaSignalCount) + reqs.gdaCounterCount));
  l.flushTargets = at;
  l.gdaEpochs = at + sizeof(uint64_t) * static_cast<size_t>(reqs.gdaContextCount) * gdaPeerCount;
  at = Up(l.gdaEpochs + sizeof(uint64_t) * reqs.gdaBarrierCount);
  const size_t signalIds = gdaPeerCount > 0 ? static_cast<size_t>(reqs.gdaSignalCount) + reqs.gdaBarrierCount : 0;
  l.gdaSignals = at;
  l.gdaCounters = at + sizeof(uint64_t) * cco_gda_signal_words(static_cast<uint32_t>(signalIds), worldSize, lsaSize);
  at = Up(l.gdaCounters + (gdaPeerCount > 0 ? sizeof(uint64_t) * reqs.gdaCounterCount : 0));
  const size_t pool = sizeof(uint64_t) * static_cast<size_t>(lsaSize) * sdmaQueues;
  l.sdmaSignals = at;
  l.sdmaLocal = Up(l.sdmaSignals + pool);
  l.sdmaShadows = Up(l.sdmaLocal + pool);
  at = Up(l.sdmaShadows + 2 * pool);
  l.bytes = at;
  return l;
}

}  // namespace cco
