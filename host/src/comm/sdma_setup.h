// SPDX-License-Identifier: MIT
// A device communicator's SDMA on the host (proxy/sdma_resources.h): whether this process
// enables it (CCO_ENABLE_SDMA, or MORI_ENABLE_SDMA), how many queues, and the rings and streams
// made for them, collectively.
#ifndef CCO_HOST_COMM_SDMA_SETUP_H_
#define CCO_HOST_COMM_SDMA_SETUP_H_

#include <memory>

#include "comm/communicator.h"
#include "proxy/sdma_resources.h"

namespace cco {

// Whether SDMA is enabled in this process (CCO_ENABLE_SDMA, or MORI_ENABLE_SDMA).
bool SdmaEnabled();
// The most queues a device communicator may ask for: every queue is a stream of the proxy's
// (shared by the device communicators), and a process's streams must stay few.
constexpr int kMaxSdmaQueues = 16;
// Queues a device communicator gets: reqs.sdmaQueueCount, or the default for 0.
int SdmaQueues(const ccoDevCommRequirements& reqs);

// Collective over the communicator: allocates and initialises the SDMA resources.
Status CreateSdmaResources(ccoComm& c, const ccoDevCommRequirements& reqs, std::shared_ptr<SdmaResources>* out);
Status DestroySdmaResources(ccoComm& c, SdmaResources& s);

}  // namespace cco

#endif  // CCO_HOST_COMM_SDMA_SETUP_H_
