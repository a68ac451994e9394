#pragma once
/// @file RunConfig.hpp
/// The run a node takes part in, as its Welcome (or, at the root, its RootSetup) describes
/// it: the applications, the hints (link bandwidths, task durations, the LP's rates) and
/// the scheduler core's configuration derived from them for this node.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/Log.hpp"

namespace treefarm::node {

/// model::AppSpec from the wire description of an application, and back.
model::AppSpec app_from_wire(const net::msg::AppInfo& info);
net::msg::AppInfo app_to_wire(const model::AppSpec& app);

/// What of a node the scheduler core's configuration needs beyond the Welcome.
struct NodeTraits {
  std::string name;
  std::uint32_t cores = 0;
  std::uint64_t memory = 0;         ///< bytes
  std::uint64_t disk = 0;           ///< bytes
  double speed = 0;                 ///< flop/s per core (0: unknown)
  std::uint32_t max_task_losses = 3;
  double task_deadline_factor = 4;
  double task_deadline_floor = 60;  ///< seconds
  core::MigrationMode migration = core::MigrationMode::off;
  core::BalanceMode balance = core::BalanceMode::off;
  /// Hints this node knows without the Welcome (a simulation knows its platform).
  const std::vector<net::msg::NodeHint>* known_hints = nullptr;
};

class RunConfig {
 public:
  /// Takes `w` as the run: `root_apps` (the root's own, with their inputs' details) or the
  /// Welcome's applications. Returns the core's configuration. Logs when the LP's plan
  /// leaves this worker idle.
  core::NodeConfig apply(const net::msg::Welcome& w, const NodeTraits& node, const std::vector<model::AppSpec>* root_apps,
                         const std::vector<std::vector<bool>>* done_before, const Logger& log);

  const net::msg::Welcome& welcome() const { return welcome_; }
  const std::vector<model::AppSpec>& apps() const { return apps_; }
  /// bytes/s of `node`'s link as the hints give it (0: unknown).
  double bandwidth_of(const std::string& node) const {
    auto it = hint_bandwidth_.find(node);
    return it == hint_bandwidth_.end() ? 0.0 : it->second;
  }
  bool knows_bandwidth_of(const std::string& node) const { return hint_bandwidth_.contains(node); }
  /// "task 7 of 'mm'": a task id as people read it.
  std::string task_text(std::uint64_t task_id) const;

 private:
  net::msg::Welcome welcome_;
  std::vector<model::AppSpec> apps_;
  std::map<std::string, double> hint_bandwidth_;  ///< node -> bytes/s of its link
};

/// Seconds as people write them: "1", "0.25", "6" (not std::to_string's "1.000000").
std::string seconds_text(double seconds);
/// A reason as the wire carries it: at most `limit` bytes (a longer string would make the
/// encoder refuse the whole message), cut at a UTF-8 boundary with "...".
std::string wire_text(std::string text, std::size_t limit = net::max_name_bytes);

}  // namespace treefarm::node
