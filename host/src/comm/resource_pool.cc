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
  return c.platform->Memset(c.device, reinterpret_cast<uint64_t>(base), 0, bytes).Prefixed("zeroing the resource pool");
}

Status RegisterResourcePool(ccoComm& c) {
  ccoWindow_t window = 0;
  CCO_RETURN_IF_ERROR(RegisterWindow(c, reinterpret_cast<void*>(c.MySlice() + c.pool.offset), c.pool.carves.capacity(),
                                     /*ownsAllocation=*/true, &window)
                          .Prefixed("the resource pool"));
  WindowRecord& record = c.windows.at(window);
  record.internal = true;
  c.pool.window = window;
  c.pool.id = record.id;
  return Status::Ok();
}

bool CarveResources(ccoComm& c, size_t size, size_t* offset) {
  if (c.pool.window == 0 || size == 0) return false;
  size_t at = 0, slot = 0;
  if (!c.pool.carves.Allocate(size, &at, &slot).ok()) return false;
  *offset = c.pool.offset + at;
  return true;
}

Status ReleaseResources(ccoComm& c, size_t offset) {
  size_t start = 0, size = 0;
  if (offset < c.pool.offset || !c.pool.carves.Find(offset - c.pool.offset, &start, &size) ||
      start != offset - c.pool.offset)
    return InternalError("releasing resources that are no carve of the pool");
  Status zeroed = c.platform->Memset(c.device, c.MySlice() + offset, 0, size);
  // A carve that could not be zeroed stays taken: handing it out again would break the
  // pool's promise that free memory reads zero.
  if (!zeroed.ok()) return zeroed.Prefixed("zeroing a device communicator's resources");
  return c.pool.carves.Free(start);
}

}  // namespace cco
