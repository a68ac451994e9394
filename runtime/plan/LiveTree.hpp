#pragma once
/// @file LiveTree.hpp
/// `treefarm-worker --parent auto`, the model: the live tree as the joining worker learnt
/// it node by node (msg::TreeInfo answers to msg::TreeQuery, docs/planning.md), turned into
/// the steady-state LP's PlatformModel, and the parent choice over it (plan::choose_parent,
/// RMSHC of papers/wang2006 §3 in its decentralised setting). Pure: no sockets, no clock.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/plan/ParentChooser.hpp"

namespace treefarm::plan {

/// The live tree's model and, per model node, who it is.
struct LiveTree {
  lp::PlatformModel model;             ///< node 0 the root, parents before children
  std::vector<std::string> endpoints;  ///< per model node: where it answered ("" = not reached)
  std::vector<double> flops;           ///< per application: flop per task
  /// How many task durations (node × app) and link bandwidths were unknown and filled in
  /// (median of the known ones; docs/planning.md).
  std::size_t guessed_task_seconds = 0, guessed_bandwidths = 0;
};

/// Builds the model from the TreeInfo of the nodes reached (each with `endpoint` set to
/// where it answered). The root is the node with no parent endpoint; the tree follows the
/// children lists from it (a listed child that was not reached is a node with the cores it
/// advertised). Applications: the root's. A task duration nobody measured is the median of
/// the known ones for that application (none known: `default_speed` flop/s per core); an
/// unknown link bandwidth is the median of the known ones and of `measured` (none: +inf).
/// Throws std::invalid_argument when no root, two roots, or no application was learnt.
LiveTree live_tree(const std::vector<net::msg::TreeInfo>& infos, const std::map<std::string, double>& measured,
                   double default_speed = 1e9);

/// What `--parent auto` decided.
struct AutoParent {
  std::size_t node = 0;         ///< index in LiveTree::model
  std::string name, endpoint;
  ParentChoice choice;
};

/// Chooses the parent for a joiner of `cores` cores (task durations: `speed` flop/s per
/// core when > 0, else the median of the tree's), entering at the node named `entry`.
/// `measured`: bytes/s the joiner measured from each node it probed (by name); only those
/// can be chosen. Throws std::invalid_argument when none was measured.
AutoParent choose_live_parent(const LiveTree& tree, const std::map<std::string, double>& measured,
                              const std::string& joiner_name, std::uint32_t cores, double speed,
                              const std::string& entry, const ParentChoiceOptions& options = {});

/// The joiner as the live model sees it: task durations from `speed` flop/s per core when
/// > 0, else the median of the tree's nodes for each application.
JoiningNode live_joiner(const LiveTree& tree, const std::string& name, std::uint32_t cores, double speed);

/// Re-parenting a live node later (`treefarm-worker --reparent-every`, docs/planning.md):
/// the node, taken out of the live tree with its subtree, is a joiner again; it moves when
/// the best other measured node predicts a fair throughput above (1 + min_gain) times the
/// prediction under its current parent (a negative min_gain moves it whenever another
/// node can be measured, which is how the tests exercise the move).
struct ReparentChoice {
  std::optional<std::size_t> current;    ///< its parent in the model (nullopt: not reached or not measured)
  double current_throughput = 0;         ///< tasks/s per unit of weight, under `current` (0 if none)
  std::optional<std::size_t> best;       ///< the best other measured node
  double best_throughput = 0;            ///< tasks/s per unit of weight, under `best`
  bool move = false;
  std::size_t evaluations = 0;           ///< LP solves
};
/// Evaluates every measured node (the live tree of one run has at most a few hundred: one
/// LP each). `current_parent`: the name of the node's parent now. `subtree` (optional): the
/// moving node's own subtree as live_tree() builds it from the TreeInfo of the node and its
/// descendants (model node 0 = the moving node, whose cores and durations are taken from
/// `cores`/`speed` as without a subtree); its descendants move with it, so each candidate's
/// prediction counts them below the moving node, behind the candidate's measured link.
ReparentChoice reparent_choice(const LiveTree& tree, const std::map<std::string, double>& measured,
                               const std::string& name, std::uint32_t cores, double speed,
                               const std::string& current_parent, double min_gain, const LiveTree* subtree = nullptr);

/// `model` (a live model with the moving node appended last, plan::with_joiner) with the
/// descendants of `subtree`'s node 0 appended below that last node. Their task durations
/// are matched to `model`'s applications by name (an application the subtree does not
/// know: the moving node's duration).
lp::PlatformModel with_subtree(lp::PlatformModel model, const LiveTree& subtree);

}  // namespace treefarm::plan
