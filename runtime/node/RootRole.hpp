#pragma once
/// @file RootRole.hpp
/// What only the root of a tree does, behind one object a worker does not have: it holds
/// the run (its Welcome, applications and task inputs), waits for the nodes to join before
/// dispatching, records results through the caller's hooks (checks, outputs, forgers
/// convicted), and hears the tree's measurements, joins and states.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/Events.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/Payload.hpp"

namespace treefarm::node {

/// The root's verdict on a child's result before it is recorded.
struct ResultVerdict {
  /// The result is proven wrong: it is not recorded, its task is done again, and the root
  /// finds the forger below the child it came through (msg::Blame; RootSetup::convict).
  bool forged = false;
};

/// What only the root has: the run configuration and the bag of tasks.
struct RootSetup {
  net::msg::Welcome welcome;        ///< Sent to every child; also configures the root.
  /// The root's `[policy.NAME]` options for welcome.policy (the other nodes get what they
  /// need from their parent's policy messages: "price" sends its parameters down).
  core::PolicyOptions policy_options;
  std::vector<model::AppSpec> apps;
  /// The input of a task (shared, never copied).
  std::function<Payload(core::TaskId)> payload;
  /// Called for each result a child sends the root, before the core sees it; `via` is the
  /// name of the child it came through (the one held responsible). Unset = accept all.
  std::function<ResultVerdict(const net::msg::Result&, const std::string& via)> check_result;
  /// A forger was found after a forged result (docs/security.md, "Blame below an inner
  /// node"): `culprit` is the node convicted (now dropped by its parent, its name refused
  /// there and here), `via` the root's child its results came through. `whole_child`: the
  /// root holds `via` itself responsible (it was the forger, did not answer the Blame in
  /// time, or answered outside its subtree) and has dropped it — every result that came
  /// through `via` is to be revoked; otherwise only those computed by `culprit` and the
  /// nodes below it. Returns the recorded tasks to do again. Unset: nothing is revoked.
  std::function<std::vector<core::TaskRef>(const std::string& culprit, const std::string& via, bool whole_child)> convict;
  /// A failed result (not a duplicate) reached the root: true = it is not recorded and its
  /// task is done again (an application's max_retries). Unset: never.
  std::function<bool(const net::msg::Result&)> retry;
  /// A result reached the root; `duplicate` if the task was already recorded.
  std::function<void(const net::msg::Result&, bool duplicate, double now)> on_result;
  /// Output files (docs/command-tasks.md): a child's result carries `output` (exactly
  /// Result::output_bytes bytes, checked by the driver). False: the output does not give
  /// the result's checksum — the result is proven wrong, as a forged one (check_result).
  /// Called before check_result. Unset: accepted.
  std::function<bool(const net::msg::Result&, const Payload& output)> check_output;
  /// A node's state (its own, every heartbeat interval, and each node's below it as its
  /// heartbeats bring them up; `treefarm status`).
  std::function<void(const net::msg::NodeLoad&)> on_load;
  /// The output of a result recorded (not a duplicate), called just before on_result.
  std::function<void(const net::msg::Result&, const Payload& output)> on_output;
  /// A node joined somewhere in the tree.
  std::function<void(const net::msg::NodeJoined&)> on_joined;
  /// Called about every `tick_interval` seconds (progress lines).
  std::function<void(double now)> on_tick;
  double tick_interval = 1.0;
  /// Dispatching starts when this many nodes (besides the root) have joined, or after
  /// `wait_timeout` seconds, whichever comes first.
  std::size_t wait_for_nodes = 0;
  double wait_timeout = 60;
  /// Called once when dispatching starts: the time origin of the run.
  std::function<void(double now)> on_start;
  /// Calibration runs: a measurement reached the root (from anywhere in the tree).
  std::function<void(const net::msg::Measure&)> on_measure;
  /// The tree's online estimates (docs/live-model.md), about every heartbeat (or
  /// estimate) interval: the root's own and those its children last reported. Returns the
  /// hints of a new plan (each node's alpha and received, as in the Welcome) when the
  /// caller re-planned, else nullopt. Unset: estimates are not collected.
  std::function<std::optional<std::vector<net::msg::NodeHint>>(const std::vector<net::msg::Estimate>&, double now)>
      on_estimates;
  /// Resumed runs (master --resume): per application, tasks already completed in an
  /// earlier run (core::NodeConfig::done_before; empty = none).
  std::vector<std::vector<bool>> done_before;
};

class RootRole {
 public:
  explicit RootRole(RootSetup setup) : s_(std::move(setup)) {}

  const RootSetup& setup() const { return s_; }
  Payload payload(core::TaskId id) const { return s_.payload(id); }

  // ---- dispatching --------------------------------------------------------------------
  bool dispatching() const { return dispatching_; }
  /// Calibration runs dispatch nothing: events go straight to the core.
  void calibrating() { dispatching_ = true; }
  /// Keeps `e` until dispatching starts; false (not kept) once it has.
  bool defer(core::Event& e) {
    if (dispatching_) return false;
    deferred_.push_back(std::move(e));
    return true;
  }
  /// Dispatching starts at `now` (RootSetup::on_start): the events kept so far.
  std::vector<core::Event> start_dispatching(double now) {
    dispatching_ = true;
    if (s_.on_start) s_.on_start(now);
    return std::exchange(deferred_, {});
  }
  /// A node joined somewhere in the tree.
  void joined(const net::msg::NodeJoined& j) {
    ++joined_nodes_;
    if (s_.on_joined) s_.on_joined(j);
  }
  std::size_t joined_nodes() const { return joined_nodes_; }
  bool enough_joined() const { return joined_nodes_ >= s_.wait_for_nodes; }

  // ---- results ------------------------------------------------------------------------
  /// False: the output proves the result wrong.
  bool output_checks(const net::msg::Result& r, const Payload& output) const {
    return !s_.check_output || s_.check_output(r, output);
  }
  bool forged(const net::msg::Result& r, const std::string& via) const {
    return s_.check_result && s_.check_result(r, via).forged;
  }
  void completed(const net::msg::Result& r, const Payload& output, bool duplicate, double now) const {
    if (output && !duplicate && s_.on_output) s_.on_output(r, output);
    if (s_.on_result) s_.on_result(r, duplicate, now);
  }
  bool retry(const net::msg::Result& r) const { return s_.retry && s_.retry(r); }
  std::vector<core::TaskRef> convict(const std::string& culprit, const std::string& via) const {
    if (!s_.convict) return {};
    return s_.convict(culprit, via, culprit == via);
  }

  // ---- what the tree reports ----------------------------------------------------------
  void measured(const net::msg::Measure& m) const {
    if (s_.on_measure) s_.on_measure(m);
  }
  bool wants_loads() const { return static_cast<bool>(s_.on_load); }
  void loads(const std::vector<net::msg::NodeLoad>& loads) const {
    if (s_.on_load)
      for (const auto& l : loads) s_.on_load(l);
  }
  std::optional<std::vector<net::msg::NodeHint>> estimates(const std::vector<net::msg::Estimate>& e, double now) const {
    if (!s_.on_estimates) return std::nullopt;
    return s_.on_estimates(e, now);
  }
  void tick(double now) const {
    if (s_.on_tick) s_.on_tick(now);
  }

 private:
  RootSetup s_;
  bool dispatching_ = false;
  std::vector<core::Event> deferred_;
  std::size_t joined_nodes_ = 0;
};

}  // namespace treefarm::node
