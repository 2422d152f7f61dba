// SPDX-License-Identifier: MIT
// The verbs backend's choice of RDMA device, port and path settings:
//   CCO_RDMA_DEVICES  (MORI_RDMA_DEVICES)  "mlx5_0:1,mlx5_1": devices in order of preference,
//                                          each with its port (default 1); unset: every device
//   CCO_RDMA_TC       (MORI_RDMA_TC)       traffic class, 0-255 (RoCE: the GRH's class)
//   CCO_RDMA_SL       (MORI_RDMA_SL)       service level, 0-15
//   CCO_RDMA_GID_INDEX                     the local GID's index (RoCE), default 0
// A malformed value is an error, never quietly ignored.
#ifndef CCO_HOST_NET_VERBS_DEVICE_H_
#define CCO_HOST_NET_VERBS_DEVICE_H_

#include <string>
#include <utility>
#include <vector>

#include "net/verbs_api.h"

namespace cco {

struct VerbsOptions {
  std::vector<std::pair<std::string, int>> devices;  // (name, port); empty: any device, port 1
  int trafficClass = 0;
  int serviceLevel = 0;
  int gidIndex = 0;
  int lanes = 2;  // queue pairs per peer; a GDA context uses lane context % lanes
};

Status VerbsOptionsFromEnv(VerbsOptions* options);

// An opened device and the port it uses.
struct VerbsDevice {
  ibv_context* context = nullptr;
  std::string name;
  uint8_t port = 1;
  ibv_port_attr portAttr{};
  ibv_gid gid{};
};

// The first device of `options.devices` (else of the system) whose port is active, opened.
// ccoUnsupported saying what was found when none is.
Status OpenVerbsDevice(const VerbsApi& api, const VerbsOptions& options, VerbsDevice* device);

}  // namespace cco

#endif  // CCO_HOST_NET_VERBS_DEVICE_H_
