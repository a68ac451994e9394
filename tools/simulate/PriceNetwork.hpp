#pragma once
/// @file PriceNetwork.hpp
/// The agents of the "price" policy (papers/bertin2008 §4, core::PricePolicy) of every
/// node of a platform, connected in memory: one core::NodeScheduler per node, the policy
/// messages (event::PolicyMessage) of each node delivered to its parent and children.
/// No task moves: this isolates the convergence of the rates and prices (the paper's §5,
/// whose prototype also only computed rates). One round: every node handles a Tick at
/// time round·period (one update of Algorithms 3–4 with the latest messages it holds),
/// then every message sent in the round is delivered. A value therefore needs one round
/// per hop (asynchronous updates between neighbours, not a synchronous sweep of the tree).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/core/policies/PricePolicy.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::simulate {

class PriceNetwork {
 public:
  /// The nodes of `model` (node 0 the root), with the flop of each application from
  /// `experiment` (for the per-flop initial prices of Table 1) and the root's
  /// `[policy.price]` options. Throws std::invalid_argument for bad options.
  PriceNetwork(const lp::PlatformModel& model, const model::Experiment& experiment, const core::PolicyOptions& options);

  /// One round (see above).
  void step();
  /// Deliver in the same round what a delivery makes a node send (prices reach the leaves
  /// in one round, σ climbs one level per round): closer to the paper's synchronous
  /// prototype. Default: off (one hop per round).
  void set_cascade(bool on) { cascade_ = on; }
  /// Rounds made so far.
  std::uint64_t rounds() const { return rounds_; }

  /// ϱ_k of the allocation in force: Σ over the nodes of their ϱ_{i,k}, tasks/s.
  std::vector<double> rates() const;
  /// ϱ_k as the root knows it (σ_k of its subtree, eq. 13), tasks/s.
  std::vector<double> root_rates() const;
  /// Largest usage/capacity − 1 over every executor and link (port) under the allocation
  /// in force: <= 0 when it is feasible.
  double overload() const;
  /// Names of the prices, in the order of prices(): "lambda:NODE" per computing node,
  /// then "mu:CHILD" per link (multi-port) or "port:NODE" per parent (one-port), then
  /// "mu_up:NODE" per link that applications from a master below NODE cross upwards.
  std::vector<std::string> price_names() const;
  std::vector<double> prices() const;

  const core::PricePolicy& policy(std::size_t node) const;

 private:
  struct Delivery {
    std::size_t to = 0;
    core::event::PolicyMessage message;
  };
  void collect(std::size_t from, std::vector<core::Action>& actions, std::vector<Delivery>& mail) const;

  bool sends_up(std::size_t u) const;     ///< some application flows up from u to its parent
  bool has_up_link(std::size_t u) const;  ///< multi-port and sends_up(u)

  const lp::PlatformModel& model_;
  bool routed_ = false;  ///< some application's origin is not the root (bertin2008 §2.2)
  std::vector<Delivery> carry_;  ///< Sent while handling deliveries: delivered next round.
  std::vector<std::unique_ptr<core::NodeScheduler>> nodes_;
  std::vector<std::vector<std::size_t>> children_;
  std::uint64_t rounds_ = 0;
  double period_ = 0.1;
  bool cascade_ = false;
};

}  // namespace treefarm::simulate
