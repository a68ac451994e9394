#pragma once
/// @file DataCentricPlanner.hpp
/// The rate computation of DATA-CENTRIC scheduling (papers/beaumont2006 §4.5), on a view
/// of a (sub)tree: start from the bandwidth-centric solution of the application with the
/// highest communication-to-computation ratio, then apply, in this order of precedence,
/// communication trading, gap filling, bus de-saturation and task trading on the root,
/// until (max_k α(k)/w(k) − min_k α(k)/w(k)) / min_k α(k)/w(k) < 0.05 (or no operation
/// applies). A = the application of highest α(k)/w(k), B = the one of lowest.
///
/// Model (§2, with our per-node, per-kernel rates): node u computes application k alone
/// at rate(k) tasks/s, so its CPU occupation is Σ_k α_u(k)/rate_u(k) <= 1; a task of k is
/// bytes(k) long and the link to u carries bandwidth_u bytes/s; a node's out-port is
/// occupied Σ_children Σ_k sent(k)·bytes(k)/b (one-port) or each link by its own share
/// (multi-port). Path quantities (the minimum residual bandwidth from the root to u) are
/// propagated down the tree from the root, one node at a time, as the paper suggests.
/// Choices where the paper is silent are listed in docs/policies.md.

#include <cstdint>
#include <string>
#include <vector>

namespace treefarm::core {

/// One node of the view. nodes[0] is the root of the view; a parent comes before its
/// children.
struct ViewNode {
  std::string name;
  int parent = -1;                  ///< Index in the view; -1 for nodes[0].
  double bandwidth = 0;             ///< bytes/s of the link from the parent (0: unknown).
  std::vector<double> rate;         ///< tasks/s per application on this node (0: cannot).
};

struct PlannerApp {
  double weight = 1;                ///< w(k) > 0
  double bytes = 0;                 ///< b(k); 0: communication is free
  double flops = 0;                 ///< c(k); 0: unknown (CCR falls back to bytes)
};

struct PlannerResult {
  std::vector<std::vector<double>> alpha;  ///< [node][app] tasks/s computed there
  std::vector<std::vector<double>> sent;   ///< [node][app] tasks/s from its parent to it
  std::vector<double> totals;              ///< α(k)
  double imbalance = 0;                    ///< (max − min)/min of α(k)/w(k); inf if min = 0
  bool balanced = false;                   ///< imbalance < tolerance
  std::uint32_t iterations = 0;
  /// Operations applied: communication trading, gap filling, bus de-saturation, task
  /// trading on the root.
  std::uint32_t trades = 0, gap_fills = 0, desaturations = 0, root_trades = 0;
};

class DataCentricPlanner {
 public:
  static constexpr double tolerance = 0.05;
  static constexpr std::uint32_t max_iterations = 20000;

  /// Throws std::invalid_argument for an inconsistent view (parent after child, rates of
  /// the wrong size, no app).
  static PlannerResult plan(const std::vector<ViewNode>& view, const std::vector<PlannerApp>& apps, bool one_port);

  /// Applications by non-increasing CCR b(k)/c(k) (ties: lower index first).
  static std::vector<std::size_t> by_ccr(const std::vector<PlannerApp>& apps);
};

}  // namespace treefarm::core
