#pragma once
/// @file HostObservation.hpp
/// The a-posteriori model of a machine several nodes share (every node of `treefarm run`
/// on one machine; docs/live-model.md, "The a-posteriori prediction"): what the run
/// really had over its steady window [εT, (1−ε)T] (papers/beaumont2006 §5.1.1) — the CPU
/// time the machine left to the tree, each node's process CPU time, the tasks each node
/// completed — turned into the LP's host model (docs/lp.md, "Hosts").

#include <map>
#include <string>

#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::lp {

/// What one shared host gave the tree over the steady window.
struct HostObservation {
  int host = -1;                      ///< index in PlatformModel::hosts
  double window_seconds = 0;          ///< (1−2ε)T, seconds
  /// CPU seconds the tree could have used in the window: the machine's idle time plus the
  /// tree's own CPU time (what other work and steal took is not available).
  double available_cpu_seconds = 0;
  /// Per node name: CPU seconds (user + system, every thread) its process used in the window.
  std::map<std::string, double> node_cpu_seconds;
  /// Per node name, per application name: tasks it completed in the window.
  std::map<std::string, std::map<std::string, double>> tasks;
  /// Per node name, per application name: CPU seconds its kernels of that application
  /// used in the window (the threads that ran them, without their waits for a CPU). A
  /// node without this figure for every application it ran: its process's CPU stands
  /// for its kernels.
  std::map<std::string, std::map<std::string, double>> kernel_cpu_seconds = {};
};

/// What observed_host_model() did (results.json "a_posteriori").
struct HostObservationSummary {
  double available_cores = 0;   ///< the host's cores in the a-posteriori model (× busy_share)
  double busy_share = 1;        ///< the host's calibrated busy share the available CPUs were scaled by
  double tree_cpu_seconds = 0;  ///< Σ node_cpu_seconds
  double cost_factor = 0;       ///< f: the host's whole-task and per-byte CPU costs × f
  std::map<std::string, double> kernel_factor;  ///< per computing node: g_u, its kernels' CPU / their calibrated sum
};

/// `model` as host `obs.host` really ran (docs/live-model.md):
/// - the host's cores := min(its cores, available_cpu_seconds / window_seconds) × its
///   busy_share (the share of that CPU a saturated tree uses: the idle rest is in the
///   whole-task costs C(k), not in the tree's CPU that f is fitted to);
/// - each node of the host that completed tasks, with its kernels' CPU for every
///   application it ran: t_u(k)·share_u·cpt(k) := K_u(k) / n_u(k), the CPU a kernel of k
///   used there; its node row charges only that (the node's cores run its kernels; its
///   process's other threads — the transport's I/O, its loop, the copies — run beside
///   them on the host's other CPUs and are the host row's), and so does its kernel term
///   in the host row;
/// - a node without that figure: its task seconds such that its tasks'
///   CPU, Σ_k n_u(k)·t_u(k)·share_u·cpt(k), is its process's CPU seconds, split over the
///   applications in the proportion of the host's whole-task costs C(k) when the host has
///   one for every application it ran, else of its own task seconds (all × g_u = its CPU
///   seconds / their calibrated sum);
/// - a node of the host that completed nothing: its calibrated task seconds × the factor
///   the host's observed nodes showed (per application, their CPU over their calibrated
///   kernels; where no node ran the application, over all applications);
/// - the host's whole-task costs (task_cpu_seconds), its CPU cost per byte moved,
///   generated and received × f, with f ≥ 0 such that the host's CPU charged for the tasks
///   completed, Σ_{u,k} n_u(k)·own_host_cpu_per_task(u, k), equals the tree's CPU seconds
///   in the window (found by bisection: the charge is non-decreasing in f).
/// Throws std::invalid_argument naming what is missing: a host index out of range, a
/// window not positive, a node of the host without CPU figure, a node or application
/// unknown, tasks completed by a node of another host.
PlatformModel observed_host_model(PlatformModel model, const HostObservation& obs,
                                  HostObservationSummary* summary = nullptr);

}  // namespace treefarm::lp
