#pragma once
/// @file CpuPlacement.hpp
/// Where each node of a tree started on one machine computes: which CPUs, how many cores,
/// pinned or shared (docs/commands/run.md, "Placement").

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"

namespace treefarm::tools {

/// The CPUs one node computes on.
struct NodeCpus {
  std::string cpus;         ///< CPU list ("" = computes on none: cores = 0 or no usable CPU)
  std::uint32_t cores = 0;  ///< cores it computes on at once (its executor's slots)
  /// Its CPUs are shared with other nodes (fewer cores than CPUs): not pinned one thread per core.
  bool shared = false;
  /// The node's process arguments: `--cpus LIST` (pinned to the list), `--cpus LIST --cores N`
  /// (shared), `--cores 0` (no CPU: only forwards).
  std::vector<std::string> worker_args() const;
};

/// Assigns the machine's usable CPUs (OS indices) to the experiment's nodes. A node's
/// `cpuset` is kept as given (pinned). The others ask `cores` each (at most the usable
/// CPUs); when those asks fit in the usable CPUs they are dealt round-robin (master first,
/// then breadth-first) into disjoint sets, each node pinned to its own. When they do not fit
/// (the deal would wrap and put two pinned nodes on one CPU while another CPU idles), every
/// worker among them computes on the whole usable set, shared, with its `cores`; the master
/// keeps its first CPUs of the deal.
std::vector<NodeCpus> assign_cpus(const model::Experiment& ex, const std::vector<int>& usable);

/// The CPU lists alone, one per node (the host calibration records them as each node's CPUs).
std::vector<std::string> cpu_lists(const std::vector<NodeCpus>& placement);

/// One line saying which nodes share which CPUs and why, for the user; "" when no node shares.
std::string shared_cpus_note(const model::Experiment& ex, const std::vector<NodeCpus>& placement,
                             std::size_t usable);

}  // namespace treefarm::tools
