// SPDX-License-Identifier: MIT
// The communicator's host words: host memory each rank shares with its host peers in other
// processes (a sealed memfd each maps), reachable by the device too (Platform::HostRegister).
// Device communicators carve from it the signal words that host peers' proxies write
// (abi/gda.h, cco_gda_host_signal_word): a proxy then writes a word with a CPU store, which the
// waiting kernel sees about a microsecond later, instead of a stream write that the GPU's
// front end takes several microseconds to carry out (tools/perf/stream_write_probe.cu).
//
// Made while the communicator is created, after the host mesh, where CCO_GDA_HOST_SIGNALS=1
// (every rank takes part in the exchange either way): host peers in other processes
// send their descriptors over the mesh, and each maps the others'; ranks that share a process
// share one mapping of each rank's words (a process holds one mapping per rank, not one per
// pair: 128 ranks as threads would otherwise hold 16384), published in a registry of the
// process before an agreement round and kept alive by whoever still holds it. A rank that cannot have
// them (a platform without host registration, a failed step, a peer whose descriptor it could
// not map) proposes no carve in ccoDevCommCreate's round, and then no rank uses them: device
// communicators keep every proxy word in device memory, as before. Carves
// follow the resource pool's rules (comm/resource_pool.h): deterministic, agreed in that round,
// zeroed before they are given back.
#ifndef CCO_HOST_COMM_HOST_WORDS_H_
#define CCO_HOST_COMM_HOST_WORDS_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>
#include <vector>

#include "common/status.h"
#include "memory/slot_allocator.h"

struct ccoComm;

namespace cco {

class Platform;

// One rank's words as this process maps them: `host` for the CPU, `device` for kernels and
// streams. Unregistered and unmapped when its last holder lets go.
struct HostWordSegment {
  HostWordSegment(Platform* platform, int device) : platform(platform), deviceOrdinal(device) {}
  ~HostWordSegment();
  HostWordSegment(const HostWordSegment&) = delete;
  HostWordSegment& operator=(const HostWordSegment&) = delete;
  Platform* platform;
  int deviceOrdinal;
  void* host = nullptr;
  uint64_t device = 0;
  bool registered = false;
};

struct HostWords {
  bool usable = false;     // this rank has its own words and every host peer's mapped here
  Status prepared;         // how PrepareHostWords went (FinishHostWords goes on from it)
  bool published = false;  // this rank's segment is in the process's registry
  int fd = -1;             // this rank's memfd (while it is being exchanged)
  std::vector<std::shared_ptr<HostWordSegment>> byHost;  // by host index, this rank's own included
  SlotAllocator carves;                                  // offsets from the start of every rank's words

  // The CPU and device addresses of `offset` in host rank h's words.
  uint64_t* HostAt(int h, uint64_t offset) const {
    return reinterpret_cast<uint64_t*>(static_cast<char*>(byHost[h]->host) + offset);
  }
  uint64_t DeviceAt(int h, uint64_t offset) const { return byHost[h]->device + offset; }
};

// Bytes of each rank's host words.
size_t HostWordBytes();

// Collective over the host, never failing the communicator (HostWords::usable says how it went):
// Prepare makes this rank's words, publishes them for in-process peers and exchanges them with
// the others; Finish, after an agreement round that every rank's Prepare preceded, maps the
// in-process peers' words.
void PrepareHostWords(ccoComm& c);
void FinishHostWords(ccoComm& c);
// Local: unmaps and frees them (no proxy writes them any more).
Status DestroyHostWords(ccoComm& c);

// Local and deterministic: `size` bytes of every rank's host words at *offset. False: none
// usable, or no room.
bool CarveHostWords(ccoComm& c, size_t size, size_t* offset);
// Zeroes this rank's copy of the carve at `offset` and returns it (every rank, after every
// rank destroyed the device communicator that used it).
Status ReleaseHostWords(ccoComm& c, size_t offset);

}  // namespace cco

#endif  // CCO_HOST_COMM_HOST_WORDS_H_
