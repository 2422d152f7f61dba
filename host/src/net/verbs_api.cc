// SPDX-License-Identifier: MIT
#include "net/verbs_api.h"

#include <mutex>

#include "common/shared_library.h"

namespace cco {
namespace {

Status Load(VerbsApi* api) {
  static const char* const kFiles[] = {"libibverbs.so.1", "libibverbs.so", nullptr};
  static SharedLibrary library;
  CCO_RETURN_IF_ERROR(SharedLibrary::Open(kFiles, "rdma-core's verbs library", &library));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_get_device_list", &api->getDeviceList));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_free_device_list", &api->freeDeviceList));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_get_device_name", &api->getDeviceName));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_open_device", &api->openDevice));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_close_device", &api->closeDevice));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_query_port", &api->queryPort));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_query_gid", &api->queryGid));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_alloc_pd", &api->allocPd));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_dealloc_pd", &api->deallocPd));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_reg_mr", &api->regMr));
  library.ResolveOptional("ibv_reg_dmabuf_mr", &api->regDmabufMr);
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_dereg_mr", &api->deregMr));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_create_cq", &api->createCq));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_destroy_cq", &api->destroyCq));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_create_qp", &api->createQp));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_modify_qp", &api->modifyQp));
  CCO_RETURN_IF_ERROR(library.Resolve("ibv_destroy_qp", &api->destroyQp));
  return Status::Ok();
}

}  // namespace

Status LoadVerbs(const VerbsApi** api) {
  static VerbsApi table;
  static Status loaded;
  static std::once_flag once;
  std::call_once(once, [] { loaded = Load(&table); });
  if (!loaded.ok()) return loaded;
  *api = &table;
  return Status::Ok();
}

}  // namespace cco
