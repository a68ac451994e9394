#pragma once
/// @file SharedInputLinks.hpp
/// The shared input segments one node's ZeroMQ adapter (ZmqNode.cpp) uses, and their
/// handshake (docs/protocol.md "Shared input segments"): its parent's, mapped read-only
/// once offered; one per child on ipc:// that asked in its Hello, offered after its
/// Welcome, used once the child answered that it mapped it, all of them within
/// shared_inputs_max_bytes and /dev/shm's room (shared_inputs_room_bytes); and the slots a
/// Result or a PullReply frees on either side (in a copied segment too: the tasks beyond its
/// slots wait here until Results free some).

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <zmq.hpp>

#include "runtime/net/Batch.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/zmq/FramePayload.hpp"
#include "runtime/zmq/SharedInputs.hpp"
#include "runtime/zmq/Wire.hpp"

namespace treefarm::zmq_node {

/// Bytes of segments a parent gives its children (SharedInputs.hpp's constants; a test's smaller).
struct SharedInputBudget {
  std::size_t max_bytes = shared_inputs_max_bytes;               ///< all segments
  std::size_t sized_max_bytes = shared_inputs_sized_max_bytes;   ///< sized for the buffer up to here
  std::size_t copied_bytes = shared_input_copied_segment_bytes;  ///< a copied segment
};

class SharedInputLinks {
 public:
  explicit SharedInputLinks(std::string node_name, SharedInputBudget budget = {})
      : name_(std::move(node_name)), budget_(budget) {}

  // ---- the parent's segment (this node as a child)
  /// The parent's segment, or null: every input comes inline.
  const std::shared_ptr<InputMapping>& parent() const { return parent_; }
  /// A message going up: the slots its Result or PullReply gives back.
  void going_up(const net::Message& m) {
    if (parent_) release(*parent_, m);
  }
  /// The parent's frame: an offer is mapped if it can be and answered on `up`. The
  /// reason to drop the parent (a second offer, an answer from it), else nullopt.
  std::optional<std::string> offered(zmq::socket_t& up, const net::InputsFrame& f);

  // ---- the children's segments (this node as a parent)
  /// A child's Hello: a new incarnation forgets the old segment; it asks for one or not.
  void hello(std::uint32_t peer, std::uint32_t features);
  /// After the child's Welcome went on `down`: its segment made and offered, if it asked,
  /// the link is ipc:// and the budget has room; otherwise nothing (inputs go inline).
  /// Its segment is sized for its buffer of `buffer` tasks of inputs up to `largest_input`
  /// bytes (shared_input_segment_bytes) while the segments stay within the budget's
  /// sized_max_bytes; beyond, it is a copied one.
  void offer(zmq::socket_t& down, std::uint32_t peer, const std::string& identity, bool ipc, std::uint32_t buffer,
             std::uint64_t largest_input = 0);
  /// Bytes of the largest task input of the run a Welcome describes (its applications').
  static std::uint64_t largest_input(const net::msg::Welcome& w) {
    std::uint64_t most = 0;
    for (const auto& a : w.apps) most = std::max(most, a.bytes);
    return most;
  }
  /// Whether `m` to the child goes in its batch: a message batches (net::BatchWriter::batchable),
  /// or it is a Task whose input, too large for a batch, may go by reference in the child's
  /// segment (add_to: in a slot if one is free, else alone as before).
  bool batchable(std::uint32_t peer, const net::Message& m, const node::Payload& payload) const {
    const std::size_t bytes = payload ? payload->size() : 0;
    if (net::BatchWriter::batchable(m, bytes)) return true;
    const auto* segment = std::holds_alternative<net::msg::Task>(m) ? of(peer) : nullptr;
    return segment && bytes < net::shared_payload_mark && bytes <= segment->size();
  }
  /// The child's frame: the reason to drop it (an offer from it, an answer to no offer),
  /// else nullopt; the name leaves /dev/shm either way.
  std::optional<std::string> answered(std::uint32_t peer, const net::InputsFrame& f);
  /// Whether the child's accepted segment is a copied one.
  bool copied(std::uint32_t peer) const {
    auto it = children_.find(peer);
    return it != children_.end() && it->second.accepted && it->second.copied;
  }
  /// The segment the child accepted, or null.
  InputSegment* of(std::uint32_t peer) const {
    auto it = children_.find(peer);
    return it != children_.end() && it->second.accepted ? it->second.segment.get() : nullptr;
  }
  /// Bytes a task's input of `bytes` put on the child's connection: its reference if it lies
  /// in the child's segment or is held for it (node::Transport::connection_bytes).
  std::uint64_t connection_bytes(std::uint32_t peer, std::uint64_t task, std::uint64_t bytes) const {
    auto it = children_.find(peer);
    if (it == children_.end() || !it->second.accepted) return bytes;
    const auto& c = it->second;
    return c.segment->holds(task) || c.held_ids.contains(task) ? net::shared_reference_bytes : bytes;
  }
  /// A Task whose input is made on demand, for a child whose copied segment has no slot for it
  /// now (or holds tasks already): held here, in order, until the child's Results free slots
  /// (release_held), instead of going inline — a first request of a whole buffer would
  /// overflow the 128 slots of 16 KiB. True when held: the caller sends nothing now.
  bool hold(std::uint32_t peer, const net::Message& m, const node::Payload& payload);
  /// Whether `m` to a child must follow the tasks held for it (release_held with `all`):
  /// every message but a Task (held in order itself) and a Heartbeat, which names no task.
  /// The heartbeat each child gets every second made every held task go inline: a master
  /// whose 256 workers' copied segments held most of a bag of 100,000 tasks of 16 KiB
  /// made them into frames of its heap, 36,000 first touches of pages (twice the CPU per
  /// task in the runs a heartbeat fell into the first burst, `treefarm bench workers`).
  static bool follows_held_tasks(const net::Message& m) {
    return !std::holds_alternative<net::msg::Task>(m) && !std::holds_alternative<net::msg::Heartbeat>(m);
  }
  /// Writes the child's held tasks into its batch `out`, in order: those its segment has a slot
  /// for now, or every one (`all`: a message of another kind follows them, and the order to a
  /// child is kept; those without a slot go inline). `flush` sends a full batch (false: the
  /// child is gone). True when it wrote any: the caller sends the batch at its turn's end.
  template <class Flush>
  bool release_held(std::uint32_t peer, bool all, net::BatchWriter& out, Flush&& flush) {
    auto it = children_.find(peer);
    if (it == children_.end()) return false;
    auto& c = it->second;
    // Not one by one as each Result frees a slot (a frame each, 1.26-1.51x the master's CPU
    // per task with 256 workers): once half the slots are free, or the child holds fewer than
    // half, all that fit go together.
    if (!all && !c.held.empty() && c.segment->live() >= kReleaseBatch &&
        !c.segment->has_room(kReleaseBatch * c.held.front().second->size()))
      return false;
    bool wrote = false;
    while (!c.held.empty() && (all || c.segment->has_room(c.held.front().second->size()))) {
      auto [message, payload] = std::move(c.held.front());
      c.held.pop_front();
      c.held_ids.erase(std::get<net::msg::Task>(message).task_id);
      if (!add_to(out, message, payload, c.segment.get()) && flush()) (void)add_to(out, message, payload, c.segment.get());
      wrote = true;
    }
    return wrote;
  }
  /// A message from the child: the slots its Result or PullReply frees (a copied segment's
  /// too: its child reads each input in place until then, wire_version 6). True when it
  /// freed slots and tasks are held for the child (release_held may send some): the caller
  /// looks no further for the other children's Results, one per task.
  bool coming_up(std::uint32_t peer, const net::Message& m) {
    auto it = children_.find(peer);
    if (it == children_.end() || !it->second.accepted) return false;
    release(*it->second.segment, m);
    return !it->second.held.empty() && frees_slots(m);
  }
  /// Whether `m` from a child frees slots of its segment (coming_up): then tasks held for it
  /// may go (release_held).
  static bool frees_slots(const net::Message& m) {
    return std::holds_alternative<net::msg::Result>(m) || std::holds_alternative<net::msg::PullReply>(m);
  }
  /// The child is gone: its slots die with its segment.
  void forget(std::uint32_t peer) { children_.erase(peer); }
  /// Every segment, the parent's and the children's (a restart).
  void clear() {
    children_.clear();
    parent_.reset();
  }

 private:
  template <class Slots>
  static void release(Slots& slots, const net::Message& m) {
    if (const auto* result = std::get_if<net::msg::Result>(&m)) slots.release(result->task_id);
    if (const auto* back = std::get_if<net::msg::PullReply>(&m))
      for (auto id : back->task_ids) slots.release(id);
  }
  /// Held tasks a copied segment's freed slots release at once (half of its 128 slots).
  static constexpr std::size_t kReleaseBatch = 64;
  struct Child {
    bool wanted = false;  ///< its Hello announced feature_shared_inputs
    std::unique_ptr<InputSegment> segment;
    bool copied = false;  ///< smaller than the buffer: tasks beyond its slots are held here (hold)
    bool accepted = false;
    std::deque<std::pair<net::Message, node::Payload>> held;  ///< Tasks waiting for a slot (hold)
    std::unordered_set<std::uint64_t> held_ids;
  };
  std::string name_;
  SharedInputBudget budget_;
  std::unordered_map<std::uint32_t, Child> children_;
  std::shared_ptr<InputMapping> parent_;
};

}  // namespace treefarm::zmq_node
