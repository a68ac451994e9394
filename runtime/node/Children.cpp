#include "runtime/node/Children.hpp"

#include <algorithm>

namespace treefarm::node {

bool Children::name_taken(const std::string& name, PeerId peer) const {
  for (const auto& [p, c] : by_peer_)
    if (c->name == name && p != peer) return true;
  return false;
}

Child& Children::add(PeerId peer, const net::msg::Hello& hello, double now) {
  auto child = std::make_unique<Child>();
  child->id = core::ChildId{next_core_id_++};
  child->name = hello.name;
  child->cores = hello.cores;
  child->subtree.insert(hello.name);
  child->last_seen = now;
  peer_of_core_[child->id.value] = peer;
  auto [it, inserted] = by_peer_.emplace(peer, std::move(child));
  return *it->second;
}

std::unique_ptr<Child> Children::remove(PeerId peer) {
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end()) return nullptr;
  std::unique_ptr<Child> child = std::move(it->second);
  by_peer_.erase(it);
  peer_of_core_.erase(child->id.value);
  return child;
}

std::vector<PeerId> Children::silent(double now, double timeout) const {
  std::vector<PeerId> out;
  for (const auto& [peer, c] : by_peer_)
    if (now - c->last_seen > timeout) out.push_back(peer);
  return out;
}

void Children::hold(PeerId peer, net::msg::Hello hello) {
  forget_waiting(peer);
  waiting_.push_back({peer, std::move(hello)});
}

bool Children::waiting(PeerId peer) const {
  return std::any_of(waiting_.begin(), waiting_.end(), [&](const WaitingHello& w) { return w.peer == peer; });
}

void Children::forget_waiting(PeerId peer) {
  std::erase_if(waiting_, [&](const WaitingHello& w) { return w.peer == peer; });
}

void Children::clear() {
  by_peer_.clear();
  peer_of_core_.clear();
  waiting_.clear();
}

}  // namespace treefarm::node
