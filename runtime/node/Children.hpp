#pragma once
/// @file Children.hpp
/// A node's children, from their Hello on: who they are (name, cores, the names they
/// reported joined below them), when they were last heard of, what they asked for, their
/// transfers not yet acknowledged and their subtree's last reported states; plus the
/// Hellos of would-be children waiting for this node to be running (before its Welcome,
/// or — served trees, docs/serve.md — between runs). Transport peers and core child ids
/// both find a child; core ids are never reused.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/core/Ids.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/SendLedger.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node {

struct Child {
  core::ChildId id;
  std::string name;
  double last_seen = 0;                          ///< seconds
  bool closing = false;                          ///< sent Shutdown, waiting for Bye
  std::uint64_t requested = 0;                   ///< tasks it asked for, not yet sent
  std::unordered_set<std::string> subtree;       ///< names it reported joined below it, and its own
  SendLedger::Records sends;                     ///< task transfers not yet acknowledged
  std::string endpoint;                          ///< advertised by its TreeInfo ("" = none)
  std::uint32_t cores = 0;
  std::vector<net::msg::NodeLoad> loads;         ///< its subtree's states, from its last heartbeat
};

/// A Hello kept until this node can admit its sender.
struct WaitingHello {
  PeerId peer;
  net::msg::Hello hello;
};

class Children {
 public:
  using Map = std::map<PeerId, std::unique_ptr<Child>>;

  Child* find(PeerId peer) {
    auto it = by_peer_.find(peer);
    return it == by_peer_.end() ? nullptr : it->second.get();
  }
  bool contains(PeerId peer) const { return by_peer_.contains(peer); }
  Child* by_core(core::ChildId id) {
    auto p = peer_of_core_.find(id.value);
    return p == peer_of_core_.end() ? nullptr : find(p->second);
  }
  std::optional<PeerId> peer_of(std::uint32_t core_id) const {
    auto p = peer_of_core_.find(core_id);
    if (p == peer_of_core_.end()) return std::nullopt;
    return p->second;
  }
  /// A child of that name on a connection other than `peer`.
  bool name_taken(const std::string& name, PeerId peer) const;

  /// Admits `peer` as a new child (a new core id) at `now`.
  Child& add(PeerId peer, const net::msg::Hello& hello, double now);
  /// Removes the child on `peer` (nullptr if none).
  std::unique_ptr<Child> remove(PeerId peer);

  const Map& all() const { return by_peer_; }
  Map& all() { return by_peer_; }
  bool empty() const { return by_peer_.empty(); }
  std::size_t size() const { return by_peer_.size(); }
  /// The peers silent for more than `timeout` seconds at `now`.
  std::vector<PeerId> silent(double now, double timeout) const;

  // ---- would-be children waiting ----------------------------------------------------
  /// Keeps the Hello of `peer` (replacing an earlier one of the same peer).
  void hold(PeerId peer, net::msg::Hello hello);
  bool waiting(PeerId peer) const;
  void forget_waiting(PeerId peer);
  const std::vector<WaitingHello>& waiting() const { return waiting_; }
  std::vector<WaitingHello> take_waiting() { return std::exchange(waiting_, {}); }

  /// Forgets every child and waiting Hello (the node lost its parent); core ids go on.
  void clear();

 private:
  Map by_peer_;
  std::unordered_map<std::uint32_t, PeerId> peer_of_core_;
  std::uint32_t next_core_id_ = 0;
  std::vector<WaitingHello> waiting_;
};

}  // namespace treefarm::node
