// SPDX-License-Identifier: MIT
// The calling thread's last error detail, and the helper every entry point ends with.
#ifndef CCO_HOST_API_LAST_ERROR_H_
#define CCO_HOST_API_LAST_ERROR_H_

#include "common/status.h"

namespace cco {

void SetLastError(const std::string& message);
// Records a failure's detail ("ccoWindowRegister: ...") and returns its code.
ccoResult_t Report(const char* function, const Status& status);

}  // namespace cco

#endif  // CCO_HOST_API_LAST_ERROR_H_
