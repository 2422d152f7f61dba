// SPDX-License-Identifier: MIT
// A device communicator's GDA on the host (proxy/gda_resources.h): which peers it connects,
// and the rings, peers and network backend made for them, collectively.
#ifndef CCO_HOST_COMM_GDA_SETUP_H_
#define CCO_HOST_COMM_GDA_SETUP_H_

#include <memory>

#include "comm/communicator.h"
#include "proxy/gda_resources.h"

namespace cco {

// The peers a device communicator with `reqs` connects through GDA (0 where it wants none).
int GdaPeerCount(const ccoComm& c, const ccoDevCommRequirements& reqs);

// Collective over the communicator: allocates and initialises the GDA resources, and makes
// the communicator's network backend first where a peer is reached through it.
Status CreateGdaResources(ccoComm& c, const ccoDevCommRequirements& reqs, std::shared_ptr<GdaResources>* out);
// Local: frees them (the proxy has let go of them).
Status DestroyGdaResources(ccoComm& c, GdaResources& g);

}  // namespace cco

#endif  // CCO_HOST_COMM_GDA_SETUP_H_
