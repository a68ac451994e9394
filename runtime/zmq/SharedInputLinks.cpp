#include "runtime/zmq/SharedInputLinks.hpp"

#include <spdlog/spdlog.h>

#include "runtime/zmq/MadeBytes.hpp"

namespace treefarm::zmq_node {

std::optional<std::string> SharedInputLinks::offered(zmq::socket_t& up, const net::InputsFrame& f) {
  if (!f.offer || parent_) return f.offer ? "a second shared input offer" : "a shared input answer from the parent";
  std::string why;
  parent_ = InputMapping::attach(f.name, f.bytes, &why, f.copied);
  if (!parent_) spdlog::info("{}: inputs come inline: {}", name_, why);
  (void)net::send_inputs_answer(up, parent_ != nullptr);
  return std::nullopt;
}

void SharedInputLinks::hello(std::uint32_t peer, std::uint32_t features) {
  children_.erase(peer);
  if (features & net::feature_shared_inputs) children_[peer].wanted = true;
}

void SharedInputLinks::offer(zmq::socket_t& down, std::uint32_t peer, const std::string& identity, bool ipc,
                             std::uint32_t buffer, std::uint64_t largest_input) {
  auto c = children_.find(peer);
  if (c == children_.end() || !c->second.wanted || !ipc) return;
  std::size_t reserved = 0;
  for (const auto& [other, child] : children_)
    if (child.segment) reserved += child.segment->size();
  // Sized for the buffer while the segments stay within the first part of the budget; then a
  // copied one, which holds only the inputs on their way (room for all 256 of `bench workers`).
  std::size_t bytes = shared_input_segment_bytes(buffer, largest_input);
  const bool copied = reserved + bytes > budget_.sized_max_bytes && bytes > budget_.copied_bytes;
  if (copied) bytes = budget_.copied_bytes;
  if (reserved + bytes > budget_.max_bytes || bytes > shared_inputs_room_bytes()) {
    spdlog::info("{}: inputs to '{}' go inline: its children's shared input segments already take {} MiB", name_, identity,
                 reserved >> 20);
    children_.erase(c);
    return;
  }
  std::string why;
  c->second.segment = InputSegment::create(bytes, &why);
  c->second.copied = copied;
  c->second.accepted = false;
  if (!c->second.segment) {
    spdlog::info("{}: inputs to '{}' go inline: {}", name_, identity, why);
    children_.erase(c);
    return;
  }
  if (!net::send_inputs_offer(down, identity, c->second.segment->name(), c->second.segment->size(), copied)) children_.erase(c);
}

bool SharedInputLinks::hold(std::uint32_t peer, const net::Message& m, const node::Payload& payload) {
  const auto* task = std::get_if<net::msg::Task>(&m);
  if (!task) return false;
  auto it = children_.find(peer);
  if (it == children_.end() || !it->second.accepted || !it->second.copied) return false;
  auto& c = it->second;
  const auto* made = dynamic_cast<const MadeBytes*>(payload.get());
  if (!made || made->size() == 0 || made->size() >= net::shared_payload_mark || made->size() > c.segment->size()) return false;
  if (c.held.empty() && c.segment->has_room(made->size())) return false;  // it goes now
  c.held.emplace_back(m, payload);
  c.held_ids.insert(task->task_id);
  return true;
}

std::optional<std::string> SharedInputLinks::answered(std::uint32_t peer, const net::InputsFrame& f) {
  auto c = children_.find(peer);
  if (f.offer || c == children_.end() || !c->second.segment || c->second.accepted)
    return f.offer ? "a shared input offer from a child" : "a shared input answer to no offer";
  c->second.segment->unlink();
  if (f.mapped) c->second.accepted = true;
  else children_.erase(c);
  return std::nullopt;
}

}  // namespace treefarm::zmq_node
