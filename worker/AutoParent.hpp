#pragma once
/// @file AutoParent.hpp
/// `treefarm-worker --join tcp://ANY-NODE:PORT --parent auto` (docs/planning.md): learn
/// the live tree node by node from the one given (msg::TreeQuery), measure the link from
/// every node reached to this machine, and choose the parent under which the LP predicts
/// the highest fair throughput (plan::choose_live_parent: RMSHC, papers/wang2006 §3).

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "runtime/plan/LiveTree.hpp"
#include "runtime/zmq/Curve.hpp"

namespace treefarm::worker {

struct AutoParentOptions {
  std::string join;                         ///< endpoint of any node of the tree
  std::string name;                         ///< this worker's name
  std::uint32_t cores = 1;                  ///< cores this worker computes on
  double speed = 0;                         ///< flop/s per core (0: the tree's median task times)
  std::uint64_t probe_bytes = 4ull << 20;   ///< bytes per link probe
  int probe_repeats = 2;
  double timeout = 10;                      ///< seconds per question
  /// Set when the worker ends: questions still asked are given up within 0.1 s
  /// (TreeQueryClient::cancel_when). nullptr: never.
  const std::atomic<bool>* cancel = nullptr;
  std::size_t max_nodes = 256;              ///< nodes asked at most
  std::uint64_t seed = 1;
  /// CURVE: this worker's keys and the public key of the node at `join` (the others' keys
  /// are learnt from the answers, msg::TreeInfo); this worker's key must be in their
  /// authorized_keys. Without: unencrypted questions.
  std::optional<net::KeyPair> curve;
  std::string join_key;
  /// Re-parenting: this worker's own name; it and its subtree are left out of the tree.
  std::string leaving;
  /// Re-parenting: this worker's listening endpoint ("" = none): its subtree is asked from
  /// there and counted in each candidate's prediction (plan::reparent_choice).
  std::string self_endpoint;
};

/// The choice, the tree it was made on and the measured links (bytes/s by node name).
struct AutoParentResult {
  plan::AutoParent parent;
  plan::LiveTree tree;
  std::map<std::string, double> measured;
  std::string parent_key;   ///< CURVE: the chosen parent's public key ("" = no CURVE)
};

/// Throws std::runtime_error when the node at `join` does not answer, std::invalid_argument
/// when the tree cannot be modelled (no root reached, no application yet).
AutoParentResult find_parent(const AutoParentOptions& options);

/// Re-parenting later (`--reparent-every`, docs/planning.md): the tree learnt again from
/// `options.join` without this worker (`options.leaving`), and plan::reparent_choice.
struct ReparentResult {
  std::string current_parent;     ///< name of its parent as the tree lists it ("" = not seen)
  plan::ReparentChoice choice;
  net::msg::Ancestor target;      ///< the best other node (name, endpoint, CURVE key)
  std::size_t subtree_nodes = 0;  ///< nodes below this worker counted with it
};
ReparentResult evaluate_reparent(const AutoParentOptions& options, double min_gain);

}  // namespace treefarm::worker
