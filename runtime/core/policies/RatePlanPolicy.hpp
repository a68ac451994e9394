#pragma once
/// @file RatePlanPolicy.hpp
/// What the policies that follow rates share: "lp" (rates from the LP, beaumont2006 §4.1),
/// "data-centric" (rates from trading between neighbours, §4.5) and "price" (rates from
/// the price agents, bertin2008 Algorithms 3 and 4). Each node follows its plan's tasks/s
/// per (requester, application) with the 1D mechanism (PlanFollower); the root draws task
/// types in the ratio of the plan's totals (a second 1D mechanism, the plan mix), or, for
/// a policy that draws on demand ("price"), what the plan gives the requester waiting
/// (PlanFollower::next_draw). How the rates are made, and what a node does when it has
/// none or no planned choice is feasible, is each policy's own.

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
  /// `draw_on_demand`: how the root draws (next_source_app). On demand suits rates that
  /// follow the platform as it runs (price: its agents re-price what they see); a stock in
  /// the plan's ratio suits a plan made beforehand (lp, data-centric), whose errors the
  /// unplanned requesters then absorb (docs/policies.md, `lp`, "Root").
  explicit RatePlanPolicy(bool draw_on_demand = false) : draw_on_demand_(draw_on_demand) {}

  /// Root: the plan mix's next application with tasks left (once refresh_mix() gave it
  /// one frequency per application), else the weights (Policy's default). Drawing on
  /// demand, with a plan: the application PlanFollower::next_draw names for a waiting
  /// requester (nothing while a planned choice can be served from the buffer), and for
  /// requests no planned choice serves only as many tasks as the buffer lacks.
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

 private:
  bool draw_on_demand_ = false;
};

}  // namespace treefarm::core
