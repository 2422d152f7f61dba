/* SPDX-License-Identifier: MIT */
/* CCO ABI: everything that crosses the kernel boundary, in one include. */
#ifndef CCO_ABI_CCO_ABI_H_
#define CCO_ABI_CCO_ABI_H_

#include "abi/version.h"
#include "abi/enums.h"
#include "abi/window.h"
#include "abi/devcomm.h"
#include "abi/ring.h"
#include "abi/gda.h"
#include "abi/sdma.h"
#include "abi/trace.h"

#endif /* CCO_ABI_CCO_ABI_H_ */
