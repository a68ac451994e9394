#pragma once
/// @file ChildBatches.hpp
/// The batches a node holds for its children until the end of its loop turn (children
/// that announced net::feature_batches in their Hello), and which children have messages
/// waiting: the end of a turn visits only those, so its cost follows the messages sent,
/// not the children connected (a master of 256 workers walked all 256 every turn).

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/net/Batch.hpp"
#include "runtime/zmq/SharedInputLinks.hpp"

namespace treefarm::zmq_node {

class ChildBatches {
 public:
  /// The child's batch; null if it takes no batches (or is unknown).
  net::BatchWriter* find(std::uint32_t peer) {
    auto it = writers_.find(peer);
    return it == writers_.end() ? nullptr : &it->second;
  }
  bool contains(std::uint32_t peer) const { return writers_.contains(peer); }
  /// The child (a new incarnation of it) takes batches: an empty one.
  void announce(std::uint32_t peer) { writers_[peer] = net::BatchWriter(); }
  void erase(std::uint32_t peer) { writers_.erase(peer); }
  void clear() {
    writers_.clear();
    waiting_.clear();
  }
  /// A message joined `peer`'s batch `writer`: the child is remembered when it is the
  /// batch's first. Returns the batch's message count.
  std::size_t queued(std::uint32_t peer, const net::BatchWriter& writer) {
    if (writer.count() == 1) waiting_.push_back(peer);
    return writer.count();
  }
  /// The tasks `shared` held for `peer`'s copied segment (SharedInputLinks::hold) that have a
  /// slot now, or all of them, written into the child's batch, which then waits like any
  /// other for the turn's end. `flush` sends a full batch (false: the child is gone).
  template <class Flush>
  void release_held(SharedInputLinks& shared, std::uint32_t peer, bool all, Flush&& flush) {
    auto* out = find(peer);
    if (out && shared.release_held(peer, all, *out, std::forward<Flush>(flush))) waiting_.push_back(peer);
  }
  /// The children that may have messages waiting (each batch's child once; a child gone
  /// or flushed since may be among them), in the order of their batches' first messages;
  /// the list starts again empty.
  std::vector<std::uint32_t> take_waiting() { return std::exchange(waiting_, {}); }

 private:
  std::unordered_map<std::uint32_t, net::BatchWriter> writers_;
  std::vector<std::uint32_t> waiting_;
};

}  // namespace treefarm::zmq_node
