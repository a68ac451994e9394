#pragma once
/// @file Blame.hpp
/// What a node keeps to find forgers (docs/security.md, "Blame below an inner node"): the
/// ledger of who sent each result it passed up and the Blames it passed down
/// (BlameLedger), the nodes convicted here (refused if they join again in this run) and
/// the names of recent children gone (a Blame can still name one). The protocol itself
/// is NodeDriverBlame.cpp.

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/node/BlameLedger.hpp"

namespace treefarm::node {

class Blame {
 public:
  /// `at_root`: the root keeps no ledger of results it passed up (it passes none up; no
  /// Blame ever asks it).
  explicit Blame(bool at_root = false) : records_(!at_root) {}

  BlameLedger ledger;

  /// The result of `task_id` goes up, from `from` (BlameLedger::record); not at the root.
  void passed_up(std::uint64_t task_id, std::uint32_t from) {
    if (records_) ledger.record(task_id, from);
  }

  void convict(const std::string& name) {
    if (!convicted(name)) convicted_.push_back(name);
  }
  bool convicted(const std::string& name) const {
    return std::find(convicted_.begin(), convicted_.end(), name) != convicted_.end();
  }
  /// Child `core_id` (named `name`) is gone.
  void departed(std::uint32_t core_id, std::string name) {
    departed_.emplace_back(core_id, std::move(name));
    if (departed_.size() > max_departed) departed_.pop_front();
  }
  /// The name of child `core_id` if it left recently ("" if not known).
  std::string departed_name(std::uint32_t core_id) const {
    std::string name;
    for (const auto& [id, n] : departed_)
      if (id == core_id) name = n;
    return name;
  }
  /// The node lost its parent: the ledger and the departures are forgotten (convictions
  /// stay: this run still refuses them).
  void forget() {
    ledger.clear();
    departed_.clear();
  }

 private:
  static constexpr std::size_t max_departed = 4096;
  bool records_;
  std::vector<std::string> convicted_;
  std::deque<std::pair<std::uint32_t, std::string>> departed_;
};

}  // namespace treefarm::node
