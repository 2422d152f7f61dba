// SPDX-License-Identifier: MIT
// GetPlatform: which platform this process uses, decided once.
#include <mutex>
#include <string>

#include "common/env.h"
#include "platform/platform.h"

namespace cco {

Status GetPlatform(Platform** platform) {
  static std::once_flag once;
  static Platform* chosen = nullptr;
  static Status status;
  std::call_once(once, [] {
    const std::string forced = env::Get("CCO_PLATFORM");
    if (forced == "cpu") {
      status = CreateCpuPlatform(&chosen);
    } else if (forced == "cuda") {
      status = CreateCudaPlatform(&chosen).Prefixed("CCO_PLATFORM=cuda");
    } else if (forced == "hip") {
      status = CreateHipPlatform(&chosen).Prefixed("CCO_PLATFORM=hip");
    } else if (!forced.empty()) {
      status = InvalidArgument("CCO_PLATFORM=" + forced + " is none of cuda, hip, cpu");
    } else if (CreateCudaPlatform(&chosen).ok() || CreateHipPlatform(&chosen).ok()) {
      status = Status::Ok();
    } else {
      status = CreateCpuPlatform(&chosen);
    }
  });
  *platform = chosen;
  return status;
}

}  // namespace cco
