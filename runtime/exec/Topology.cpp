#include "runtime/exec/Topology.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <hwloc.h>

namespace treefarm::exec {

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

struct BitmapDeleter {
  void operator()(hwloc_bitmap_t b) const { hwloc_bitmap_free(b); }
};
using BitmapPtr = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

BitmapPtr make_bitmap() {
  BitmapPtr b(hwloc_bitmap_alloc());
  if (!b) throw std::runtime_error("hwloc_bitmap_alloc failed");
  return b;
}

// A cgroup memory limit of "max" or one of these page-rounded huge values means none.
constexpr std::uint64_t kNoCgroupLimit = std::uint64_t{1} << 62;

std::uint64_t read_limit_file(const std::string& path) {
  std::ifstream in(path);
  std::string value;
  if (!in || !(in >> value) || value == "max") return 0;
  try {
    std::uint64_t v = std::stoull(value);
    return v >= kNoCgroupLimit ? 0 : v;
  } catch (const std::exception&) {
    return 0;
  }
}

// The memory limit of this process's cgroup (v1 memory controller or v2), 0 if none.
// Tries the path from /proc/self/cgroup, then the mount root (inside a container the
// process's cgroup is often the root of what is mounted).
std::uint64_t cgroup_memory_limit() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::uint64_t limit = 0;
  auto consider = [&limit](std::uint64_t v) {
    if (v != 0 && (limit == 0 || v < limit)) limit = v;
  };
  while (std::getline(in, line)) {
    auto first = line.find(':');
    auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // cgroup v2 unified hierarchy
      consider(read_limit_file("/sys/fs/cgroup" + path + "/memory.max"));
      consider(read_limit_file("/sys/fs/cgroup/memory.max"));
    } else {
      std::stringstream ss(controllers);
      std::string c;
      while (std::getline(ss, c, ',')) {
        if (c != "memory") continue;
        consider(read_limit_file("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
        consider(read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
      }
    }
  }
  return limit;
}

std::uint64_t os_physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) {
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  }
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024;
    in.ignore(256, '\n');
  }
  return 0;
}

std::string format_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  std::ostringstream os;
  os.precision(u == 0 ? 0 : 1);
  os << std::fixed << v << ' ' << units[u];
  return os.str();
}

}  // namespace

Topology discover_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("hwloc_topology_init failed");
  TopologyPtr topo(raw);
  // RESTRICT_TO_CPUBINDING needs IS_THISSYSTEM; DONT_CHANGE_BINDING because the worker may
  // already run threads whose binding we must not disturb.
  hwloc_topology_set_flags(topo.get(), HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                                           HWLOC_TOPOLOGY_FLAG_RESTRICT_TO_CPUBINDING |
                                           HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING);
  if (hwloc_topology_load(topo.get()) != 0) throw std::runtime_error("hwloc_topology_load failed");

  // Usable = the (restricted) machine ∩ allowed cpuset ∩ process binding. The flag above
  // should already do it; intersecting again keeps us correct if a backend ignores it.
  BitmapPtr usable = make_bitmap();
  hwloc_bitmap_copy(usable.get(), hwloc_topology_get_topology_cpuset(topo.get()));
  hwloc_bitmap_and(usable.get(), usable.get(), hwloc_topology_get_allowed_cpuset(topo.get()));
  BitmapPtr bound = make_bitmap();
  if (hwloc_get_cpubind(topo.get(), bound.get(), HWLOC_CPUBIND_PROCESS) == 0 &&
      !hwloc_bitmap_iszero(bound.get())) {
    hwloc_bitmap_and(usable.get(), usable.get(), bound.get());
  }
  if (hwloc_bitmap_iszero(usable.get())) throw std::runtime_error("hwloc: no usable PU");

  Topology t;
  int n_pus = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_PU);
  for (int i = 0; i < n_pus; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_PU, static_cast<unsigned>(i));
    if (hwloc_bitmap_isset(usable.get(), pu->os_index)) t.pus.push_back(static_cast<int>(pu->os_index));
  }
  int n_cores = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_CORE);
  for (int i = 0; i < n_cores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    BitmapPtr in_core = make_bitmap();
    hwloc_bitmap_and(in_core.get(), core->cpuset, usable.get());
    int first = hwloc_bitmap_first(in_core.get());
    if (first >= 0) t.cores.push_back(first);
  }
  if (t.cores.empty()) t.cores = t.pus;  // no Core objects (some VMs): one core per PU

  int n_numa = hwloc_get_nbobjs_by_type(topo.get(), HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < n_numa; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (node->cpuset && hwloc_bitmap_intersects(node->cpuset, usable.get())) ++t.numa_nodes;
  }
  if (t.numa_nodes == 0) t.numa_nodes = 1;

  std::map<std::pair<int, std::uint64_t>, std::size_t> caches;
  const std::pair<hwloc_obj_type_t, int> cache_types[] = {
      {HWLOC_OBJ_L1CACHE, 1}, {HWLOC_OBJ_L2CACHE, 2}, {HWLOC_OBJ_L3CACHE, 3},
      {HWLOC_OBJ_L4CACHE, 4}, {HWLOC_OBJ_L5CACHE, 5}};
  for (auto [type, level] : cache_types) {
    int n = hwloc_get_nbobjs_by_type(topo.get(), type);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t c = hwloc_get_obj_by_type(topo.get(), type, static_cast<unsigned>(i));
      if (c->attr == nullptr || !hwloc_bitmap_intersects(c->cpuset, usable.get())) continue;
      if (c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
      ++caches[{level, c->attr->cache.size}];
    }
  }
  for (const auto& [key, count] : caches) t.caches.push_back({key.first, key.second, count});

  hwloc_obj_t root = hwloc_get_root_obj(topo.get());
  t.hwloc_memory_bytes = root->total_memory;
  std::uint64_t physical = os_physical_memory();
  std::uint64_t cgroup = cgroup_memory_limit();
  t.os_memory_bytes = physical;
  if (cgroup != 0 && (physical == 0 || cgroup < physical)) {
    t.os_memory_bytes = cgroup;
    t.memory_note = "memory cgroup limit " + format_bytes(cgroup) + " is below the physical " +
                    format_bytes(physical) + ": using the cgroup limit. ";
  }
  t.memory_bytes = t.os_memory_bytes != 0 ? t.os_memory_bytes : t.hwloc_memory_bytes;
  if (t.os_memory_bytes != 0 && t.hwloc_memory_bytes != 0) {
    double a = static_cast<double>(t.hwloc_memory_bytes);
    double b = static_cast<double>(t.os_memory_bytes);
    if (std::abs(a - b) > 0.10 * std::max(a, b)) {
      t.memory_note += "hwloc reports " + format_bytes(t.hwloc_memory_bytes) + ", the OS reports " +
                       format_bytes(t.os_memory_bytes) + ": using the OS figure";
    }
  }
  while (!t.memory_note.empty() && t.memory_note.back() == ' ') t.memory_note.pop_back();
  return t;
}

std::vector<int> restrict_cores(const Topology& topology, std::size_t n) {
  if (n == 0 || n > topology.cores.size()) {
    throw std::invalid_argument("restrict_cores: asked for " + std::to_string(n) +
                                " cores, expected 1.." + std::to_string(topology.cores.size()) +
                                " (the usable cores of this process)");
  }
  return {topology.cores.begin(), topology.cores.begin() + static_cast<std::ptrdiff_t>(n)};
}

nlohmann::json to_json(const Topology& topology) {
  nlohmann::json caches = nlohmann::json::array();
  for (const auto& c : topology.caches) {
    caches.push_back({{"level", c.level}, {"size_bytes", c.size_bytes}, {"count", c.count}});
  }
  return {{"cores", topology.cores},
          {"pus", topology.pus},
          {"numa_nodes", topology.numa_nodes},
          {"caches", caches},
          {"memory_bytes", topology.memory_bytes},
          {"hwloc_memory_bytes", topology.hwloc_memory_bytes},
          {"os_memory_bytes", topology.os_memory_bytes},
          {"memory_note", topology.memory_note}};
}

std::string to_text(const Topology& topology) {
  auto list = [](const std::vector<int>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
  };
  std::ostringstream os;
  os << "cores:      " << topology.cores.size() << " (PU " << list(topology.cores) << ")\n";
  os << "PUs:        " << topology.pus.size() << " (" << list(topology.pus) << ")\n";
  os << "NUMA nodes: " << topology.numa_nodes << '\n';
  for (const auto& c : topology.caches) {
    os << "L" << c.level << " cache:   " << c.count << " x " << format_bytes(c.size_bytes) << '\n';
  }
  os << "memory:     " << format_bytes(topology.memory_bytes) << " (hwloc "
     << format_bytes(topology.hwloc_memory_bytes) << ", OS " << format_bytes(topology.os_memory_bytes)
     << ")\n";
  if (!topology.memory_note.empty()) os << "note:       " << topology.memory_note << '\n';
  return os.str();
}

}  // namespace treefarm::exec
