#pragma once
/// @file HostWindow.hpp
/// What a machine the root shares with other nodes (a tree on one machine) gave the tree
/// over a span of the run (docs/live-model.md, "The a-posteriori prediction" and "The
/// prediction interval"): the CPU time the machine left to the tree, each node's process
/// CPU time and its kernels' own per application, the tasks each node completed — lp::HostObservation, for the a-posteriori
/// model over the steady window and for the interval from the run's own estimates over
/// the span seen so far and its windows.

#include <cstddef>
#include <optional>

#include "master/TreeCpu.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/RunInterval.hpp"
#include "runtime/metrics/Results.hpp"

namespace treefarm::master {

/// Where the observations come from: the tree's CPU series, the machine's CPU limit for
/// the tree (its cgroup's quota, CPUs; none: no quota) and the tasks recorded so far.
struct HostSources {
  const TreeCpu& cpu;
  std::optional<double> cpu_limit;
  const metrics::RunResults& results;
};

/// Host `host` of `model` over [lo, hi] seconds (results' clock). Throws
/// std::runtime_error, saying which, when the CPU samples do not cover the span.
lp::HostObservation observe_host(const lp::PlatformModel& model, int host, const HostSources& from, double lo, double hi);

/// The same over [lo, hi] and over each of its `parts` equal windows, in order.
lp::HostWindows observe_host_windows(const lp::PlatformModel& model, int host, const HostSources& from, double lo,
                                     double hi, std::size_t parts);

/// The host the root shares with at least one other node: its index, or -1.
int shared_root_host(const lp::PlatformModel& model);

}  // namespace treefarm::master
