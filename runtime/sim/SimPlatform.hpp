#pragma once
/// @file SimPlatform.hpp
/// What the SimGrid adapter simulates, as plain data (no SimGrid types): the tree with
/// each host's speed and cores, each link's bandwidth and latency, and the work of one
/// task of each application on each node. Built from an experiment (and a calibration,
/// when given) through the LP's own view of the platform (lp::model_from_experiment), so
/// that the simulated platform and the LP prediction describe the same machine.
/// docs/simulation.md explains the choices.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::sim {

/// Host speed (flop/s per core) used for a node that has no `speed` but computes with
/// calibrated task durations only: its executions are sized so that they last exactly the
/// calibrated seconds, whatever this value.
inline constexpr double reference_speed = 1e9;

/// Bandwidth (bytes/s) of a link the model treats as infinitely fast (a node without
/// `bandwidth` nor calibrated link: a loopback link for the LP). SimGrid needs a finite
/// value; this one makes a 1 GB task cross in 1 µs.
inline constexpr double unbounded_bandwidth = 1e15;

struct SimNode {
  std::string name;
  int parent = -1;                ///< Index of the parent; -1 for the root (node 0).
  std::vector<std::size_t> children;
  std::uint32_t cores = 0;        ///< Cores that compute (0: forwards only).
  double speed = reference_speed; ///< flop/s per core of the simulated host.
  double bandwidth = 0;           ///< bytes/s of the link from the parent (root: unused).
  double latency = 0;             ///< seconds, link from the parent.
  double max_out_bandwidth = 0;   ///< bytes/s cap on the node's outgoing traffic; 0 = none.
  /// Per application: flop per thread of one task's execution on this host, run with
  /// cores_per_task threads (so it lasts task_seconds). 0: the node cannot run it.
  std::vector<double> work;
  /// Per application: seconds one task takes here (the LP's task_seconds; +inf: cannot).
  std::vector<double> task_seconds;
  /// `[[event]]` changes of this host's speed: (seconds from the start, flop/s per core),
  /// sorted by time. A cpu_quota event scales `speed` by new quota / initial quota.
  std::vector<std::pair<double, double>> speed_changes;
  /// `[[event]]` changes of the link from the parent: (seconds, bytes/s), sorted by time.
  std::vector<std::pair<double, double>> bandwidth_changes;
};

struct SimPlatform {
  model::Experiment experiment;   ///< Apps and run settings, as loaded (possibly overridden).
  lp::PlatformModel model;        ///< The LP's view of the same platform.
  std::vector<SimNode> nodes;     ///< Same order as experiment.nodes (root first).
  bool calibrated = false;        ///< Durations/bandwidths come from a calibration file.
};

/// lp::MeasuredSeconds / MeasuredBandwidth of a calibration (as the master builds them).
void measured_from_calibration(const model::Calibration& calibration, lp::MeasuredSeconds& seconds,
                               lp::MeasuredBandwidth& bandwidth);

/// Builds the simulated platform. Throws std::invalid_argument (from the LP model) for a
/// computing node without `speed` and without calibrated durations, an application that no
/// node can run, or non-positive values.
SimPlatform make_sim_platform(const model::Experiment& experiment,
                              const model::Calibration* calibration = nullptr);

}  // namespace treefarm::sim
