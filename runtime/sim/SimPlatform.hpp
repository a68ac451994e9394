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
  /// Per application: flop per thread of one task's execution on this host (or its CPU
  /// pool), run with cores_per_task threads (so it lasts task_seconds alone). 0: the node
  /// cannot run it.
  std::vector<double> work;
  /// Per application: seconds one task's execution lasts here when it runs alone (+inf:
  /// cannot): the LP's task_seconds, or on a calibrated host (cpu_pool >= 0) the task's
  /// CPU there beyond what its transfers cost (receive_work), on its pool.
  std::vector<double> task_seconds;
  /// `[[event]]` changes of this host's speed: (seconds from the start, flop/s per core),
  /// sorted by time. A cpu_quota event scales `speed` by new quota / initial quota.
  std::vector<std::pair<double, double>> speed_changes;
  /// `[[event]]` changes of the link from the parent: (seconds, bytes/s), sorted by time.
  std::vector<std::pair<double, double>> bandwidth_changes;
  /// Index in SimPlatform::cpu_pools of the CPUs this node's executions run on; -1: its
  /// own host's cores (at `speed`), as on an uncalibrated platform.
  int cpu_pool = -1;
  /// Per application: flop (one thread at one full CPU, reference_speed) that each task of
  /// it sent to this node costs this node's CPU pool while it travels — its end of the move
  /// (γ per byte) and, where the node computes every such task it gets (it forwards none),
  /// all the task's CPU beyond its kernel (reception, the whole-task cost's overhead): on a
  /// real node that CPU is spent receiving, beside the task before. Empty or 0: none.
  std::vector<double> receive_work{};
  /// Per application: flop each task of it sent to this node costs the sender's CPU pool
  /// while it travels: the sender's half of a move between two hosts. Empty or 0: none.
  std::vector<double> send_work{};
};

/// CPUs several simulated nodes share (a calibrated host, or one CPU set of it:
/// docs/simulation.md "Calibration"): a SimGrid host of its own, reached by no link, on
/// which those nodes' executions run — and the CPU their transfers cost them
/// (SimNode::receive_work, send_work) — so that they share its cores as the LP's host row
/// and CPU-set rows say (each execution thread at most one full CPU).
struct CpuPool {
  std::string name;
  std::uint32_t cores = 1;   ///< SimGrid cores: ceil(CPUs), at least 1.
  /// flop/s per core: reference_speed (one full CPU) × CPUs / cores, so that the pool's
  /// cores together give exactly its CPUs (a quota of 0.05 CPU: one core at 5 %).
  double speed = reference_speed;
  /// `[[event]]` changes of its nodes' speed or quota, scaled to the pool: (seconds, flop/s
  /// per core), sorted by time.
  std::vector<std::pair<double, double>> speed_changes;
};

struct SimPlatform {
  model::Experiment experiment;   ///< Apps and run settings, as loaded (possibly overridden).
  lp::PlatformModel model;        ///< The LP's view of the same platform.
  std::vector<SimNode> nodes;     ///< Same order as experiment.nodes (root first).
  std::vector<CpuPool> cpu_pools; ///< Calibrated hosts' CPUs (SimNode::cpu_pool); may be empty.
  bool calibrated = false;        ///< Durations/bandwidths come from a calibration file.
  /// Per application of `experiment`: bytes a task's result carries up beyond the control
  /// message, its output's calibrated size (lp::PlatformModel::App::result_bytes).
  std::vector<double> result_bytes{};
};

/// Applications from several masters (papers/bertin2008 §2.2, `origin` in `[[app]]`): the
/// applications whose master is node `origin`, and the platform as they see it — the
/// tree re-rooted at `origin` (each node's parent is its neighbour towards the origin,
/// its children every other neighbour). The simulation runs one node driver per node and
/// per such tree (docs/simulation.md, "Applications from several masters"): tasks of
/// these applications go from the origin down this tree, requests and results up it.
struct OriginTree {
  std::size_t origin = 0;         ///< Index of the origin in the physical platform.
  std::vector<std::size_t> apps;  ///< The applications' indices in the experiment, in order.
  /// The re-rooted view: the same nodes in the same order (node u here is host u), each
  /// node's `parent`, `children`, `bandwidth`, `latency` and `bandwidth_changes` those of
  /// the re-rooted tree (a link crossed towards the physical parent keeps its bandwidth:
  /// SimGrid's split-duplex links give each direction the link's capacity, as the model's
  /// flows_up rows do); `work` and `task_seconds` and the experiment's `apps` only this
  /// tree's applications, their origin cleared (the view's root is their origin). `model`
  /// is left empty: the LP sees the physical platform.
  SimPlatform view;
};

/// One OriginTree per distinct origin, in the order of each origin's first application
/// (a single tree equal to `platform` when every application comes from the root).
std::vector<OriginTree> origin_trees(const SimPlatform& platform);

/// Builds the simulated platform. Throws std::invalid_argument (from the LP model) for a
/// computing node without `speed` and without calibrated durations, an application that no
/// node can run, or non-positive values.
SimPlatform make_sim_platform(const model::Experiment& experiment,
                              const model::Calibration* calibration = nullptr);

}  // namespace treefarm::sim
