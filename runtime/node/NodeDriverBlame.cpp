/// @file NodeDriverBlame.cpp
/// Blame below an inner node: the node driver's side of the protocol; what it keeps is
/// Blame's (Blame.hpp, BlameLedger.hpp).
///
/// docs/security.md, "Blame below an inner node". Only the root can prove a result forged
/// (spot checks need the run's secret inputs); only the nodes on the result's way up know
/// who sent it. Each asks the child it came from (msg::Blame), down to the node whose leaf
/// child or own executor produced it: that node drops the forger and msg::BlameReply names
/// it on the way up, each hop checking the name is in the answering child's subtree. A
/// child that cannot or does not answer in time, or names a node outside its subtree, is
/// convicted by its parent instead: an inner node is trusted exactly as far as its subtree.

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::node {

void NodeDriver::blame_forgery(Child& child, PeerId peer, const net::msg::Result& forged, double now) {
  const core::TaskRef task{core::TaskId{forged.task_id}};
  const core::ChildId id = child.id;
  // The child's hold on the task ends; with no stored result nothing is recorded, and the
  // task is done again. A child that does not hold the task (a result for a task it was
  // never sent, or out of the bag's range) is dropped by the scheduler's check right here
  // (drain): then there is nothing to reopen or blame (found by fuzz_driver).
  post(core::event::ResultArrived{id, task});
  drain(now);
  if (children_.by_core(id) == nullptr) return;
  post(core::event::TasksReopened{{task}});
  const bool leaf = child.subtree.size() == 1 || forged.node == child.name;
  if (!leaf && blame_.ledger.expect(forged.task_id, child.id.value, now + opt_.blame_timeout)) {
    log_.warn("{}: the result of {} computed by '{}' is forged; asking '{}' who sent it", opt_.name,
                 run_.task_text(forged.task_id), forged.node, child.name);
    transport_.send_child(peer, net::msg::Blame{forged.task_id, forged.node, opt_.blame_timeout / 2});
  } else {
    const std::string name = child.name;
    drop_child(peer, DropKind::misbehaved, "forged the result of " + run_.task_text(forged.task_id), now);
    blame_found(forged.task_id, name, name, now);
  }
  drain(now);
}

void NodeDriver::on_blame(const net::msg::Blame& b, double now) {
  const auto from = blame_.ledger.who_sent(b.task_id);
  std::string culprit;
  if (!from) {
    log_.warn("{}: blamed for {}, which it no longer remembers passing up", opt_.name, run_.task_text(b.task_id));
    transport_.send_parent(net::msg::BlameReply{b.task_id, ""});
    return;
  }
  if (*from == BlameLedger::local) {
    log_.error("{}: its own executor computed the forged result of {}", opt_.name, run_.task_text(b.task_id));
    transport_.send_parent(net::msg::BlameReply{b.task_id, opt_.name});
    return;
  }
  Child* c = children_.by_core(core::ChildId{*from});
  if (!c) {  // it sent the result, then left: it is the one this node can name
    culprit = blame_.departed_name(*from);
    if (!culprit.empty()) blame_found(b.task_id, culprit, culprit, now);
    else transport_.send_parent(net::msg::BlameReply{b.task_id, ""});
    return;
  }
  const PeerId peer = *children_.peer_of(*from);
  const bool leaf = c->subtree.size() == 1 || b.node == c->name;
  const double wait = std::min(b.wait_seconds, opt_.blame_timeout);
  if (!leaf && wait > 0 && blame_.ledger.expect(b.task_id, *from, now + wait)) {
    log_.warn("{}: blamed for {}: asking '{}' who sent it", opt_.name, run_.task_text(b.task_id), c->name);
    transport_.send_child(peer, net::msg::Blame{b.task_id, b.node, wait / 2});
    return;
  }
  culprit = c->name;
  drop_child(peer, DropKind::misbehaved, "forged the result of " + run_.task_text(b.task_id), now);
  blame_found(b.task_id, culprit, culprit, now);
  drain(now);
}

void NodeDriver::on_blame_reply(Child& child, PeerId peer, const net::msg::BlameReply& r, double now) {
  if (!blame_.ledger.answered(r.task_id, child.id.value))
    return drop_child(peer, DropKind::misbehaved, "answered a Blame it was not asked", now);
  if (!r.culprit.empty() && r.culprit != child.name && child.subtree.contains(r.culprit)) {
    child.subtree.erase(r.culprit);  // its parent has dropped it: no more results in its name
    blame_found(r.task_id, child.name, r.culprit, now);
  } else {
    // It forged the result itself, no longer knows who sent it, or names a node outside its
    // subtree: it is held responsible.
    const std::string why = r.culprit.empty()       ? "could not say who sent the forged result of "
                            : r.culprit == child.name ? "forged the result of "
                                                      : "named '" + wire_text(r.culprit) + "', outside its subtree, for ";
    const std::string name = child.name;
    drop_child(peer, DropKind::misbehaved, why + run_.task_text(r.task_id), now);
    blame_found(r.task_id, name, name, now);
  }
  drain(now);
}

void NodeDriver::expire_blames(double now) {
  bool any = false;
  for (const auto& p : blame_.ledger.expired(now)) {
    const auto peer = children_.peer_of(p.child);
    if (!peer) continue;
    const std::string name = children_.find(*peer)->name;
    drop_child(*peer, DropKind::misbehaved, "did not answer the Blame of " + run_.task_text(p.task_id) + " in time", now);
    blame_found(p.task_id, name, name, now);
    any = true;
  }
  if (any) drain(now);
}

/// `culprit` is convicted of forging the result of `task_id`, which came through child
/// `via` (== culprit: the child itself is held responsible, and has been dropped).
void NodeDriver::blame_found(std::uint64_t task_id, const std::string& via, const std::string& culprit, double now) {
  (void)now;
  blame_.convict(culprit);
  if (!is_root()) {
    log_.warn("{}: '{}' convicted of forging the result of {}", opt_.name, culprit, run_.task_text(task_id));
    transport_.send_parent(net::msg::BlameReply{task_id, culprit});
    return;
  }
  std::vector<core::TaskRef> redo = root_->convict(culprit, via);
  log_.error("{}: '{}' (below child '{}') convicted of forging the result of {}; {} of its results are redone",
                opt_.name, culprit, via, run_.task_text(task_id), redo.size());
  if (!redo.empty()) post(core::event::TasksReopened{std::move(redo)});
}

}  // namespace treefarm::node
