// SPDX-License-Identifier: MIT
// rdma-core's verbs, as the verbs backend calls them: a table of the library's exported
// functions, loaded with dlopen from libibverbs.so.1 (libcco.so has no link-time dependency
// on it; Debian's libibverbs-dev provides the header at build time). ibv_post_send and
// ibv_poll_cq are not in the table: verbs.h makes them calls through the context's ops, so a
// test drives the backend with a fake context whose ops capture the work requests.
#ifndef CCO_HOST_NET_VERBS_API_H_
#define CCO_HOST_NET_VERBS_API_H_

#include <infiniband/verbs.h>

#include "common/status.h"

namespace cco {

struct VerbsApi {
  ibv_device** (*getDeviceList)(int* count) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* device) = nullptr;
  ibv_context* (*openDevice)(ibv_device* device) = nullptr;
  int (*closeDevice)(ibv_context* context) = nullptr;
  // The exported ibv_query_port, which fills the older prefix of ibv_port_attr (the caller
  // zeroes the rest), as verbs.h's own fallback does.
  int (*queryPort)(ibv_context* context, uint8_t port, ibv_port_attr* attr) = nullptr;
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* context) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* address, size_t length, int access) = nullptr;
  // Absent from older libraries: then GPU memory is registered by address (peer memory).
  ibv_mr* (*regDmabufMr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* context, int entries, void* user, ibv_comp_channel* channel, int vector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
};

// The process's verbs, loaded once; ccoUnsupported (naming the library) where rdma-core is
// not installed.
Status LoadVerbs(const VerbsApi** api);

}  // namespace cco

#endif  // CCO_HOST_NET_VERBS_API_H_
