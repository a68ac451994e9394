/// @file NodeSchedulerMigration.cpp
/// NodeScheduler's task migration: pulls, returned and pushed tasks, the answers to pushes.

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/core/policies/PlanFollower.hpp"

namespace treefarm::core {

// ---- task migration (papers/lee2010 slides 15-16; docs/migration.md) ----------------

/// The parent pulls: waiting tasks from the back of the buffer that satisfy the
/// backfilling counter rule go back to it, the rest of the pull is rejected. This node
/// forgets the tasks (the parent holds their inputs and its record of them).
void NodeScheduler::pull_requested(const event::PullRequested& e, std::vector<Action>& out) {
  action::ReturnTasks back;
  const auto picked = migration_.pick_for_pull(state_, e.count, e.nbc);  // descending
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    const TaskRef t = state_.buffer[*it];
    back.tasks.push_back(t);
    back.bcs.push_back(migration_.bc(t.id));
  }
  for (std::size_t i : picked) {
    migration_.gave_back(state_.buffer[i].id);
    buffered_ids_.erase(state_.buffer[i].id);
    state_.buffer.erase(state_.buffer.begin() + static_cast<std::ptrdiff_t>(i));
  }
  back.rejected = e.count - static_cast<std::uint32_t>(picked.size());
  out.push_back(std::move(back));
}

/// A task `child` held comes back to this node, returned on a pull or taken from a push
/// (PULL or PUSH, lee2010 slide 16): it leaves the child's holding record and demand, its deadline
/// goes stale, and it keeps the backfilling counter `bc` the child gave it.
void NodeScheduler::take_back(std::pmr::unordered_map<TaskId, Holding>::iterator held, ChildState& holder, ChildId child, TaskRef t,
                              std::uint32_t bc) {
  in_flight_.erase(held);
  if (holder.in_flight > 0) --holder.in_flight;
  release(Target::to_child(child), t);
  drop_stale_deadlines();
  migration_.set_bc(t.id, bc);
  state_.returned_by[t.id] = child;
}

/// A child gave tasks back: its holding record of each moves to this node's buffer (at
/// the front: they were sent before anything buffered now). A late copy's holder giving
/// its copy back just drops that copy. Everything is checked before anything changes.
void NodeScheduler::tasks_returned(const Event& event, const event::TasksReturned& e) {
  auto child = state_.children.find(e.child);
  if (child == state_.children.end()) reject(event, "tasks returned by unknown child " + std::to_string(e.child.value));
  if (e.tasks.size() != e.bcs.size()) reject(event, "one backfilling counter per task is required");
  if (e.tasks.size() + e.rejected == 0 || e.tasks.size() + e.rejected > migration_.outstanding(e.child))
    reject(event, "an answer to a pull that was not asked (" + std::to_string(e.tasks.size()) + " tasks, " +
                      std::to_string(e.rejected) + " rejected, " + std::to_string(migration_.outstanding(e.child)) +
                      " asked)");
  const Target from = Target::to_child(e.child);
  for (std::size_t i = 0; i < e.tasks.size(); ++i) {
    try { check_task(e.tasks[i], "returned task"); } catch (const ProtocolError& err) { reject(event, err.what()); }
    auto it = in_flight_.find(e.tasks[i].id);
    const bool held = it != in_flight_.end() && it->second.to == from;
    if (!held && !holds_late_copy(e.tasks[i].id, from))
      reject(event, "task " + std::to_string(e.tasks[i].app().value) + ":" + std::to_string(e.tasks[i].id.index()) +
                        " returned, which this child does not hold");
    for (std::size_t j = 0; j < i; ++j)
      if (e.tasks[j] == e.tasks[i]) reject(event, "a task returned twice");
  }
  std::vector<TaskRef> back;
  for (std::size_t i = 0; i < e.tasks.size(); ++i) {
    const TaskRef t = e.tasks[i];
    if (auto it = in_flight_.find(t.id); it != in_flight_.end() && it->second.to == from) {
      take_back(it, child->second, e.child, t, e.bcs[i]);
      back.push_back(t);
    } else if (auto lc = state_.late_copies.find(t.id); lc != state_.late_copies.end()) {
      std::erase(lc->second, from);  // the task lives on elsewhere
      if (lc->second.empty()) state_.late_copies.erase(lc);
    }
  }
  state_.buffer.insert(state_.buffer.begin(), back.begin(), back.end());
  for (const TaskRef t : back) buffered_ids_.insert(t.id);
  refresh_constrained();
  migration_.count_pulled(back.size());
  migration_.answered(e.child, e.tasks.size(), e.rejected, state_.now);
}

/// A child pushes waiting tasks it holds (PUSH, slide 16): this node takes as many as its
/// idle requesters other than that child can use now (Migration::status_for: it still
/// fits), in the order pushed, and refuses the rest, which stay with the child. A taken
/// task's holding record moves to this node's buffer (the inputs are here already), as
/// for a pull. Everything is checked before anything changes.
void NodeScheduler::tasks_pushed(const Event& event, const event::TasksPushed& e) {
  auto child = state_.children.find(e.child);
  if (child == state_.children.end()) reject(event, "tasks pushed by unknown child " + std::to_string(e.child.value));
  if (e.tasks.empty() || e.tasks.size() != e.bcs.size()) reject(event, "a push needs tasks, one backfilling counter each");
  const Target from = Target::to_child(e.child);
  for (std::size_t i = 0; i < e.tasks.size(); ++i) {
    try { check_task(e.tasks[i], "pushed task"); } catch (const ProtocolError& err) { reject(event, err.what()); }
    auto it = in_flight_.find(e.tasks[i].id);
    if ((it == in_flight_.end() || it->second.to != from) && !holds_late_copy(e.tasks[i].id, from))
      reject(event, "task " + std::to_string(e.tasks[i].app().value) + ":" + std::to_string(e.tasks[i].id.index()) +
                        " pushed, which this child does not hold");
    for (std::size_t j = 0; j < i; ++j)
      if (e.tasks[j] == e.tasks[i]) reject(event, "a task pushed twice");
  }
  std::uint32_t room = migration_.status_for(state_, e.child).free;
  std::vector<TaskRef> taken, refused;
  for (std::size_t i = 0; i < e.tasks.size(); ++i) {
    const TaskRef t = e.tasks[i];
    auto it = in_flight_.find(t.id);
    // A late copy's holder keeps its copy (the task lives on elsewhere too): refused.
    if (room == 0 || it == in_flight_.end() || it->second.to != from) {
      refused.push_back(t);
      continue;
    }
    --room;
    take_back(it, child->second, e.child, t, e.bcs[i]);
    taken.push_back(t);
  }
  state_.buffer.insert(state_.buffer.begin(), taken.begin(), taken.end());
  for (const TaskRef& t : taken) buffered_ids_.insert(t.id);
  refresh_constrained();
  migration_.count_pushed_in(taken.size());
  migration_.answer_push(e.child, std::move(refused));
}

/// The parent's status, or its answer to this node's push: the tasks it took are
/// forgotten here (the adapter drops their inputs), the refused ones wait here again.
void NodeScheduler::push_answered(const Event& event, const event::PushAnswered& e, std::vector<Action>& out) {
  if (state_.config.is_root) reject(event, "the root has no parent");
  if (e.status.free > max_pending_requests) reject(event, "a push status of " + std::to_string(e.status.free) + " free requesters");
  if (!e.answer && !e.refused.empty()) reject(event, "a push status that refuses tasks");
  if (e.answer) {
    std::vector<TaskRef> taken;
    try {
      taken = migration_.push_answered(state_, e.refused);
    } catch (const std::invalid_argument& err) {
      reject(event, err.what());
    }
    if (!taken.empty()) out.push_back(action::DropTasks{std::move(taken)});
  }
  migration_.heard_status(e.status);
}

/// A re-plan (docs/live-model.md) lowered some child's rate: the tasks it holds beyond
/// its share of the buffer under the new plan — B · its rate / the largest rate of any
/// requester, at least its cores' worth — would wait there while faster nodes idle, so
/// they are taken back with a pull (papers/lee2010 slide 16: the parent still holds their
/// inputs; ownership moves back, exactly once is kept) and dispatched by the new plan.
void NodeScheduler::reclaim_after_replan(std::vector<Action>& out) {
  if (!plan_) return;
  for (const auto& [id, c] : state_.children) {
    const auto keep = held_share(*plan_, state_.config.buffer, c.info.name, c.info.cores);
    if (!keep) continue;
    const std::uint64_t held = c.in_flight;
    const std::uint64_t asked = migration_.outstanding(id);
    if (held <= *keep + asked) continue;
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(held - *keep - asked, state_.config.buffer));
    out.push_back(migration_.reclaim(id, count));
  }
}

/// The end of the bag (docs/live-model.md, "The end of the bag"): the root has no task left
/// to send — its bag is drawn and its buffer empty — while requesters wait. A child's
/// waiting tasks then finish at (tasks it holds) / (its planned rate) seconds, and nothing
/// else will ever reach the requesters: each waiting task that would finish sooner at a
/// requester than where it waits is taken back with a pull (papers/lee2010 slide 16:
/// receiver-initiated, the parent holds the inputs and ownership moves back with the task,
/// so exactly once is kept) and goes to a requester, never back to that child (returned_by).
/// Only as many as the requesters ask for now (a task taken back with no requester for it
/// would go back to its donor when it asks). Greedy, one task at a time: from the child
/// whose queue ends last to the requester whose queue would end first, while that moves
/// the task's finish earlier. Rates are the plan's (the last re-plan's, else the node's),
/// tasks/s over every application, and only under a policy that follows that plan
/// (Policy::follows_plan: lp); a child keeps its cores' worth (they run now). Before the
/// bag is drawn nothing moves, so a steady run does not churn tasks, and a task is given
/// back by a node at most once (visited once).
void NodeScheduler::reclaim_at_end_of_bag(std::vector<Action>& out) {
  if (!state_.config.is_root || !state_.buffer.empty() || state_.requests.empty()) return;
  const std::optional<NodePlan>& plan = plan_ ? plan_ : state_.config.plan;
  if (!plan || !policy_->follows_plan()) return;
  for (std::size_t k = 0; k < state_.config.apps.size(); ++k)
    if (state_.source_remaining(AppId{static_cast<std::uint32_t>(k)}) > 0) return;
  struct Queue {
    std::optional<ChildId> child;  ///< nullopt: this node's executor
    double rate = 0;               ///< tasks/s
    double held = 0;               ///< tasks there, or on their way there
    double keep = 0;               ///< tasks it runs at once (not taken back)
    std::uint64_t asks = 0;        ///< pending requests: tasks it can take now
    bool may_give = false;
    std::uint32_t take = 0;
  };
  std::vector<Queue> queues;
  std::uint64_t returning = 0;
  for (const auto& [id, c] : state_.children) {
    const auto it = plan->children.find(c.info.name);
    Queue q;
    q.child = id;
    q.rate = it == plan->children.end() ? 0.0 : planned_total(it->second);
    const std::uint32_t asked = migration_.outstanding(id);
    returning += asked;
    q.held = static_cast<double>(c.in_flight) - asked;
    q.keep = std::max<std::uint32_t>(1, c.info.cores);
    q.may_give = q.held > q.keep && !migration_.on_hold(id, state_.now);
    queues.push_back(q);
  }
  if (state_.local_requests > 0) queues.push_back(Queue{std::nullopt, planned_total(plan->local), 0, 0, 0, false, 0});
  for (const PendingRequest& r : state_.requests)
    for (Queue& q : queues)
      if (q.rate > 0 && (r.from.local ? !q.child : (q.child && *q.child == r.from.child))) ++q.asks;
  const auto finish = [](const Queue& q, double tasks) {
    return q.rate > 0 ? tasks / q.rate : std::numeric_limits<double>::infinity();
  };
  // The requester whose queue, one task longer, would end first (other than `not_q`).
  const auto first_free = [&](const Queue* not_q) {
    Queue* best = nullptr;
    for (Queue& q : queues)
      if (q.asks > 0 && &q != not_q && (!best || finish(q, q.held + 1) < finish(*best, best->held + 1))) best = &q;
    return best;
  };
  // Tasks already on their way back go first.
  for (std::uint64_t i = 0; i < returning; ++i)
    if (Queue* q = first_free(nullptr)) {
      q->held += 1;
      --q->asks;
    }
  for (std::uint32_t moves = 0; moves < state_.config.buffer; ++moves) {
    Queue* from = nullptr;
    for (Queue& q : queues)
      if (q.may_give && q.held > q.keep && (!from || finish(q, q.held) > finish(*from, from->held))) from = &q;
    if (!from) break;
    Queue* to = first_free(from);
    if (!to || !(finish(*to, to->held + 1) < finish(*from, from->held))) break;
    from->held -= 1;
    to->held += 1;
    --to->asks;
    ++from->take;
  }
  for (const Queue& q : queues)
    if (q.take > 0) out.push_back(migration_.reclaim(*q.child, q.take));
}

}  // namespace treefarm::core
