#pragma once
/// @file Policy.hpp
/// A scheduling policy: the "select" of papers/beaumont2006 §4, Figure 1, line 5 — which
/// requester gets which task — plus, at the root, which application the next task drawn
/// from the bag belongs to. The core (NodeScheduler) owns all state; a policy reads it
/// and keeps only its own bookkeeping, so every policy of the paper plugs into the same
/// core.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/LoadBalancer1D.hpp"
#include "runtime/core/NodeState.hpp"

namespace treefarm::core {

/// A policy's settings from the experiment file's `[policy.NAME]` table: key -> value.
using PolicyOptions = std::map<std::string, double>;

class Policy {
 public:
  virtual ~Policy() = default;

  /// The policy's name as given in experiment files ("fcfs", ...), from the registry
  /// (Policy.cpp), the one list of policy names.
  std::string_view name() const;

  /// Called once when the node scheduler is created.
  virtual void start(const NodeState& state);

  /// Root only: the application of the next task to draw from the bag, or nullopt to
  /// draw nothing now. Default: the 1D load-balancing mechanism (§4.1) with frequencies
  /// given by the weights w(k), among applications with tasks left (§4.2).
  virtual std::optional<AppId> next_source_app(const NodeState& state);
  /// Root: how many tasks the stock drawn from the bag holds (at least B). Default: B.
  virtual std::size_t root_stock(const NodeState& state) const;
  /// Root, with requirements (NodeScheduler): an application with tasks left that
  /// `allowed` accepts, by the weights' mix (papers/beaumont2006 §4: the 1D rule).
  std::optional<AppId> draw_fitting(const NodeState& state, const std::function<bool(AppId)>& allowed);

  /// Which pending request gets which buffered task now, or nullopt to wait.
  /// Only requests for which state.can_serve() holds may be chosen.
  virtual std::optional<Assignment> select(const NodeState& state) = 0;

  /// Told after the core applied an event (learn bandwidths, durations, ...).
  virtual void observe(const NodeState& state, const Event& event);

  /// Told after an assignment was carried out: `to` got `task`.
  virtual void assigned(const NodeState& state, const Target& to, TaskRef task);

  /// Under NodeConfig::one_port: true if the policy sends one task at a time per
  /// application (and per child) instead of one at a time in all ("pbc", §4.4).
  virtual bool one_port_per_application() const { return false; }

  /// Checks an event::PolicyMessage before the core accepts it (it is untrusted input):
  /// an error text rejects it as a ProtocolError. Default: accepted (and ignored).
  virtual std::optional<std::string> check_message(const NodeState& state, const event::PolicyMessage& message) const;

  /// Appends the policy's outgoing action::SendPolicyMessage (after every handle() and
  /// start()). Default: none.
  virtual void take_messages(const NodeState& state, std::vector<Action>& out);

  /// A re-plan (event::PlanChanged, docs/live-model.md): rates to follow from now on.
  /// Default: ignored (a policy that does not follow a plan).
  virtual void replan(const NodeState& state, NodePlan plan);

  /// When the policy wants a Tick; nullopt: never. Default: never.
  virtual std::optional<Seconds> next_deadline(const NodeState& state) const;

  /// True if the policy follows a plan computed from a calibration (the tools calibrate
  /// first when none is given). Default: false (the policy learns what it needs).
  virtual bool needs_calibration() const { return false; }

  /// True if the policy follows the node's plan (NodeConfig::plan, then each re-plan's):
  /// its rates are what the requesters get, so the core may reason with them (the
  /// end-of-bag take-back, docs/live-model.md). Default: false (a policy that makes its
  /// own rates, or none).
  virtual bool follows_plan() const { return false; }

  /// Choices the policy made outside its own rule because its rule had none feasible
  /// (the lp policy's FCFS fallbacks), since start. Default: 0.
  virtual std::uint64_t fallbacks() const { return 0; }

  /// The fair throughput (tasks/s per unit of weight) the policy's own last plan expects
  /// of the whole tree, at the root of a policy that computes one (DATA-CENTRIC: the
  /// "expected theoretical fair throughput" of beaumont2006 §5.2.1, from the expected
  /// α_u and sent_u→v it computed in the run). Default: none.
  virtual std::optional<double> planned_fair_throughput() const { return std::nullopt; }

 protected:
  LoadBalancer1D root_mix_;  ///< Used by the default next_source_app.
 private:
  LoadBalancer1D fitting_mix_;  ///< draw_fitting's weights' mix (its own counts).
};

/// Names accepted by make_policy, in the order of the paper: the one list of policy names
/// (the experiment parser and the tools use it).
std::vector<std::string> policy_names();

/// True if `name` is one of policy_names().
bool is_policy_name(std::string_view name);

/// True if the policy called `name` needs a calibration (Policy::needs_calibration);
/// throws std::invalid_argument for an unknown name.
bool policy_needs_calibration(std::string_view name);

/// Creates a policy by name with its `[policy.NAME]` options; throws
/// std::invalid_argument for an unknown name (listing the known ones), an unknown option
/// or a value out of range (naming it). Policies without options accept none.
std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options = {});

/// The option keys `[policy.NAME]` accepts (empty for a policy without options).
std::vector<std::string> policy_option_keys(std::string_view name);

}  // namespace treefarm::core
