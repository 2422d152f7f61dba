/* SPDX-License-Identifier: MIT */
/* cco/cco_scale_out.hpp: the guide's header for GPU-initiated transfers (its
 * "mori/cco/cco_scale_out.hpp"): cco/cco.hpp, then GDA (ccoGda<Provider, DoorbellMode>, the
 * GDA barrier session) and SDMA (ccoSdma). */
#ifndef CCO_CCO_SCALE_OUT_HPP_
#define CCO_CCO_SCALE_OUT_HPP_

#include "cco/cco.hpp"
#include "device/gda.hpp"
#include "device/sdma.hpp"

#endif /* CCO_CCO_SCALE_OUT_HPP_ */
