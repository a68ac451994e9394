#pragma once
/// @file RatePlanPolicy.hpp
/// What the policies that follow rates share: "lp" (rates from the LP, beaumont2006 §4.1),
/// "data-centric" (rates from trading between neighbours, §4.5) and "price" (rates from
/// the price agents, bertin2008 Algorithms 3 and 4). Each node follows its plan's tasks/s
/// per (requester, application) with the 1D mechanism (PlanFollower); the root draws on
/// demand what the plan gives the requester waiting (PlanFollower::next_draw), and by the
/// ratio of the plan's totals (a second 1D mechanism, the plan mix) only what unplanned
/// requests need. How the rates are made, and what a node does when it has none or no
/// planned choice is feasible, is each policy's own.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "runtime/core/ByteCodec.hpp"
#include "runtime/core/LoadBalancer1D.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/core/policies/PlanFollower.hpp"

namespace treefarm::core {

class RatePlanPolicy : public Policy {
 public:
  /// Root: with a plan, the application PlanFollower::next_draw names for a waiting
  /// requester (nothing while a planned choice can be served from the buffer); for
  /// requests no planned choice serves, as many tasks as the buffer lacks, by the plan
  /// mix's next application with tasks left (once refresh_mix() gave it one frequency per
  /// application), else the weights (Policy's default).
  std::optional<AppId> next_source_app(const NodeState& state) final;
  /// The planned choice (PlanFollower), else unplanned_select().
  std::optional<Assignment> select(const NodeState& state) final;
  /// Counts the choice in the plan (whatever made it) and the executor's running tasks.
  void assigned(const NodeState& state, const Target& to, TaskRef task) final;

  const PlanFollower& follower() const { return follower_; }

  /// The head of a message of such a policy: its kind (1 or 2) and the number of
  /// applications, which must be this run's `apps`. Throws DecodeError naming `policy`.
  static std::uint8_t read_head(ByteReader& reader, std::size_t apps, std::string_view policy);
  /// A rate, price or count that cannot be negative. Throws DecodeError naming `what`.
  static double read_non_negative(ByteReader& reader, std::string_view policy, std::string_view what);

 protected:
  /// Before each draw at the root: bring plan_mix_ up to date (default: nothing).
  virtual void refresh_mix(const NodeState& state);
  /// No plan yet, or no planned choice feasible now.
  virtual std::optional<Assignment> unplanned_select(const NodeState& state) = 0;
  /// A local task ended (call from observe()): the executor's running count.
  void count_finished(const Event& event);
  /// check_message for a policy with one message kind per direction: `is_down(payload)`
  /// decodes (throwing DecodeError if malformed) and tells whether it is the kind a parent
  /// sends. `up` and `down` name the kinds in the refusal ("a price report (up)").
  std::optional<std::string> check_direction(const event::PolicyMessage& message,
                                             const std::function<bool(const std::vector<std::uint8_t>&)>& is_down,
                                             std::string_view up, std::string_view down) const;

  PlanFollower follower_;
  LoadBalancer1D plan_mix_;
  std::uint32_t local_running_ = 0;  ///< tasks given to the local executor, not yet finished
};

}  // namespace treefarm::core
