// SPDX-License-Identifier: MIT
#include "comm/resource_pool.h"

namespace cco {
namespace {

// Room for hundreds of device communicators with default requirements (about 4 KiB each);
// one granule on GPUs (2 MiB).
constexpr size_t kPoolBytes = size_t{1} << 20;
// Carves start 256-byte aligned: every resource inside is at most 8-byte aligned, and a
// carve never shares a cache line with another device communicator's words.
constexpr size_t kCarveAlignment = 256;

}  // namespace

size_t ResourcePoolBytes(size_t granularity) { return (kPoolBytes + granularity - 1) / granularity * granularity; }

Status AllocateResourcePool(ccoComm& c) {
  const size_t bytes = ResourcePoolBytes(c.granularity);
  void* base = nullptr;
  CCO_RETURN_IF_ERROR(AllocMem(c, bytes, &base).Prefixed("the resource pool"));
  c.pool.offset = reinterpret_cast<uint64_t>(base) - c.MySlice();
  c.pool.carves = SlotAllocator(bytes, kCarveAlignment);
  // The first carve is the rank's status word (zero: running), alike on every rank.
  size_t at = 0, slot = 0;
  CCO_RETURN_IF_ERROR(c.pool.carves.Allocate(kCarveAlignment, &at, &slot).Prefixed("the resource pool's status word"));
  c.pool.statusOffset = c.pool.offset + at;
  if (c.platform->CreatesZeroedMemory(c.device)) return Status::Ok();  // AllocMem's memory is fresh
  return c.platform->Memset(c.device, reinterpret_cast<uint64_t>(base), 0, bytes).Prefixed("zeroing the resource pool");
}

Status RegisterResourcePool(ccoComm& c) {
  ccoWindow_t window = 0;
  CCO_RETURN_IF_ERROR(RegisterWindow(c, reinterpret_cast<void*>(c.MySlice() + c.pool.offset), c.pool.carves.capacity(),
                                     /*ownsAllocation=*/true, &window, /*internal=*/true)
                          .Prefixed("the resource pool"));
  c.pool.window = window;
  return Status::Ok();
}

bool CarveResources(ccoComm& c, size_t size, size_t* offset) {
  if (c.pool.window == 0 || size == 0) return false;
  size_t at = 0, slot = 0;
  if (!c.pool.carves.Allocate(size, &at, &slot).ok()) return false;
  *offset = c.pool.offset + at;
  return true;
}

namespace {

// The carve that starts at `offset` (inside the slice): its start and size in the pool.
Status FindCarve(const ccoComm& c, size_t offset, size_t* start, size_t* size) {
  if (offset < c.pool.offset || !c.pool.carves.Find(offset - c.pool.offset, start, size) ||
      *start != offset - c.pool.offset)
    return InternalError(Fmt("no carve of the resource pool starts at offset ", offset));
  return Status::Ok();
}

}  // namespace

Status ZeroResources(ccoComm& c, size_t offset) {
  size_t start = 0, size = 0;
  CCO_RETURN_IF_ERROR(FindCarve(c, offset, &start, &size));
  return c.platform->Memset(c.device, c.MySlice() + offset, 0, size)
      .Prefixed("zeroing a device communicator's resources");
}

Status ReleaseResources(ccoComm& c, size_t offset) {
  size_t start = 0, size = 0;
  CCO_RETURN_IF_ERROR(FindCarve(c, offset, &start, &size));
  return c.pool.carves.Free(start);
}

}  // namespace cco
