// SPDX-License-Identifier: MIT
// Which CUDA context the host proxy's GPU work goes to.
//
// A module loaded in a context (CUDA's lazy loading loads one at a kernel's first launch: a
// torch operator, a Triton kernel first used) waits for that context's running kernels, and
// while it waits every stream call made in that context waits too: copies, stream writes
// (tools/perf/blocking_call_probe.cu beside-waits: 1000 ms, as long as the kernel ran). A proxy
// working in the user's context could then not serve a kernel that waits for it (an SDMA
// quiet, a GDA flush through the proxy) until that kernel gave up. In a context of its own
// the same calls return at once on mapped memory (windows, Platform::DeviceAlloc's) and
// portable pinned host memory. A copy touching memory cuMemAlloc'd in the waiting context
// still waits (own-context-ladder in the same probe: 1000 ms against 0.06-0.08), so the proxy
// touches none: CCO's own device memory is mapped too.
//
// The scope is per thread: the proxy's thread holds one for its life, and other threads hold
// one around the calls that make, wait for or end the proxy's streams. Inside it, a platform
// that has such a context (CUDA; created on first use, ~0.2 s and ~0.5 GiB of device memory
// on an H100) binds it instead of the device's primary context; where the driver refuses to
// make it, the primary context serves, said once on stderr. CCO_PROXY_CONTEXT=0 keeps the proxy
// in the primary context.
#ifndef CCO_HOST_PLATFORM_PROXY_SCOPE_H_
#define CCO_HOST_PLATFORM_PROXY_SCOPE_H_

namespace cco {

class ProxyWorkScope {
 public:
  ProxyWorkScope();
  ~ProxyWorkScope();
  ProxyWorkScope(const ProxyWorkScope&) = delete;
  ProxyWorkScope& operator=(const ProxyWorkScope&) = delete;

  // Whether the calling thread is inside a scope.
  static bool Active();
  // Whether the proxy works in a context of its own where the platform has one
  // (CCO_PROXY_CONTEXT, default on).
  static bool OwnContext();
};

}  // namespace cco

#endif  // CCO_HOST_PLATFORM_PROXY_SCOPE_H_
