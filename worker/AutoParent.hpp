#pragma once
/// @file AutoParent.hpp
/// `treefarm-worker --join tcp://ANY-NODE:PORT --parent auto` (docs/planning.md): learn
/// the live tree node by node from the one given (msg::TreeQuery), measure the link from
/// every node reached to this machine, and choose the parent under which the LP predicts
/// the highest fair throughput (plan::choose_live_parent: RMSHC, papers/wang2006 §3).

#include <cstdint>
#include <map>
#include <string>

#include "runtime/plan/LiveTree.hpp"

namespace treefarm::worker {

struct AutoParentOptions {
  std::string join;                         ///< endpoint of any node of the tree
  std::string name;                         ///< this worker's name
  std::uint32_t cores = 1;                  ///< cores this worker computes on
  double speed = 0;                         ///< flop/s per core (0: the tree's median task times)
  std::uint64_t probe_bytes = 4ull << 20;   ///< bytes per link probe
  int probe_repeats = 2;
  double timeout = 10;                      ///< seconds per question
  std::size_t max_nodes = 256;              ///< nodes asked at most
  std::uint64_t seed = 1;
};

/// The choice, the tree it was made on and the measured links (bytes/s by node name).
struct AutoParentResult {
  plan::AutoParent parent;
  plan::LiveTree tree;
  std::map<std::string, double> measured;
};

/// Throws std::runtime_error when the node at `join` does not answer, std::invalid_argument
/// when the tree cannot be modelled (no root reached, no application yet).
AutoParentResult find_parent(const AutoParentOptions& options);

}  // namespace treefarm::worker
