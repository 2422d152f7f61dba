// SPDX-License-Identifier: MIT
// CPU affinity at communicator creation: the calling thread is pinned to the CPUs near its
// GPU before the bootstrap and any worker thread start, so those threads inherit the binding.
//
// The decision (DecideCpuAffinity) is a pure function of a sysfs tree and the thread's
// current CPU set, so tests can feed it fake topologies; ApplyCpuAffinity reads the real
// state, honours the environment and makes the system calls.
#ifndef CCO_HOST_TOPOLOGY_CPU_AFFINITY_H_
#define CCO_HOST_TOPOLOGY_CPU_AFFINITY_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace cco {

// CPU ids, ascending, without repeats.
using CpuList = std::vector<int>;

// Parses the kernel's cpulist format, "0-3,8,10-11". Blanks around numbers and separators
// and a trailing newline are accepted; blank text is the empty set. Anything else
// (letters, empty items, reversed ranges, ids beyond any real machine) is InvalidArgument.
Status ParseCpuList(const std::string& text, CpuList* cpus);

// The same format back, with runs collapsed into ranges; "" for the empty set.
std::string FormatCpuList(const CpuList& cpus);

// The CPUs the calling thread may run on now (its affinity: cgroup, taskset, a binding).
Status GetThreadCpus(CpuList* cpus);

// "0000:18:00.0" as sysfs names it: lower case, and a zero-padded 8-digit domain (NVML's
// spelling) cut to sysfs's 4 digits. InvalidArgument unless it looks like a PCI address,
// which also keeps path pieces ("/", "..") out of the sysfs paths built from it.
Status NormalizePciBusId(const std::string& busId, std::string* normalized);

struct CpuAffinityQuery {
  std::string sysfsRoot = "/sys";
  std::string busId;                   // this thread's GPU, e.g. "0000:18:00.0", any case
  std::vector<std::string> allBusIds;  // every GPU the process sees; busId may be among them
  CpuList current;                     // the CPUs the thread may run on now (cgroup, taskset)
  bool noSplit = false;                // bind to the whole GPU-local set, not this GPU's slice
};

struct CpuAffinityDecision {
  bool bind = false;        // false: leave the affinity alone (then cpus == query.current)
  CpuList cpus;             // the set to bind to
  std::string description;  // one line saying why, for logs and error messages
};

// Chooses the CPUs for the GPU `query.busId`: its sysfs local_cpulist intersected with
// `query.current`, then, when its NUMA node has several of the process's GPUs and at least
// one physical core each, this GPU's contiguous slice of that node's physical cores (SMT
// siblings always stay together). Missing sysfs files are not errors: the decision is then
// not to bind. Errors: a malformed bus id (InvalidArgument) or unreadable sysfs contents
// (SystemError, naming the file).
Status DecideCpuAffinity(const CpuAffinityQuery& query, CpuAffinityDecision* decision);

// Pins the calling thread (only it; threads it starts later inherit the binding) to the
// CPUs DecideCpuAffinity picks from /sys. CCO_IGNORE_CPU_AFFINITY skips it entirely;
// CCO_CPU_AFFINITY_NO_SPLIT binds to the whole GPU-local set. `description` (may be null)
// receives the decision's one-line explanation. Failed system calls become SystemError.
Status ApplyCpuAffinity(const std::string& busId, const std::vector<std::string>& allBusIds, std::string* description);

// ApplyCpuAffinity reading the topology under `sysfsRoot` instead of /sys (for tests).
Status ApplyCpuAffinityFromSysfs(const std::string& sysfsRoot, const std::string& busId,
                                 const std::vector<std::string>& allBusIds, std::string* description);

}  // namespace cco

#endif  // CCO_HOST_TOPOLOGY_CPU_AFFINITY_H_
