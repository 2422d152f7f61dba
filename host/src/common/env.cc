// SPDX-License-Identifier: MIT
#include "common/env.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

namespace cco {
namespace env {
namespace {

// CCO name -> the guide's alias.
const char* AliasOf(const char* name) {
  static const struct {
    const char* cco;
    const char* mori;
  } kAliases[] = {
      {"CCO_SOCKET_IFNAME", "MORI_SOCKET_IFNAME"},
      {"CCO_IGNORE_CPU_AFFINITY", "MORI_IGNORE_CPU_AFFINITY"},
      {"CCO_CPU_AFFINITY_NO_SPLIT", "MORI_CPU_AFFINITY_NO_SPLIT"},
      {"CCO_RDMA_DEVICES", "MORI_RDMA_DEVICES"},
      {"CCO_RDMA_TC", "MORI_RDMA_TC"},
      {"CCO_RDMA_SL", "MORI_RDMA_SL"},
      {"CCO_ENABLE_SDMA", "MORI_ENABLE_SDMA"},
      {"CCO_DEVICE_BC", "MORI_CCO_BC"},
      {"CCO_DISABLE_JIT", "MORI_DISABLE_JIT"},
  };
  for (const auto& a : kAliases)
    if (strcmp(a.cco, name) == 0) return a.mori;
  return nullptr;
}

const char* Raw(const char* name) {
  const char* v = getenv(name);
  if (v == nullptr) {
    const char* alias = AliasOf(name);
    if (alias != nullptr) v = getenv(alias);
  }
  return v;
}

}  // namespace

std::string Get(const char* name, const std::string& fallback) {
  const char* v = Raw(name);
  return v ? std::string(v) : fallback;
}

bool IsSet(const char* name) { return Raw(name) != nullptr; }

namespace {
// The spellings of an on/off variable (any case): Flag reads them, CheckValues allows only them.
constexpr const char* kOn[] = {"1", "true", "yes", "on"};
constexpr const char* kOff[] = {"", "0", "false", "no", "off"};
template <size_t N> bool OneOf(const char* v, const char* const (&words)[N]) {
  for (const char* word : words)
    if (strcasecmp(v, word) == 0) return true;
  return false;
}
}  // namespace

bool Flag(const char* name, bool fallback) {
  const char* v = Raw(name);
  if (v == nullptr) return fallback;
  return OneOf(v, kOn);
}

int64_t Int(const char* name, int64_t fallback) {
  const char* v = Raw(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long long n = strtoll(v, &end, 10);
  return (*end == '\0' && n >= 0) ? n : fallback;
}

int64_t WaitMs(const char* name, int64_t fallback) {
  constexpr int64_t kMax = int64_t{1} << 41;  // about 70 years
  const int64_t ms = Int(name, fallback);
  return ms < 1 ? 1 : ms > kMax ? kMax : ms;
}

int64_t TimeoutMs() { return WaitMs("CCO_TIMEOUT_MS", 120000); }

namespace {
// What name a value came through: the CCO_ variable, else its MORI_ alias.
std::string SetAs(const char* name) {
  return getenv(name) != nullptr || AliasOf(name) == nullptr ? std::string(name) : std::string(AliasOf(name));
}
bool IsWholeNumber(const char* v) {
  if (*v == '\0' || strlen(v) > 18) return false;  // 18 digits: no overflow
  for (const char* p = v; *p; ++p)
    if (*p < '0' || *p > '9') return false;
  return true;
}
}  // namespace

Status CheckValues() {
  static const char* const kNumbers[] = {"CCO_TIMEOUT_MS",          "CCO_NET_TIMEOUT_MS",      "CCO_NET_REPLY_WAIT_US",
                                         "CCO_TCP_ACK_DELAY_US",    "CCO_TCP_CHUNK_BYTES",     "CCO_TCP_STAGING_BYTES",
                                         "CCO_TEST_NODES_PER_HOST", "CCO_TEST_RANKS_PER_HOST", "CCO_TEST_LOSS_PAUSE_MS",
                                         "CCO_TRACE_EVENTS"};
  static const char* const kFlags[] = {"CCO_ENABLE_SDMA", "CCO_IGNORE_CPU_AFFINITY", "CCO_CPU_AFFINITY_NO_SPLIT",
                                       "CCO_GDA_TRACE", "CCO_TRACE_PHASES"};
  for (const char* name : kNumbers) {
    const char* v = Raw(name);
    if (v != nullptr && *v != '\0' && !IsWholeNumber(v))
      return InvalidArgument(SetAs(name) + "=\"" + v + "\" is not a whole number (at most 18 digits, no sign or unit)");
  }
  for (const char* name : kFlags) {
    const char* v = Raw(name);
    if (v != nullptr && !OneOf(v, kOn) && !OneOf(v, kOff))
      return InvalidArgument(SetAs(name) + "=\"" + v +
                             "\" is neither on (1, true, yes, on) nor off (0, false, no, off)");
  }
  // The verbs backend's numbers, checked here too: a wrong value is wrong on every machine, so
  // it is refused at creation, not only where an RDMA device makes the backend read it.
  static const struct {
    const char* name;
    int64_t max;
    const char* what;
  } kBounded[] = {{"CCO_RDMA_TC", 255, "the RDMA traffic class"},
                  {"CCO_RDMA_SL", 15, "the RDMA service level"},
                  {"CCO_RDMA_GID_INDEX", 255, "the RDMA GID index"}};
  for (const auto& b : kBounded) {
    const char* v = Raw(b.name);
    if (v != nullptr && (!IsWholeNumber(v) || strtoll(v, nullptr, 10) > b.max))
      return InvalidArgument(SetAs(b.name) + "=\"" + v + "\" is not a whole number in 0.." + std::to_string(b.max) +
                             " (" + b.what + ")");
  }
  return Status::Ok();
}

}  // namespace env
}  // namespace cco
