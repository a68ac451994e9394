#pragma once
/// @file TreeEvaluator.hpp
/// The objective of the planner: the steady-state LP's max-min fair throughput
/// (papers/beaumont2006 §3.1, runtime/lp/SteadyState.hpp) of a candidate tree over a
/// machine set. Caches values by tree and counts LP solves (the planning budget).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/plan/MachineSet.hpp"
#include "runtime/plan/PlanTree.hpp"

namespace treefarm::lp {
class LpSolver;
}

namespace treefarm::plan {

class TreeEvaluator {
 public:
  /// `apps` must have work (flop > 0: matmul, matadd or abstract kernels); `run` gives
  /// the communication model and max_out_bandwidth. Throws std::invalid_argument for an
  /// application with no work or one that no machine can run (cores_per_task).
  TreeEvaluator(MachineSet machines, std::vector<model::AppSpec> apps, model::RunSpec run);
  ~TreeEvaluator();
  TreeEvaluator(const TreeEvaluator&) = delete;
  TreeEvaluator& operator=(const TreeEvaluator&) = delete;

  /// The LP's view of `tree`: its used machines breadth-first (node i is machine
  /// order[i]), link bandwidth of a node = MachineSet::bandwidth(parent, node) bytes/s,
  /// task seconds = flop / (cores_per_task · speed).
  lp::PlatformModel model(const PlanTree& tree, std::vector<std::size_t>* order = nullptr) const;
  /// Full LP solution of `tree` (one solve, not cached).
  lp::Solution solve(const PlanTree& tree) const;
  /// Fair throughput of `tree` (tasks/s per unit of weight), cached by tree.
  double fair_throughput(const PlanTree& tree);
  /// Same without the cache (exhaustive enumeration never meets a tree twice).
  double fair_throughput_uncached(const PlanTree& tree);

  /// An upper bound on fair_throughput(tree) that costs no LP solve: min over k of
  /// X_k(tree)/w(k), X_k the throughput of application k alone on the tree (tasks/s). X_k
  /// is computed bottom-up, bandwidth-centric (papers/beaumont2006 §4: in the one-port
  /// model a node serves its children by decreasing link bandwidth, a fractional knapsack;
  /// in the multi-port model every link on its own, capped by max_out_bandwidth). It
  /// relaxes the LP (the apps do not share cores or ports, whole-task packing is ignored),
  /// so it is never below the LP optimum; exhaustive() skips trees whose bound cannot beat
  /// the best tree found.
  double upper_bound(const PlanTree& tree) const;
  /// The same with `order` = tree.breadth_first() already at hand (exhaustive() builds each
  /// tree breadth-first). Uses scratch buffers of the evaluator: not for concurrent calls.
  double upper_bound(const PlanTree& tree, const std::vector<std::size_t>& order) const;

  /// LP solves done so far.
  std::size_t evaluations() const { return evaluations_; }
  /// fair_throughput() calls answered from the cache.
  std::size_t cache_hits() const { return cache_hits_; }
  const MachineSet& machines() const { return machines_; }
  const std::vector<model::AppSpec>& apps() const { return apps_; }
  const model::RunSpec& run() const { return run_; }
  /// seconds of one task of app k on machine i (+inf if it cannot run it).
  double task_seconds(std::size_t machine, std::size_t app) const { return task_seconds_[machine][app]; }

 private:
  struct Hash {
    std::size_t operator()(const std::vector<int>& v) const noexcept;
  };
  MachineSet machines_;
  std::vector<model::AppSpec> apps_;
  model::RunSpec run_;
  std::vector<std::vector<double>> task_seconds_;
  std::unique_ptr<lp::LpSolver> solver_;
  std::unordered_map<std::vector<int>, double, Hash> cache_;
  std::size_t evaluations_ = 0;
  std::size_t cache_hits_ = 0;
  // upper_bound()'s scratch (no allocation per tree: the exhaustive search bounds millions).
  mutable std::vector<double> absorb_;
  mutable std::vector<std::pair<double, double>> kids_;
};

}  // namespace treefarm::plan
