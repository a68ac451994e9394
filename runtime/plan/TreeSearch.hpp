#pragma once
/// @file TreeSearch.hpp
/// Searching the space of trees with the LP as objective: the neighbourhood (re-parent a
/// machine, swap two machines), RMSHC (random multi-start steepest hill climbing,
/// papers/wang2006 §3) and exhaustive enumeration of every rooted tree (reference optimum
/// for small sets). docs/planning.md describes the adaptation.

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/plan/PlanTree.hpp"
#include "runtime/plan/TreeEvaluator.hpp"

namespace treefarm::plan {

/// What a search found.
struct SearchResult {
  PlanTree tree;
  double fair_throughput = 0.0;    ///< tasks/s per unit of weight (LP optimum of `tree`).
  std::size_t evaluations = 0;     ///< LP solves spent.
  std::size_t trees_seen = 0;      ///< Trees evaluated (cache hits included).
  std::size_t trees_pruned = 0;    ///< exhaustive: trees skipped, their upper bound below the best.
  std::size_t starts = 0;          ///< RMSHC: start points climbed from.
  std::size_t local_optima = 0;    ///< RMSHC: climbs that ended in a local optimum (not the budget).
  double seconds = 0.0;            ///< Wall time of the search.
  bool budget_exhausted = false;   ///< Stopped by max_evaluations or max_seconds.
};

struct RmshcOptions {
  std::size_t starts = 8;                 ///< x of wang2006: start points.
  std::size_t max_evaluations = 50'000;   ///< Budget in LP solves (0 = none).
  double max_seconds = 30.0;              ///< Budget in seconds (0 = none).
  /// Neighbours evaluated per climbing step: the whole neighbourhood when it has at most
  /// this many trees, else this many random moves (sampled steepest ascent; the large
  /// neighbourhood is never built).
  std::size_t max_neighbours = 256;
  /// Sampled steps: a climb stops after this many samples in a row without a better tree.
  std::size_t sample_patience = 3;
  std::uint64_t seed = 1;
};

/// Every tree one move away from `tree` (all machines used): re-parent a non-root machine
/// under any machine outside its subtree, or swap the places of two machines (the master
/// included).
std::vector<PlanTree> neighbours(const PlanTree& tree);
/// One uniformly chosen move (re-parent or swap, each with probability 1/2).
PlanTree random_neighbour(const PlanTree& tree, std::mt19937_64& rng);

/// A sensible first tree: the master on the most powerful machine of the LAN with the
/// most computing power; in every other LAN its most powerful machine (the gateway) is a
/// child of the master and the LAN's other machines are children of their gateway; the
/// master's LAN-mates are children of the master.
PlanTree lan_gateway_tree(const MachineSet& machines);

/// RMSHC, papers/wang2006 §3 over trees: start point k (k = 0..x-1) is reached from
/// `initial` by 2^k random moves (random walks of exponentially growing length spread the
/// starts over many basins); from each start, steepest hill climbing over neighbours()
/// until no neighbour is better; the best local optimum wins. `initial` is evaluated too.
SearchResult rmshc(TreeEvaluator& evaluator, const PlanTree& initial, const RmshcOptions& options);

/// Largest machine count exhaustive() accepts (8^7 = 2,097,152 rooted trees).
constexpr std::size_t exhaustive_max_machines = 8;

/// Every rooted labelled tree on all machines (n^(n-1): Prüfer sequences × roots),
/// the best by fair throughput. Exact branch-free pruning: the LAN-gateway tree is solved
/// first, then a tree is solved only when TreeEvaluator::upper_bound() (no LP) could beat
/// the best so far (`prune` = false solves every tree). On ties the first tree met wins.
/// Throws std::invalid_argument above exhaustive_max_machines.
SearchResult exhaustive(TreeEvaluator& evaluator, bool prune = true);

}  // namespace treefarm::plan
