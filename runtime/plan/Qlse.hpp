#pragma once
/// @file Qlse.hpp
/// QLSE, QoS-constrained list scheduling (papers/baraglia slides 5–12), and the greedy
/// best-fit baseline of slide 13, adapted to mapping a task-farm tree onto the machines
/// of several LANs. docs/planning.md ("QLSE") states every choice the slides leave open.
///
/// The graph to map (the slides' TIG) is a tree of n worker tasks built from the QoS:
/// with required rates ρ(k) tasks/s, the computational request is D = Σ_k ρ(k)·c(k)
/// flop/s and the data request B = Σ_k ρ(k)·b(k) bytes/s. n is the smallest count such
/// that the n-th most powerful machine has at least D/n flop/s; the tasks form a complete
/// `fan_out`-ary tree, every task has MCR = D/n flop/s and the edge into task i has
/// MBR = B·|subtree(i)|/n bytes/s (the data its subtree consumes). One task per machine.

#include <cstddef>
#include <vector>

#include "runtime/model/Application.hpp"
#include "runtime/plan/MachineSet.hpp"
#include "runtime/plan/PlanTree.hpp"

namespace treefarm::plan {

struct QlseOptions {
  std::size_t fan_out = 4;  ///< Children per task in the task tree (>= 1).
  /// The "percentage" of slides 7 and 10: share of the neighbours' MCR (tasks) or
  /// computational power (LANs) added to a priority.
  double neighbour_share = 0.5;
};

/// The task graph built from a QoS request.
struct TaskGraph {
  std::vector<int> parent;        ///< Task tree: parent task, -1 for task 0.
  double mcr = 0.0;               ///< flop/s, Minimal Computational Request of every task.
  std::vector<double> mbr;        ///< bytes/s, Minimal Bandwidth Request of the edge into task i (0 for task 0).
  double computational_request = 0.0;  ///< D, flop/s.
  double bandwidth_request = 0.0;      ///< B, bytes/s.
};

/// Builds the task graph for rates ρ(k) (tasks/s, one per application). Returns an empty
/// graph (no task) when no count n of machines can carry D.
TaskGraph build_task_graph(const MachineSet& machines, const std::vector<model::AppSpec>& apps,
                           const std::vector<double>& rates, const QlseOptions& options);

/// Outcome of one mapping.
struct Mapping {
  bool found = false;        ///< Every task placed with its QoS (and, greedy, no bandwidth exceeded).
  PlanTree tree;             ///< Machines of the placed tasks (valid only when found).
  std::vector<std::size_t> host;  ///< host[task] = machine.
  TaskGraph graph;
  int threshold = -1;        ///< QLSE: index of the bandwidth quartile whose clustering succeeded.
  double lan_hit_ratio = 0.0;          ///< Slide 14: MBR inside one LAN / all MBR.
  double computational_ratio = 0.0;    ///< Slide 15: mean host power / MCR.
};

/// QLSE (slide 12): task priorities and the task hierarchical graph (slides 7–8), the
/// grid clustered by each quartile of the inter-LAN bandwidths in decreasing order
/// (slide 9), clusters ranked by the sum of their LAN priorities (slide 10), list
/// scheduling onto the first suitable LAN (slide 11) with residual power and bandwidths
/// decreased as tasks are placed; the next cluster, then the next quartile, when a task
/// does not fit.
Mapping qlse_map(const MachineSet& machines, const std::vector<model::AppSpec>& apps,
                 const std::vector<double>& rates, const QlseOptions& options);

/// Greedy best fit (slide 13): tasks by MCR, LANs by aggregate power, hosts by power;
/// every task on the free host whose power exceeds its MCR by the least. Bandwidth is
/// checked only afterwards: a mapping that exceeds a LAN's or an inter-LAN link's
/// bandwidth is a QoS failure (found = false, host and tree still filled).
Mapping greedy_map(const MachineSet& machines, const std::vector<model::AppSpec>& apps,
                   const std::vector<double>& rates, const QlseOptions& options);

}  // namespace treefarm::plan
