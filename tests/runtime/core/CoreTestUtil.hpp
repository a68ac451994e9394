#pragma once
/// @file CoreTestUtil.hpp
/// Small helpers for the scripted tests of runtime/core.

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/NodeScheduler.hpp"
#include "tests/runtime/core/TreeHarness.hpp"

namespace treefarm::core::testing {

using Strings = std::vector<std::string>;

inline AppParams app(std::string name, double weight, std::uint64_t tasks) {
  AppParams a;
  a.name = std::move(name);
  a.weight = weight;
  a.tasks = tasks;
  return a;
}

inline NodeConfig node_config(bool root, std::uint32_t buffer, std::vector<AppParams> apps, bool one_port = true) {
  NodeConfig c;
  c.is_root = root;
  c.buffer = buffer;
  c.apps = std::move(apps);
  c.one_port = one_port;
  return c;
}

inline std::unique_ptr<NodeScheduler> make_node(NodeConfig config, const std::string& policy = "fcfs") {
  return std::make_unique<NodeScheduler>(std::move(config), make_policy(policy));
}

inline TaskRef task(std::uint32_t app, std::uint64_t index) { return TaskRef{TaskId::make(AppId{app}, index)}; }
inline Target child(std::uint32_t c) { return Target::to_child(ChildId{c}); }

/// The actions, printed (describe()), for readable comparisons.
inline Strings names(const std::vector<Action>& actions) {
  Strings out;
  for (const auto& a : actions) out.push_back(describe(a));
  return out;
}

}  // namespace treefarm::core::testing
