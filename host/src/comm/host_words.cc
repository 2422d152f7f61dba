// SPDX-License-Identifier: MIT
#include "comm/host_words.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "comm/communicator.h"
#include "common/env.h"
#include "common/process_registry.h"
#include "platform/memfd.h"

namespace cco {
namespace {

// Room for hundreds of device communicators' signal words at default requirements.
constexpr size_t kHostWordBytes = size_t{256} << 10;
// Carves start on their own cache line: no two device communicators' words share one.
constexpr size_t kCarveAlignment = 64;
// The mesh's tag for this exchange (windows count from 1; the liveness words' exchange is ~0).
constexpr uint64_t kHostWordsTag = ~uint64_t{0} - 1;

// The segments this process's ranks published for their in-process peers, by (communicator,
// world rank).
using RegistryKey = std::pair<std::string, int>;
ProcessRegistry<RegistryKey, std::shared_ptr<HostWordSegment>>& Registry() {
  static auto* registry = new ProcessRegistry<RegistryKey, std::shared_ptr<HostWordSegment>>();  // never destroyed
  return *registry;
}
RegistryKey KeyOf(const ccoComm& c, int hostIndex) { return {c.idTag, c.topo.hostMembers[hostIndex]}; }

// Checks and maps `fd` (which it closes) and makes it reachable by the device.
Status MapAndRegister(ccoComm& c, int fd, std::shared_ptr<HostWordSegment>* out) {
  auto segment = std::make_shared<HostWordSegment>(c.platform, c.device);
  Status s = CheckSealedMemfd(fd, kHostWordBytes);
  if (s.ok()) s = MapMemfd(fd, kHostWordBytes, &segment->host);
  close(fd);
  CCO_RETURN_IF_ERROR(s);
  CCO_RETURN_IF_ERROR(c.platform->HostRegister(c.device, segment->host, kHostWordBytes, &segment->device));
  segment->registered = true;
  *out = std::move(segment);
  return Status::Ok();
}

Status MakeOwn(ccoComm& c) {
  HostWords& w = c.hostWords;
  CCO_RETURN_IF_ERROR(CreateSealedMemfd("cco-host-words", kHostWordBytes, &w.fd));
  const int mine = fcntl(w.fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return ErrnoError("dup of the host words' memfd", errno);
  return MapAndRegister(c, mine, &w.byHost[c.topo.hostRank]);
}

bool AnyInThisProcess(const ccoComm& c) {
  for (int h = 0; h < c.HostSize(); ++h)
    if (h != c.topo.hostRank && c.InThisProcess(h)) return true;
  return false;
}

}  // namespace

HostWordSegment::~HostWordSegment() {
  if (registered) {
    const Status s = platform->HostUnregister(deviceOrdinal, host);
    if (!s.ok()) fprintf(stderr, "cco: letting go of host words: %s\n", s.message().c_str());
  }
  if (host != nullptr) munmap(host, kHostWordBytes);
}

size_t HostWordBytes() { return kHostWordBytes; }

void PrepareHostWords(ccoComm& c) {
  HostWords& w = c.hostWords;
  w.usable = false;
  w.prepared = Status::Ok();
  w.byHost.assign(c.HostSize(), nullptr);
  w.carves = SlotAllocator(kHostWordBytes, kCarveAlignment);
  if (c.HostSize() <= 1) {  // no host peer to write them
    w.prepared = Unsupported("no host peer");
    return;
  }
  // Not asked for: no memory, no registration, but the exchange still runs (without a
  // descriptor), so that the mesh stays in step with peers whose environment asks for them.
  Status local = env::Flag("CCO_GDA_HOST_SIGNALS", false) ? MakeOwn(c) : Unsupported("CCO_GDA_HOST_SIGNALS is not 1");
  if (local.ok() && AnyInThisProcess(c)) {
    Registry().Publish(KeyOf(c, c.topo.hostRank), w.byHost[c.topo.hostRank]);
    w.published = true;
  }
  // Every host rank in another process takes part, with its descriptor or without (then its
  // peers' exchange fails, and they propose no carve); one without keeps none of theirs.
  const Status exchanged = c.mesh->AllExchange(local.ok() ? w.fd : -1, kHostWordsTag, [&](int member, int fd) {
    if (!local.ok()) {
      close(fd);
      return Status::Ok();
    }
    return MapAndRegister(c, fd, &w.byHost[member]).Prefixed(Fmt("rank ", c.topo.hostMembers[member], "'s host words"));
  });
  if (w.fd >= 0) close(w.fd);  // every mapping holds the memory
  w.fd = -1;
  w.prepared = local.ok() ? exchanged : local;
}

void FinishHostWords(ccoComm& c) {
  HostWords& w = c.hostWords;
  Status s = w.prepared;
  for (int h = 0; h < c.HostSize() && s.ok(); ++h) {
    if (h == c.topo.hostRank || !c.InThisProcess(h)) continue;
    if (!Registry().Find(KeyOf(c, h), &w.byHost[h]))
      s = RemoteError(Fmt("rank ", c.topo.hostMembers[h], " shares this process but published no host words"));
  }
  w.prepared = s;
  if (!s.ok()) {
    (void)DestroyHostWords(c);  // unusable here: nothing of it is kept
    return;
  }
  w.usable = true;
}

Status DestroyHostWords(ccoComm& c) {
  HostWords& w = c.hostWords;
  if (w.published) Registry().Withdraw(KeyOf(c, c.topo.hostRank));
  w.published = false;
  w.byHost.clear();  // each segment goes with its last holder
  if (w.fd >= 0) close(w.fd);
  w.fd = -1;
  w.usable = false;
  return Status::Ok();
}

bool CarveHostWords(ccoComm& c, size_t size, size_t* offset) {
  if (!c.hostWords.usable || size == 0) return false;
  size_t slot = 0;
  return c.hostWords.carves.Allocate(size, offset, &slot).ok();
}

Status ReleaseHostWords(ccoComm& c, size_t offset) {
  size_t start = 0, size = 0;
  if (!c.hostWords.carves.Find(offset, &start, &size) || start != offset)
    return InternalError(Fmt("no carve of the host words starts at offset ", offset));
  memset(c.hostWords.HostAt(c.topo.hostRank, offset), 0, size);
  return c.hostWords.carves.Free(start);
}

}  // namespace cco
