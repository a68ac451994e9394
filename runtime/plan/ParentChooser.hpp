#pragma once
/// @file ParentChooser.hpp
/// `treefarm-worker --parent auto`, the decision: a worker joining a live tree climbs from
/// random start points to the parent under which the tree's predicted fair throughput
/// (the steady-state LP) is highest — RMSHC in the decentralised setting papers/wang2006
/// was written for (§3: the search moves from node to neighbour node; here the
/// neighbours of a node are its parent and children in the live tree). The worker side
/// (asking the tree for candidates, measuring links to them) is worker/AutoParent.cpp
/// over runtime/plan/LiveTree.hpp.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::plan {

/// The worker that joins.
struct JoiningNode {
  std::string name = "joining";
  std::uint32_t cores = 1;
  std::vector<double> task_seconds;  ///< Per application of the live model: seconds per task (+inf: cannot run).
};

/// A node of the live tree the joiner measured a link to.
struct ParentCandidate {
  std::size_t node = 0;      ///< Index in the live PlatformModel.
  double bandwidth = 0.0;    ///< bytes/s measured from that node to the joiner (> 0).
};

struct ParentChoiceOptions {
  std::size_t starts = 4;     ///< x of wang2006: start points (walks of 2^k random steps).
  std::uint64_t seed = 1;
};

struct ParentChoice {
  std::size_t parent = 0;          ///< Index in the live model of the chosen parent.
  double fair_throughput = 0.0;    ///< tasks/s per unit of weight of the tree with the joiner under `parent`.
  std::size_t evaluations = 0;     ///< LP solves.
  std::vector<std::size_t> local_optima;  ///< Where each climb ended (wang2006's set S).
};

/// Chooses the parent. `entry` is the node the joiner contacted (the walks start there).
/// Nodes without a candidate entry cannot be chosen (no measured link) but the walks pass
/// through them. Throws std::invalid_argument for an empty candidate list, a candidate
/// out of range or with bandwidth <= 0, an entry out of range, or task_seconds of the
/// wrong size.
ParentChoice choose_parent(const lp::PlatformModel& live, const JoiningNode& joiner, std::size_t entry,
                           const std::vector<ParentCandidate>& candidates, const ParentChoiceOptions& options = {});

/// The live model with the joiner appended as the last node, child of `parent` over a link
/// of `bandwidth` bytes/s.
lp::PlatformModel with_joiner(const lp::PlatformModel& live, const JoiningNode& joiner, std::size_t parent,
                              double bandwidth);

}  // namespace treefarm::plan
