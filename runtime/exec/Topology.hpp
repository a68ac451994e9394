#pragma once
/// @file Topology.hpp
/// What this machine offers to a worker, as discovered by hwloc and restricted to the
/// process's CPU binding (taskset, cpuset cgroup): the cores it may use, its caches and
/// its memory. `treefarm hwdetect` prints it (to_text / to_json); the worker hands
/// `cores` (or restrict_cores()) to its Executor.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::exec {

/// One kind of cache: all caches of the same level and size, counted together.
struct CacheInfo {
  int level = 0;                 ///< 1 for L1 (data or unified), 2 for L2, ...
  std::uint64_t size_bytes = 0;  ///< Size of one cache, bytes.
  std::size_t count = 0;         ///< How many such caches overlap the usable PUs.
};

/// The hardware usable by this process.
struct Topology {
  /// OS index of one PU (the first one) per usable core, in hwloc's logical order.
  /// Executor cores are taken from here: one task thread per core.
  std::vector<int> cores;
  /// OS indices of all usable PUs (hyperthreads included), ascending logical order.
  std::vector<int> pus;
  std::size_t numa_nodes = 0;    ///< NUMA nodes overlapping the usable PUs (>= 1).
  std::vector<CacheInfo> caches; ///< Data and unified caches, by level then size.
  /// Memory the worker uses as its budget, bytes: the OS figure when known (hwloc's is
  /// wrong on some VMs, see PLATFORM-NOTES), hwloc's otherwise.
  std::uint64_t memory_bytes = 0;
  std::uint64_t hwloc_memory_bytes = 0;  ///< Total memory hwloc reports, bytes.
  /// Physical memory the OS reports (sysconf / MemTotal), lowered to the memory cgroup
  /// limit if that is lower, bytes; 0 if unknown.
  std::uint64_t os_memory_bytes = 0;
  /// Empty, or a sentence explaining a disagreement (> 10%) between hwloc and the OS
  /// and which figure memory_bytes took, or that a cgroup limit applies.
  std::string memory_note;
};

/// Discovers the topology with hwloc, restricted to the process CPU binding and to the
/// allowed cpuset. Throws std::runtime_error if hwloc fails or no PU is usable.
Topology discover_topology();

/// The first n cores of `topology` (the worker's --cores N).
/// Throws std::invalid_argument if n is 0 or larger than topology.cores.size().
std::vector<int> restrict_cores(const Topology& topology, std::size_t n);

/// Machine-readable form: {"cores": [...], "pus": [...], "numa_nodes": n,
/// "caches": [{"level", "size_bytes", "count"}], "memory_bytes", "hwloc_memory_bytes",
/// "os_memory_bytes", "memory_note"}.
nlohmann::json to_json(const Topology& topology);

/// Human-readable multi-line summary, ending with a newline.
std::string to_text(const Topology& topology);

}  // namespace treefarm::exec
