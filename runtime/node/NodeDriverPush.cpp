/// @file NodeDriverPush.cpp
/// Task migration, PUSH (papers/lee2010 slide 16; docs/migration.md "PUSH"): the node
/// driver's side. A child pushes waiting tasks it holds to its parent (msg::Push, no
/// payload: the parent still has the inputs); the parent tells each child its residual
/// capacity and answers pushes (msg::PushReply). The decisions are the core's
/// (core::Migration); this file only carries them over the wire.

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::node {

/// Child side: offer the tasks to the parent. Their inputs stay here until the answer
/// (core::action::DropTasks for the ones the parent took).
void NodeDriver::send_push(const core::action::PushTasks& push) {
  if (is_root() || push.tasks.empty()) return;
  net::msg::Push m;
  // The core pushes at most `buffer` tasks at once; max_received_ids bounds a message.
  for (std::size_t i = 0; i < push.tasks.size() && i < net::max_received_ids; ++i) {
    m.task_ids.push_back(push.tasks[i].id.value);
    m.bcs.push_back(push.bcs[i]);
  }
  transport_.send_parent(m);
}

/// Parent side: the status of this node for a child, or its answer to the child's push.
void NodeDriver::send_push_reply(const core::action::SendPushReply& reply) {
  const auto peer = children_.peer_of(reply.child.value);
  if (!peer) return;
  net::msg::PushReply m;
  m.answer = reply.answer;
  m.free = reply.status.free;
  m.queue = reply.status.queue;
  m.nbc = reply.status.nbc;
  for (const auto& t : reply.refused) m.refused.push_back(t.id.value);
  transport_.send_child(*peer, m);
}

/// Parent side: a child pushes tasks. A push of tasks it does not hold is a protocol
/// error of the child (drain drops it, core::event::TasksPushed names the culprit).
void NodeDriver::on_push(core::ChildId child, const net::msg::Push& push, double now) {
  core::event::TasksPushed e{child, {}, push.bcs};
  e.tasks.reserve(push.task_ids.size());
  for (auto id : push.task_ids) e.tasks.push_back(core::TaskRef{core::TaskId{id}});
  post(std::move(e));
  drain(now);
}

/// Child side: the parent's status or answer. An answer that does not fit the push in
/// flight is the parent's protocol error (drain treats it as a lost parent).
void NodeDriver::on_push_reply(const net::msg::PushReply& reply, double now) {
  core::event::PushAnswered e{reply.answer, {}, core::PushStatus{reply.free, reply.queue, reply.nbc}};
  e.refused.reserve(reply.refused.size());
  for (auto id : reply.refused) e.refused.push_back(core::TaskRef{core::TaskId{id}});
  post(std::move(e));
  drain(now);
}

/// One line with the node's migration counters (docs/migration.md), when it migrates.
void NodeDriver::log_migration() const {
  if (!sched_ || opt_.migration == core::MigrationMode::off) return;
  const core::Migration& m = sched_->migration();
  log_.info("{}: migration {}{}: {} pulls sent, {} tasks pulled in, {} pushes sent, {} tasks pushed in, "
               "{} tasks given away, {} of its pushed tasks refused",
               opt_.name, core::to_string(m.mode()),
               m.balance() == core::BalanceMode::off ? std::string() : std::string(", balance ") + core::to_string(m.balance()),
               m.pulls_sent(), m.tasks_pulled(), m.pushes_sent(),
               m.tasks_pushed_in(), m.tasks_given(), m.push_refused());
}

}  // namespace treefarm::node
