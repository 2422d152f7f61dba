// SPDX-License-Identifier: MIT
#include "topology/cpu_affinity.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>

#include "common/env.h"

namespace cco {
namespace {

// Far above Linux's largest NR_CPUS (8192), yet small enough that a bogus "0-4000000000"
// cannot make us allocate gigabytes.
constexpr int kMaxCpuId = (1 << 20) - 1;

// ---------------------------------------------------------------------------------------
// The cpulist format.

class CpuListParser {
 public:
  explicit CpuListParser(const std::string& text) : text_(text) {}

  Status Parse(CpuList* cpus) {
    cpus->clear();
    SkipBlanks();
    if (AtEnd()) return Status::Ok();  // blank text: the empty set
    while (true) {
      int first = 0;
      CCO_RETURN_IF_ERROR(ReadCpuId(&first));
      int last = first;
      SkipBlanks();
      if (!AtEnd() && text_[pos_] == '-') {
        ++pos_;
        SkipBlanks();
        CCO_RETURN_IF_ERROR(ReadCpuId(&last));
        if (last < first) return Error(Fmt("range ", first, "-", last, " runs backwards"));
      }
      for (int cpu = first; cpu <= last; ++cpu) cpus->push_back(cpu);
      SkipBlanks();
      if (AtEnd()) break;
      if (text_[pos_] != ',') return Error(Fmt("unexpected '", text_[pos_], "'"));
      ++pos_;
      SkipBlanks();
    }
    std::sort(cpus->begin(), cpus->end());
    cpus->erase(std::unique(cpus->begin(), cpus->end()), cpus->end());
    return Status::Ok();
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }

  void SkipBlanks() {
    while (!AtEnd() && isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  Status ReadCpuId(int* id) {
    if (AtEnd() || !isdigit(static_cast<unsigned char>(text_[pos_])))
      return Error(AtEnd() ? std::string("a CPU id is missing at the end")
                           : Fmt("expected a CPU id, found '", text_[pos_], "'"));
    long value = 0;
    while (!AtEnd() && isdigit(static_cast<unsigned char>(text_[pos_]))) {
      value = value * 10 + (text_[pos_] - '0');
      if (value > kMaxCpuId) return Error(Fmt("CPU id beyond ", kMaxCpuId));
      ++pos_;
    }
    *id = static_cast<int>(value);
    return Status::Ok();
  }

  Status Error(const std::string& why) const {
    std::string shown = text_;
    while (!shown.empty() && isspace(static_cast<unsigned char>(shown.back()))) shown.pop_back();
    return InvalidArgument(Fmt("cpulist \"", shown, "\" at offset ", pos_, ": ", why));
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------
// sysfs.

// False when the file does not exist or cannot be read: either way we know nothing.
bool ReadWholeFile(const std::string& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return false;
  *text = contents.str();
  return true;
}

// A cpulist file; *present is false (and no error) when it is missing.
Status ReadCpuListFile(const std::string& path, CpuList* cpus, bool* present) {
  std::string text;
  *present = ReadWholeFile(path, &text);
  cpus->clear();
  if (!*present) return Status::Ok();
  Status parsed = ParseCpuList(text, cpus);
  if (!parsed.ok()) return SystemError(Fmt("malformed ", path, ": ", parsed.message()));
  return Status::Ok();
}

// A device's numa_node; -1 ("no NUMA information", as the kernel itself writes it) when
// the file is missing.
Status ReadNumaNode(const std::string& path, int* node) {
  *node = -1;
  std::string text;
  if (!ReadWholeFile(path, &text)) return Status::Ok();
  std::istringstream in(text);
  long value = 0;
  std::string rest;
  if (!(in >> value) || (in >> rest) || value > kMaxCpuId)
    return SystemError(Fmt("malformed ", path, ": expected a NUMA node number"));
  *node = value < 0 ? -1 : static_cast<int>(value);
  return Status::Ok();
}

// Where one GPU sits, as its PCI device directory tells.
struct GpuLocality {
  bool known = false;  // local_cpulist exists
  int numaNode = -1;   // -1: the kernel gives no node
  CpuList localCpus;
};

std::string PciDevicePath(const std::string& root, const std::string& busId) {
  return root + "/bus/pci/devices/" + busId;
}

Status ReadGpuLocality(const std::string& root, const std::string& busId, GpuLocality* gpu) {
  const std::string dir = PciDevicePath(root, busId);
  CCO_RETURN_IF_ERROR(ReadCpuListFile(dir + "/local_cpulist", &gpu->localCpus, &gpu->known));
  return ReadNumaNode(dir + "/numa_node", &gpu->numaNode);
}

// Whether `peer` shares `self`'s NUMA node. Without a node number, GPUs whose local CPU
// lists are identical count as one node: that is all the kernel tells us.
bool SharesNode(const GpuLocality& self, const GpuLocality& peer) {
  if (self.numaNode >= 0) return peer.numaNode == self.numaNode;
  return peer.known && peer.localCpus == self.localCpus;
}

std::string NodeName(const GpuLocality& gpu) {
  return gpu.numaNode >= 0 ? Fmt("NUMA node ", gpu.numaNode) : std::string("no NUMA node");
}

// `cpus` grouped into physical cores: each CPU with those of its thread siblings that are
// also in `cpus`, ordered by lowest CPU id. A CPU without topology information is a core
// of its own.
Status GroupIntoCores(const std::string& root, const CpuList& cpus, std::vector<CpuList>* cores) {
  cores->clear();
  std::set<int> placed;
  for (int cpu : cpus) {
    // Every lower CPU has been placed already, so `cpu` is the lowest of its core.
    if (placed.count(cpu) != 0) continue;
    CpuList siblings;
    bool present = false;
    CCO_RETURN_IF_ERROR(ReadCpuListFile(Fmt(root, "/devices/system/cpu/cpu", cpu, "/topology/thread_siblings_list"),
                                        &siblings, &present));
    CpuList core = {cpu};
    for (int sibling : siblings) {
      if (sibling != cpu && placed.count(sibling) == 0 && std::binary_search(cpus.begin(), cpus.end(), sibling))
        core.push_back(sibling);
    }
    std::sort(core.begin(), core.end());
    placed.insert(core.begin(), core.end());
    cores->push_back(std::move(core));
  }
  return Status::Ok();
}

// Slice `index` of `count` contiguous, near-equal slices of `cores` (the first slices take
// one extra core when the division is uneven), flattened into one CPU list.
CpuList CoreSlice(const std::vector<CpuList>& cores, size_t index, size_t count) {
  const size_t base = cores.size() / count;
  const size_t extra = cores.size() % count;
  const size_t begin = index * base + std::min(index, extra);
  const size_t size = base + (index < extra ? 1 : 0);
  CpuList cpus;
  for (size_t i = begin; i < begin + size; ++i) cpus.insert(cpus.end(), cores[i].begin(), cores[i].end());
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

bool IsHex(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// ---------------------------------------------------------------------------------------
// The calling thread's affinity. Masks are sized at run time (CPU_ALLOC) so machines with
// more CPUs than the fixed cpu_set_t holds work too.

struct CpuMaskFree {
  void operator()(cpu_set_t* set) const { CPU_FREE(set); }
};
using CpuMask = std::unique_ptr<cpu_set_t, CpuMaskFree>;

Status SetThreadCpus(const CpuList& cpus) {
  const int capacity = cpus.empty() ? 1 : cpus.back() + 1;
  CpuMask mask(CPU_ALLOC(capacity));
  if (!mask) return OutOfMemory(Fmt("CPU mask for ", capacity, " CPUs"));
  const size_t bytes = CPU_ALLOC_SIZE(capacity);
  CPU_ZERO_S(bytes, mask.get());
  for (int cpu : cpus) CPU_SET_S(cpu, bytes, mask.get());
  // pid 0 is the calling thread only, not the whole process.
  if (sched_setaffinity(0, bytes, mask.get()) != 0)
    return ErrnoError(Fmt("sched_setaffinity(", FormatCpuList(cpus), ")"), errno);
  return Status::Ok();
}

}  // namespace

Status GetThreadCpus(CpuList* cpus) {
  for (int capacity = 1024;; capacity *= 2) {
    CpuMask mask(CPU_ALLOC(capacity));
    if (!mask) return OutOfMemory(Fmt("CPU mask for ", capacity, " CPUs"));
    const size_t bytes = CPU_ALLOC_SIZE(capacity);
    CPU_ZERO_S(bytes, mask.get());
    if (sched_getaffinity(0, bytes, mask.get()) == 0) {
      cpus->clear();
      for (int cpu = 0; cpu < static_cast<int>(bytes * 8); ++cpu)
        if (CPU_ISSET_S(cpu, bytes, mask.get())) cpus->push_back(cpu);
      return Status::Ok();
    }
    const int err = errno;
    // EINVAL: the kernel's mask is wider than ours; try a wider one.
    if (err != EINVAL || capacity > kMaxCpuId) return ErrnoError("sched_getaffinity", err);
  }
}

Status ParseCpuList(const std::string& text, CpuList* cpus) { return CpuListParser(text).Parse(cpus); }

std::string FormatCpuList(const CpuList& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Status NormalizePciBusId(const std::string& busId, std::string* normalized) {
  std::string id;
  std::transform(busId.begin(), busId.end(), std::back_inserter(id),
                 [](char c) { return static_cast<char>(tolower(static_cast<unsigned char>(c))); });
  // Without a domain ("18:00.0") it is domain 0.
  if (std::count(id.begin(), id.end(), ':') == 1) id = "0000:" + id;
  const size_t colon1 = id.find(':');
  const size_t colon2 = colon1 == std::string::npos ? colon1 : id.find(':', colon1 + 1);
  const size_t dot = colon2 == std::string::npos ? colon2 : id.find('.', colon2 + 1);
  if (dot == std::string::npos || id.find(':', colon2 + 1) != std::string::npos)
    return InvalidArgument(Fmt("\"", busId, "\" is not a PCI bus id like 0000:18:00.0"));
  std::string domain = id.substr(0, colon1);
  const std::string bus = id.substr(colon1 + 1, colon2 - colon1 - 1);
  const std::string device = id.substr(colon2 + 1, dot - colon2 - 1);
  const std::string function = id.substr(dot + 1);
  if (!IsHex(domain) || bus.size() != 2 || !IsHex(bus) || device.size() != 2 || !IsHex(device) ||
      function.size() != 1 || !IsHex(function))
    return InvalidArgument(Fmt("\"", busId, "\" is not a PCI bus id like 0000:18:00.0"));
  while (domain.size() > 4 && domain[0] == '0') domain.erase(0, 1);
  while (domain.size() < 4) domain.insert(0, 1, '0');
  *normalized = domain + ":" + bus + ":" + device + "." + function;
  return Status::Ok();
}

Status DecideCpuAffinity(const CpuAffinityQuery& query, CpuAffinityDecision* decision) {
  // Until a binding is chosen, the decision is to leave things as they are.
  CpuList current = query.current;
  std::sort(current.begin(), current.end());
  current.erase(std::unique(current.begin(), current.end()), current.end());
  decision->bind = false;
  decision->cpus = current;

  std::string self;
  CCO_RETURN_IF_ERROR(NormalizePciBusId(query.busId, &self));
  GpuLocality gpu;
  CCO_RETURN_IF_ERROR(ReadGpuLocality(query.sysfsRoot, self, &gpu));
  if (!gpu.known) {
    decision->description =
        Fmt("GPU ", self, ": no ", PciDevicePath(query.sysfsRoot, self), "/local_cpulist, CPU affinity left as it is");
    return Status::Ok();
  }
  const std::string where = Fmt("GPU ", self, " (", NodeName(gpu));

  // Respect the cgroup's cpuset and any outer binding (taskset, numactl, the launcher).
  CpuList allowed;
  std::set_intersection(gpu.localCpus.begin(), gpu.localCpus.end(), current.begin(), current.end(),
                        std::back_inserter(allowed));
  if (allowed.empty()) {
    decision->description =
        Fmt(where, "): its local CPUs ", FormatCpuList(gpu.localCpus), " are all outside the allowed CPUs ",
            FormatCpuList(current), ", CPU affinity left as it is");
    return Status::Ok();
  }
  decision->bind = true;
  decision->cpus = allowed;
  if (query.noSplit) {
    decision->description =
        Fmt(where, "): bound to its local CPUs ", FormatCpuList(allowed), " (CCO_CPU_AFFINITY_NO_SPLIT)");
    return Status::Ok();
  }

  // This process's GPUs on the same node, ordered by bus id; our place among them picks
  // our slice. A std::set also drops repeats of the same GPU.
  std::set<std::string> nodeGpus = {self};
  for (const std::string& other : query.allBusIds) {
    std::string id;
    CCO_RETURN_IF_ERROR(NormalizePciBusId(other, &id));
    if (nodeGpus.count(id) != 0) continue;
    GpuLocality peer;
    CCO_RETURN_IF_ERROR(ReadGpuLocality(query.sysfsRoot, id, &peer));
    if (SharesNode(gpu, peer)) nodeGpus.insert(id);
  }
  if (nodeGpus.size() == 1) {
    decision->description =
        Fmt(where, ", the process's only GPU there): bound to its local CPUs ", FormatCpuList(allowed));
    return Status::Ok();
  }

  // Split by physical core, never by CPU, so two ranks never share one core's SMT siblings.
  std::vector<CpuList> cores;
  CCO_RETURN_IF_ERROR(GroupIntoCores(query.sysfsRoot, allowed, &cores));
  if (cores.size() < nodeGpus.size()) {
    decision->description =
        Fmt(where, ", ", nodeGpus.size(), " GPUs but ", cores.size(),
            " physical cores): too few cores to split, bound to its local CPUs ", FormatCpuList(allowed));
    return Status::Ok();
  }
  const size_t index = static_cast<size_t>(std::distance(nodeGpus.begin(), nodeGpus.find(self)));
  decision->cpus = CoreSlice(cores, index, nodeGpus.size());
  decision->description =
      Fmt(where, ", GPU ", index + 1, " of ", nodeGpus.size(), "): bound to CPUs ", FormatCpuList(decision->cpus),
          ", its share of the ", cores.size(), " physical cores in ", FormatCpuList(allowed));
  return Status::Ok();
}

Status ApplyCpuAffinityFromSysfs(const std::string& sysfsRoot, const std::string& busId,
                                 const std::vector<std::string>& allBusIds, std::string* description) {
  std::string ignored;
  if (description == nullptr) description = &ignored;
  if (env::Flag("CCO_IGNORE_CPU_AFFINITY")) {
    *description = "CCO_IGNORE_CPU_AFFINITY is set, CPU affinity left as it is";
    return Status::Ok();
  }
  CpuAffinityQuery query;
  query.sysfsRoot = sysfsRoot;
  query.busId = busId;
  query.allBusIds = allBusIds;
  query.noSplit = env::Flag("CCO_CPU_AFFINITY_NO_SPLIT");
  Status read = GetThreadCpus(&query.current);
  if (!read.ok()) {
    *description = read.message();
    return read.Prefixed("CPU affinity");
  }
  CpuAffinityDecision decision;
  Status decided = DecideCpuAffinity(query, &decision);
  if (!decided.ok()) {
    *description = decided.message();
    return decided.Prefixed("CPU affinity");
  }
  *description = decision.description;
  if (!decision.bind || decision.cpus == query.current) return Status::Ok();
  return SetThreadCpus(decision.cpus).Prefixed(Fmt("CPU affinity (", decision.description, ")"));
}

Status ApplyCpuAffinity(const std::string& busId, const std::vector<std::string>& allBusIds, std::string* description) {
  return ApplyCpuAffinityFromSysfs("/sys", busId, allBusIds, description);
}

}  // namespace cco
