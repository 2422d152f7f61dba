// SPDX-License-Identifier: MIT
#include "net/verbs_device.h"

#include <stdlib.h>
#include <string.h>

#include "common/env.h"

namespace cco {
namespace {

// A whole decimal number in [0, max], else false.
bool Number(const std::string& text, long max, int* out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 6) return false;
  const long v = strtol(text.c_str(), nullptr, 10);
  if (v > max) return false;
  *out = static_cast<int>(v);
  return true;
}

Status NumberFromEnv(const char* name, long max, int* out) {
  if (!env::IsSet(name)) return Status::Ok();
  const std::string text = env::Get(name);
  if (!Number(text, max, out)) return InvalidArgument(Fmt(name, "=", text, " (expected 0 to ", max, ")"));
  return Status::Ok();
}

}  // namespace

Status VerbsOptionsFromEnv(VerbsOptions* options) {
  VerbsOptions o;
  const std::string list = env::Get("CCO_RDMA_DEVICES");
  size_t start = 0;
  while (start < list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    std::string name = item.substr(0, colon);
    int port = 1;
    if (name.empty() || name.size() > 63 ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
            std::string::npos ||
        (colon != std::string::npos && (!Number(item.substr(colon + 1), 255, &port) || port == 0)))
      return InvalidArgument(
          Fmt("CCO_RDMA_DEVICES: \"", item, "\" is not a device name with an optional :port (1-255)"));
    o.devices.emplace_back(name, port);
  }
  CCO_RETURN_IF_ERROR(NumberFromEnv("CCO_RDMA_TC", 255, &o.trafficClass));
  CCO_RETURN_IF_ERROR(NumberFromEnv("CCO_RDMA_SL", 15, &o.serviceLevel));
  CCO_RETURN_IF_ERROR(NumberFromEnv("CCO_RDMA_GID_INDEX", 255, &o.gidIndex));
  *options = o;
  return Status::Ok();
}

Status OpenVerbsDevice(const VerbsApi& api, const VerbsOptions& options, VerbsDevice* device) {
  int count = 0;
  ibv_device** list = api.getDeviceList(&count);
  if (list == nullptr || count <= 0) {
    if (list != nullptr) api.freeDeviceList(list);
    return Unsupported("no RDMA device (ibv_get_device_list found none)");
  }
  // The candidates, in order of preference: the list's, else every device on port 1.
  std::vector<std::pair<ibv_device*, int>> candidates;
  std::string seen;
  for (int i = 0; i < count; ++i) seen += (i ? ", " : "") + std::string(api.getDeviceName(list[i]));
  if (options.devices.empty()) {
    for (int i = 0; i < count; ++i) candidates.emplace_back(list[i], 1);
  } else {
    for (const auto& wanted : options.devices)
      for (int i = 0; i < count; ++i)
        if (wanted.first == api.getDeviceName(list[i])) candidates.emplace_back(list[i], wanted.second);
  }
  std::string why;
  for (const auto& c : candidates) {
    const std::string name = api.getDeviceName(c.first);
    ibv_context* context = api.openDevice(c.first);
    if (context == nullptr) {
      why += Fmt("; ", name, ": cannot be opened");
      continue;
    }
    ibv_port_attr attr;
    memset(&attr, 0, sizeof(attr));
    ibv_gid gid;
    memset(&gid, 0, sizeof(gid));
    if (api.queryPort(context, static_cast<uint8_t>(c.second), &attr) != 0 || attr.state != IBV_PORT_ACTIVE) {
      why += Fmt("; ", name, " port ", c.second, ": not active");
      api.closeDevice(context);
      continue;
    }
    if (attr.link_layer == IBV_LINK_LAYER_ETHERNET &&
        api.queryGid(context, static_cast<uint8_t>(c.second), options.gidIndex, &gid) != 0) {
      why += Fmt("; ", name, " port ", c.second, ": no GID at index ", options.gidIndex);
      api.closeDevice(context);
      continue;
    }
    device->context = context;
    device->name = name;
    device->port = static_cast<uint8_t>(c.second);
    device->portAttr = attr;
    device->gid = gid;
    api.freeDeviceList(list);
    return Status::Ok();
  }
  api.freeDeviceList(list);
  if (candidates.empty())
    return Unsupported(Fmt("CCO_RDMA_DEVICES names no device of this machine (it has ", seen, ")"));
  return Unsupported(Fmt("no usable RDMA port among ", seen, why));
}

}  // namespace cco
