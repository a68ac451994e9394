#include "runtime/core/NodeScheduler.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "runtime/core/Overloaded.hpp"

namespace treefarm::core {

namespace {
constexpr double bandwidth_smoothing = 0.2;  // weight of a new observation (EWMA)
constexpr double turnaround_smoothing = 0.2;  // the same for a child's send-to-result time

// Something below this node has asked for work: a pending request, a task started on the
// executor, or a connected child that was sent a task.
bool has_consumer(const NodeState& s) {
  if (!s.requests.empty()) return true;
  for (auto n : s.started_local)
    if (n > 0) return true;
  for (const auto& [id, c] : s.children)
    if (c.sent > 0) return true;
  return false;
}
}  // namespace

std::string_view event_name(const Event& e) {
  // Indexed like the alternatives of Event (Events.hpp), in the same order.
  static constexpr std::array<std::string_view, std::variant_size_v<Event>> names{
      "TaskArrived", "WorkRequested", "SendDone", "LocalTaskFinished", "ResultArrived",
      "ChildJoined", "ChildLeft", "TransferObserved", "Tick", "PolicyMessage",
      "TasksReopened", "PullRequested", "TasksReturned", "TasksPushed", "PushAnswered",
      "CapacityReported", "PlanChanged"};
  static_assert(names.back() != std::string_view{}, "one name per alternative of Event");
  return names[e.index()];
}

bool fits(const AppParams& app, std::uint32_t cores, std::uint64_t memory, std::uint64_t disk, double speed) {
  // papers/lee2010 slide 19: every requirement is either met or "don't care".
  if (cores > 0 && app.cores_per_task > cores) return false;
  if (app.memory_per_task > 0 && memory > 0 && app.memory_per_task > memory) return false;
  if (app.disk_per_task > 0 && disk > 0 && app.disk_per_task > disk) return false;
  if (app.min_speed > 0 && speed > 0 && speed < app.min_speed) return false;
  return true;
}

std::optional<std::size_t> first_task_for(const NodeState& state, std::size_t request) {
  if (request >= state.requests.size() || state.buffer.empty()) return std::nullopt;
  const Target& from = state.requests[request].from;
  if (state.any_task_for_any()) {
    if (state.can_assign(from, state.buffer.front())) return std::size_t{0};
    return std::nullopt;
  }
  for (std::size_t t = 0; t < state.buffer.size(); ++t)
    if (state.can_assign(from, state.buffer[t])) return t;
  return std::nullopt;
}

std::uint64_t NodeState::source_remaining(AppId k) const {
  if (!config.is_root || k.value >= config.apps.size()) return 0;
  return config.apps[k.value].tasks - drawn[k.value] - done_ahead[k.value];
}

NodeScheduler::NodeScheduler(NodeConfig config, std::unique_ptr<Policy> policy)
    : policy_(std::move(policy)), migration_(config.migration, config.migration_retry, config.balance) {
  if (!policy_) throw std::invalid_argument("NodeScheduler: a policy is required");
  if (config.apps.empty()) throw std::invalid_argument("NodeScheduler: at least one application is required");
  if (config.buffer == 0) throw std::invalid_argument("NodeScheduler: buffer must be >= 1 task");
  for (const auto& app : config.apps) {
    if (!(app.weight > 0)) throw std::invalid_argument("NodeScheduler: application '" + app.name + "' needs weight > 0");
    if (app.tasks > TaskId::max_index) throw std::invalid_argument("NodeScheduler: application '" + app.name + "' has too many tasks");
  }
  if (!(config.deadline_factor >= 0) || !(config.deadline_floor >= 0))
    throw std::invalid_argument("NodeScheduler: task deadline factor and floor must be >= 0");
  const std::size_t k = config.apps.size();
  state_.config = std::move(config);
  state_.drawn.assign(k, 0);
  state_.done_ahead.assign(k, 0);
  state_.started_local.assign(k, 0);
  state_.local_seconds.assign(k, 0.0);
  state_.local_fits.assign(k, true);
  for (std::size_t i = 0; i < k; ++i) {
    const auto& app = state_.config.apps[i];
    state_.local_fits[i] = fits(app, state_.config.cores, state_.config.memory, state_.config.disk, state_.config.speed);
    reports_capacity_ = reports_capacity_ || app.constrained();
  }
  // Every node of a run has the same applications, so with requirements every node
  // reports, each before its first request (queue balancing alone does not report: it
  // normalises by the cores a child said in its Hello then).
  reports_capacity_ = reports_capacity_ && !state_.config.is_root;
  refresh_constrained();
  // Calibrated durations (§5.1.4) seed the learnt means.
  for (std::size_t i = 0; i < k && i < state_.config.local_seconds.size(); ++i)
    if (state_.config.local_seconds[i] > 0) state_.local_seconds[i] = state_.config.local_seconds[i];
  state_.port = !state_.config.one_port                  ? PortModel::multi_port
                : policy_->one_port_per_application()    ? PortModel::one_port_per_app
                                                         : PortModel::one_port;
  if (state_.config.is_root) {
    done_.resize(k);
    for (std::size_t i = 0; i < k; ++i) {
      done_[i].assign(state_.config.apps[i].tasks, false);
      total_tasks_ += state_.config.apps[i].tasks;
    }
    const auto& before = state_.config.done_before;
    if (!before.empty()) {
      if (before.size() != k) throw std::invalid_argument("NodeScheduler: done_before needs one entry per application");
      for (std::size_t i = 0; i < k; ++i) {
        if (before[i].empty()) continue;
        if (before[i].size() != state_.config.apps[i].tasks)
          throw std::invalid_argument("NodeScheduler: done_before of application '" + state_.config.apps[i].name +
                                      "' has " + std::to_string(before[i].size()) + " entries, expected " +
                                      std::to_string(state_.config.apps[i].tasks));
        done_[i] = before[i];
        const auto n = static_cast<std::uint64_t>(std::count(before[i].begin(), before[i].end(), true));
        completed_count_ += n;
        state_.done_ahead[i] = n;
        skip_done_before(i);
      }
      state_.config.done_before.clear();  // done_ holds it now
    }
  }
  policy_->start(state_);
}

std::vector<Action> NodeScheduler::start(Seconds now) {
  state_.now = std::max(state_.now, now);
  std::vector<Action> out;
  if (state_.config.is_root && total_tasks_ > 0 && completed_count_ == total_tasks_ && !complete_announced_) {
    complete_announced_ = true;  // resumed with everything already done
    out.push_back(action::RunComplete{});
  }
  pump(out);
  policy_->take_messages(state_, out);
  return out;
}

std::optional<Seconds> NodeScheduler::next_deadline() const {
  auto due = policy_->next_deadline(state_);
  if (auto m = migration_.next_deadline(state_); m && (!due || *m < *due)) due = m;
  if (!deadlines_.empty() && (!due || deadlines_.top().first < *due)) due = deadlines_.top().first;
  return due;
}

std::optional<Seconds> NodeScheduler::deadline_of(TaskId task) const {
  auto it = in_flight_.find(task);
  if (it == in_flight_.end() || it->second.deadline < 0) return std::nullopt;
  return it->second.deadline;
}

std::vector<Action> NodeScheduler::handle(const Event& event, Seconds now) {
  std::vector<Action> out;
  handle_into(event, now, out);
  return out;
}

void NodeScheduler::handle_into(const Event& event, Seconds now, std::vector<Action>& out) {
  const Seconds before = state_.now;
  state_.now = std::max(state_.now, now);
  const auto first = static_cast<std::ptrdiff_t>(out.size());
  try {
    apply(event, out);
  } catch (const ProtocolError&) {
    state_.now = before;  // a rejected event leaves the state unchanged
    out.erase(out.begin() + first, out.end());
    throw;
  }
  // Only a push is answered (tasks_pushed): not on the per-task path.
  const bool answering = std::holds_alternative<event::TasksPushed>(event);
  policy_->observe(state_, event);
  expire_deadlines(out);
  pump(out);
  policy_->take_messages(state_, out);
  // A push's answer goes before any task sent in the same step: a task taken from a push
  // may go straight back to the child that pushed it, which must first learn that the
  // parent took it (else it still holds the task and takes the new copy for a duplicate).
  // The answer's status is the one after this step's dispatch.
  if (answering)
    std::stable_partition(out.begin() + first, out.end(), [](const Action& a) {
      const auto* reply = std::get_if<action::SendPushReply>(&a);
      return reply && reply->answer;
    });
}

void NodeScheduler::reject(const Event& event, const std::string& why) const {
  throw ProtocolError(std::string(event_name(event)) + " rejected by " +
                      (state_.config.is_root ? "the root" : "a worker") + " node: " + why +
                      " (buffer " + std::to_string(state_.buffer.size()) + "/" +
                      std::to_string(state_.config.buffer) + ", requested " +
                      std::to_string(state_.requested_from_parent) + ", pending requests " +
                      std::to_string(state_.requests.size()) + ")");
}

void NodeScheduler::check_task(TaskRef task, const char* what) const {
  const auto k = task.app().value;
  if (k >= state_.config.apps.size())
    throw ProtocolError(std::string(what) + ": unknown application " + std::to_string(k));
  if (task.id.index() >= state_.config.apps[k].tasks)
    throw ProtocolError(std::string(what) + ": task index " + std::to_string(task.id.index()) +
                        " out of range for application '" + state_.config.apps[k].name + "'");
}

void NodeScheduler::apply(const Event& event, std::vector<Action>& out) {
  std::visit(Overloaded{
      [&](const event::TaskArrived& e) {
        if (state_.config.is_root) reject(event, "the root has no parent");
        if (state_.requested_from_parent == 0) reject(event, "no task was requested");
        try { check_task(e.task, "task"); } catch (const ProtocolError& err) { reject(event, err.what()); }
        if (in_flight_.contains(e.task.id) ||
            (buffered_ids_.contains(e.task.id) &&
             std::find(state_.buffer.begin(), state_.buffer.end(), e.task) != state_.buffer.end()) ||
            std::find(reissue_.begin(), reissue_.end(), e.task) != reissue_.end())
          reject(event, "task " + std::to_string(e.task.id.value) + " is already here");
        --state_.requested_from_parent;
        state_.buffer.push_back(e.task);
        buffered_ids_.insert(e.task.id);
      },
      [&](const event::WorkRequested& e) {
        if (e.count == 0) reject(event, "a request for 0 tasks");
        if (!e.from.local && !state_.children.contains(e.from.child))
          reject(event, "request from unknown child " + std::to_string(e.from.child.value));
        if (state_.requests.size() + e.count > max_pending_requests) reject(event, "too many pending requests");
        for (std::uint32_t i = 0; i < e.count; ++i)
          state_.requests.push_back(PendingRequest{e.from, state_.now, next_seq_++});
        if (e.from.local) state_.local_requests += e.count;
      },
      [&](const event::SendDone& e) {
        // Under multi-port there is no port to free: adapters may report every send alike.
        if (state_.port == PortModel::one_port_per_app) {
          // A send to a child that left meanwhile was forgotten then: accepted, ignored.
          state_.sending.erase(e.child);
          state_.port_busy = !state_.sending.empty();
          return;
        }
        if (state_.config.one_port && !state_.port_busy) reject(event, "no send in progress");
        state_.port_busy = false;
      },
      [&](const event::LocalTaskFinished& e) {
        auto it = in_flight_.find(e.task.id);
        const bool live = it != in_flight_.end() && it->second.to.local;
        if (!live && !holds_late_copy(e.task.id, Target::executor()))
          reject(event, "the executor was not running this task");
        auto& mean = state_.local_seconds[e.task.app().value];
        mean = mean == 0 ? e.compute_seconds : 0.8 * mean + 0.2 * e.compute_seconds;
        if (!live) return late_copy_done(e.task, Target::executor(), out);
        note_result(e.task.id, Target::executor());
        in_flight_.erase(it);
        release(Target::executor(), e.task);
        task_done(e.task, out);
      },
      [&](const event::ResultArrived& e) {
        auto child = state_.children.find(e.child);
        if (child == state_.children.end()) reject(event, "result from unknown child " + std::to_string(e.child.value));
        try { check_task(e.task, "result"); } catch (const ProtocolError& err) { reject(event, err.what()); }
        if (state_.config.is_root && e.task.id.index() >= state_.drawn[e.task.app().value])
          reject(event, "result for a task never sent");
        // A result is accepted only from the child that holds the task: a late result
        // from a child that left (its tasks were re-queued), or a forged one for a task
        // sent elsewhere, is a protocol error and that child is dropped.
        // A re-issued task's earlier holder (task deadlines) may still report it.
        auto it = in_flight_.find(e.task.id);
        if (it == in_flight_.end() || !(it->second.to == Target::to_child(e.child))) {
          if (holds_late_copy(e.task.id, Target::to_child(e.child)))
            return late_copy_done(e.task, Target::to_child(e.child), out);
          reject(event, "result for task " + std::to_string(e.task.id.app().value) + ":" +
                            std::to_string(e.task.id.index()) + ", which this child does not hold");
        }
        if (it->second.deadline >= 0) {  // armed: its send time is known
          const Seconds took = state_.now - it->second.sent;
          auto& mean = child->second.turnaround;
          mean = mean == 0 ? took : (1 - turnaround_smoothing) * mean + turnaround_smoothing * took;
        }
        note_result(e.task.id, Target::to_child(e.child));
        in_flight_.erase(it);
        --child->second.in_flight;
        release(Target::to_child(e.child), e.task);
        drop_stale_deadlines();
        task_done(e.task, out);
      },
      [&](const event::ChildJoined& e) {
        if (state_.children.contains(e.child)) reject(event, "child " + std::to_string(e.child.value) + " already joined");
        capacity_changed_ = true;
        ChildState c;
        c.info = e.info;
        c.bandwidth = e.info.bandwidth;
        state_.children.emplace(e.child, c);
      },
      [&](const event::ChildLeft& e) {
        if (!state_.children.contains(e.child)) reject(event, "unknown child " + std::to_string(e.child.value));
        const Target gone = Target::to_child(e.child);
        std::vector<TaskRef> lost;
        for (auto it = in_flight_.begin(); it != in_flight_.end();) {
          if (it->second.to == gone) {
            lost.push_back(TaskRef{it->first});
            it = in_flight_.erase(it);
          } else {
            ++it;
          }
        }
        // Re-queued in task order, whatever the table's order.
        std::sort(lost.begin(), lost.end(), [](TaskRef a, TaskRef b) { return a.id < b.id; });
        drop_stale_deadlines();
        // Its late copies of re-issued tasks are gone with it.
        for (auto it = state_.late_copies.begin(); it != state_.late_copies.end();) {
          std::erase(it->second, gone);
          it = it->second.empty() ? state_.late_copies.erase(it) : std::next(it);
        }
        // Re-queue at the front, in task order, so they are done first and deterministically;
        // a task lost too often is given up instead. A task another child still holds a
        // late copy of must not go back to that child: it waits for another consumer.
        std::sort(lost.begin(), lost.end(), [](TaskRef a, TaskRef b) { return a.id < b.id; });
        std::vector<TaskRef> requeue;
        for (const TaskRef t : lost) {
          const auto n = ++losses_[t.id];
          if (n >= std::max<std::uint32_t>(1, state_.config.max_task_losses)) {
            losses_.erase(t.id);
            out.push_back(action::TaskAbandoned{t, n});
            task_done(t, out);
          } else if (state_.late_copies.contains(t.id)) {
            reissue_.push_back(t);
          } else {
            requeue.push_back(t);
          }
        }
        state_.buffer.insert(state_.buffer.begin(), requeue.begin(), requeue.end());
        for (const TaskRef t : requeue) buffered_ids_.insert(t.id);
        std::erase_if(state_.requests, [&](const PendingRequest& r) { return r.from == gone; });
        state_.children.erase(e.child);
        links_.erase(e.child);
        capacity_changed_ = true;
        std::erase_if(state_.returned_by, [&](const auto& r) { return r.second == e.child; });
        refresh_constrained();
        migration_.child_left(e.child);
        if (state_.port == PortModel::one_port_per_app) {
          state_.sending.erase(e.child);
          state_.port_busy = !state_.sending.empty();
        }
      },
      [&](const event::TransferObserved& e) {
        auto child = state_.children.find(e.child);
        if (child == state_.children.end() || !(e.seconds > 0) || !(e.bytes > 0)) return;
        // Through the link's fit (LinkFit): a transfer whose time is mostly latency is no
        // bandwidth sample, else small tasks would rank a fast link of long latency last.
        // Until a transfer measured the bandwidth, bytes/seconds stands in (one task size);
        // the first sample then replaces it.
        auto& link = links_[e.child];
        const auto sample = link.fit.add(e.bytes, e.seconds);
        if (!sample && link.fitted) return;
        const double observed = sample ? *sample : e.bytes / e.seconds;
        auto& bw = child->second.bandwidth;
        const bool first = bw <= 0 || (sample && !link.fitted);
        bw = first ? observed : (1 - bandwidth_smoothing) * bw + bandwidth_smoothing * observed;
        link.fitted = link.fitted || sample.has_value();
      },
      [&](const event::Tick&) {},
      [&](const event::PolicyMessage& e) {
        if (e.from_parent && state_.config.is_root) reject(event, "the root has no parent");
        if (!e.from_parent && !state_.children.contains(e.child))
          reject(event, "message from unknown child " + std::to_string(e.child.value));
        if (auto why = policy_->check_message(state_, e)) reject(event, *why);
      },
      [&](const event::TasksReopened& e) {
        if (!state_.config.is_root) reject(event, "only the root reopens tasks");
        std::vector<TaskRef> again;
        for (const TaskRef t : e.tasks) {
          check_task(t, "reopened task");
          auto slot = done_[t.app().value][t.id.index()];
          // Only tasks drawn in this run (not those a resumed run found done before).
          if (!slot || in_flight_.contains(t.id) || t.id.index() >= state_.drawn[t.app().value]) continue;
          slot = false;
          --completed_count_;
          again.push_back(t);
        }
        for (const TaskRef t : again)  // retried in another target when there is one
          if (const auto from = result_from(t.id)) state_.failed_in[t.id] = *from;
        if (!again.empty()) complete_announced_ = false;  // announced again when they are done
        std::sort(again.begin(), again.end(), [](TaskRef a, TaskRef b) { return a.id < b.id; });
        state_.buffer.insert(state_.buffer.begin(), again.begin(), again.end());
        for (const TaskRef t : again) buffered_ids_.insert(t.id);
      },
      [&](const event::PullRequested& e) {
        if (state_.config.is_root) reject(event, "the root has no parent");
        if (e.count == 0 || e.count > max_pending_requests) reject(event, "a pull of " + std::to_string(e.count) + " tasks");
        pull_requested(e, out);
      },
      [&](const event::TasksReturned& e) { tasks_returned(event, e); },
      [&](const event::CapacityReported& e) {
        auto child = state_.children.find(e.child);
        if (child == state_.children.end()) reject(event, "capacity of unknown child " + std::to_string(e.child.value));
        if (e.capacity.fits.size() != state_.config.apps.size())
          reject(event, "capacity for " + std::to_string(e.capacity.fits.size()) + " applications, the run has " +
                            std::to_string(state_.config.apps.size()));
        child->second.capacity = e.capacity;
        capacity_changed_ = true;
        refresh_constrained();
      },
      [&](const event::TasksPushed& e) { tasks_pushed(event, e); },
      [&](const event::PushAnswered& e) { push_answered(event, e, out); },
      [&](const event::PlanChanged& e) {
        policy_->replan(state_, NodePlan{e.local, e.children});
        plan_ = NodePlan{e.local, e.children};
        reclaim_after_replan(out);
      }},
      event);
}

void NodeScheduler::release(const Target& holder, TaskRef task) {
  const Demand d = demand_of(state_.config.apps[task.app().value]);
  if (holder.local) {
    state_.local_held -= d;
  } else if (auto c = state_.children.find(holder.child); c != state_.children.end()) {
    c->second.held -= d;
  }
}

void NodeScheduler::refresh_constrained() {
  bool c = std::find(state_.local_fits.begin(), state_.local_fits.end(), false) != state_.local_fits.end();
  for (const auto& [id, child] : state_.children)
    if (child.capacity && std::find(child.capacity->fits.begin(), child.capacity->fits.end(), false) != child.capacity->fits.end())
      c = true;
  state_.constrained = c || !state_.returned_by.empty();
}

SubtreeCapacity NodeScheduler::subtree_capacity() const {
  SubtreeCapacity s;
  const std::size_t k = state_.config.apps.size();
  const bool computes = state_.config.cores > 0;
  s.fits.assign(k, false);
  if (computes) {
    for (std::size_t i = 0; i < k; ++i) s.fits[i] = state_.local_fits[i];
    s.cores = state_.config.cores;
    s.memory = state_.config.memory;
    s.disk = state_.config.disk;
  }
  for (const auto& [id, c] : state_.children) {
    // Not reported yet: it will before its first request (every node of a run with
    // requirements reports); until then it counts for nothing here, so that this node
    // never claims for it what its report may deny.
    if (!c.capacity) continue;
    for (std::size_t i = 0; i < k; ++i) s.fits[i] = s.fits[i] || c.capacity->fits[i];
    s.cores += c.capacity->cores;
    s.memory += c.capacity->memory;
    s.disk += c.capacity->disk;
  }
  return s;
}

/// Root, with requirements: a request that no buffered task fits would wait while the
/// buffer is full of tasks only others can run. Draw, beyond B, one task of an
/// application it fits (the weights' mix) for the oldest such request. True if drawn.
bool NodeScheduler::draw_for_unserved() {
  if (state_.buffer.size() >= std::size_t{state_.config.buffer} + state_.requests.size()) return false;
  for (std::size_t r = 0; r < state_.requests.size(); ++r) {
    const Target& from = state_.requests[r].from;
    if (!state_.can_serve(from) || first_task_for(state_, r)) continue;
    auto k = policy_->draw_fitting(state_, [&](AppId a) { return state_.fits(from, a); });
    if (!k) continue;
    draw(*k, "requirements");
    return true;
  }
  return false;
}

/// Root: the next task of application k from the bag into the buffer (`why`: for the error).
void NodeScheduler::draw(AppId k, const char* why) {
  if (k.value >= state_.config.apps.size() || state_.source_remaining(k) == 0)
    throw std::logic_error(std::string("policy drew (") + why + ") from an empty or unknown application");
  state_.buffer.push_back(TaskRef{TaskId::make(k, state_.drawn[k.value]++)});
  buffered_ids_.insert(state_.buffer.back().id);
  skip_done_before(k.value);
}

void NodeScheduler::task_done(TaskRef task, std::vector<Action>& out) {
  reissues_.erase(task.id);
  losses_.erase(task.id);
  if (!state_.config.is_root) {
    out.push_back(action::ForwardResult{task});
    return;
  }
  auto slot = done_[task.app().value][task.id.index()];
  if (slot) {
    ++duplicate_count_;
    out.push_back(action::TaskCompleted{task, true});
    return;
  }
  done_[task.app().value][task.id.index()] = true;
  ++completed_count_;
  out.push_back(action::TaskCompleted{task, false});
  if (completed_count_ == total_tasks_ && !complete_announced_) {
    complete_announced_ = true;
    out.push_back(action::RunComplete{});
  }
}

void NodeScheduler::skip_done_before(std::size_t k) {
  auto& cursor = state_.drawn[k];
  const auto tasks = state_.config.apps[k].tasks;
  // Past the cursor, only tasks done in an earlier run are marked done.
  while (cursor < tasks && state_.done_ahead[k] > 0 && done_[k][cursor]) {
    ++cursor;
    --state_.done_ahead[k];
  }
}

void NodeScheduler::pump(std::vector<Action>& out) {
  const bool root = state_.config.is_root;
  const std::size_t capacity = state_.config.buffer;
  // A given-back task that left the buffer otherwise (pulled on by this node's parent, a
  // late copy's result) is forgotten (only in runs with migration, and only then).
  if (!state_.returned_by.empty()) {
    std::erase_if(state_.returned_by, [&](const auto& r) { return !buffered_ids_.contains(r.first); });
    if (state_.returned_by.empty()) refresh_constrained();
  }
  // Before any request: the parent sends a task only where it fits (lee2010 slide 19).
  // Recomputed only when the subtree changed, not per task.
  if (reports_capacity_ && capacity_changed_) {
    capacity_changed_ = false;
    SubtreeCapacity now = subtree_capacity();
    if (!reported_ || *reported_ != now) {
      reported_ = now;
      out.push_back(action::ReportCapacity{std::move(now)});
    }
  }
  for (;;) {
    if (root) {
      const std::size_t stock = std::max(capacity, policy_->root_stock(state_));
      while (state_.buffer.size() < stock) {
        auto k = policy_->next_source_app(state_);
        if (!k) break;
        draw(*k, "the stock");
      }
    }
    bool progressed = false;
    serve_reissues(out);
    while (auto choice = policy_->select(state_)) {
      if (choice->request >= state_.requests.size() || choice->task >= state_.buffer.size())
        throw std::logic_error("policy chose a request or task that does not exist");
      const TaskRef task = state_.buffer[choice->task];
      if (!state_.can_assign(state_.requests[choice->request].from, task))
        throw std::logic_error("policy chose a request it cannot serve now");
      migration_.on_assign(state_.buffer, choice->task);
      state_.buffer.erase(state_.buffer.begin() + static_cast<std::ptrdiff_t>(choice->task));
      buffered_ids_.erase(task.id);
      if (!state_.failed_in.empty()) state_.failed_in.erase(task.id);
      if (!state_.returned_by.empty() && state_.returned_by.erase(task.id) > 0) refresh_constrained();
      assign(choice->request, task, out);
      progressed = true;
    }
    if (root && !progressed && state_.constrained && draw_for_unserved()) continue;
    if (!root || !progressed) break;
  }
  // Figure 1, line 2, once something below has asked for work: a node whose subtree
  // cannot compute (no cores anywhere) would otherwise hoard B tasks forever.
  if (!root && has_consumer(state_)) {
    const std::uint64_t held = state_.buffer.size() + state_.requested_from_parent;
    // Fewer messages: with a large buffer the node asks in batches of at least B/8 (it still
    // holds 7B/8 or more, so nothing waits for the refill), unless its buffer is empty and
    // nothing is on its way; with B < 16 that is one task, the paper's rule. Each exchange
    // costs a round trip's wake-ups and syscalls; with tiny tasks and one-task requests
    // that, not the tasks, bounds dispatch (docs/benchmarks.md, "Requests in batches").
    // A forwarder's buffer is empty most of the time (it hands tasks on as they come): with
    // tasks on their way it waits for the batch too, or it would ask for every task or two.
    const std::uint64_t batch = capacity >= 16 ? capacity / 8 : 1;
    const bool starved = state_.buffer.empty() && state_.requested_from_parent == 0;
    if (held < capacity && (capacity - held >= batch || starved)) {
      const auto room = static_cast<std::uint32_t>(capacity - held);
      state_.requested_from_parent += room;
      out.push_back(action::RequestWork{room});
    }
  }
  if (auto pull = migration_.next_pull(state_)) out.push_back(*pull);
  reclaim_at_end_of_bag(out);
  if (auto push = migration_.next_push(state_)) out.push_back(std::move(*push));
  for (auto& reply : migration_.push_replies(state_)) out.push_back(std::move(reply));
}

}  // namespace treefarm::core

namespace treefarm::core {

void NodeScheduler::assign(std::size_t index, TaskRef task, std::vector<Action>& out) {
  const PendingRequest request = state_.requests[index];
  state_.requests.erase(state_.requests.begin() + static_cast<std::ptrdiff_t>(index));
  if (request.from.local) --state_.local_requests;
  Holding& holding = in_flight_[task.id];
  holding = Holding{request.from};
  const Demand d = demand_of(state_.config.apps[task.app().value]);
  if (request.from.local) {
    state_.local_held += d;
    ++state_.started_local[task.app().value];
    out.push_back(action::StartTask{task});
  } else {
    auto& child = state_.children.at(request.from.child);
    ++child.in_flight;
    child.held += d;
    ++child.sent;
    if (state_.port == PortModel::one_port) state_.port_busy = true;
    if (state_.port == PortModel::one_port_per_app) {
      state_.sending[request.from.child] = task.app();
      state_.port_busy = true;
    }
    arm_deadline(request.from.child, task, holding);
    out.push_back(action::SendTask{request.from.child, task});
  }
  policy_->assigned(state_, request.from, task);
}

// ---- task deadlines (docs/fault-tolerance.md, "Task deadlines") ------------------
// Not in the papers: beaumont2006 §4 assumes that every node returns what it is sent.
// A child that keeps a task (hung, hostile, or far slower than its peers) would stall
// the end of the run; its task is given to another consumer, and the first result wins.

void NodeScheduler::arm_deadline(ChildId child, TaskRef task, Holding& holding) {
  const NodeConfig& cfg = state_.config;
  if (!(cfg.deadline_factor > 0)) return;
  const ChildState& c = state_.children.at(child);
  // Expected seconds until the result: the tasks its subtree holds (this one included),
  // each taking what one takes here (calibrated or learnt; an overestimate for a subtree
  // with more cores, which is the generous side), or the child's own mean turnaround.
  const double per_task = state_.local_seconds[task.app().value];
  const double expected = std::max(per_task * static_cast<double>(c.in_flight), c.turnaround);
  const Seconds deadline = state_.now + std::max(cfg.deadline_floor, cfg.deadline_factor * expected);
  holding.sent = state_.now;
  holding.deadline = deadline;
  deadlines_.push(deadline, task.id);
}

// The deadlines (DeadlineQueue) are removed lazily (a tree node per task cost
// an allocation and a rebalancing): a disarmed task's entry stays until it
// reaches the top, where it is dropped, so the top is always a live deadline
// (next_deadline() exact); the queue is rebuilt from in_flight_ when stale entries outnumber
// the live ones (a task held for long keeps the ones after it from reaching the top).
bool NodeScheduler::deadline_live(const DeadlineQueue::Entry& entry) const {
  auto it = in_flight_.find(entry.second);
  return it != in_flight_.end() && it->second.deadline == entry.first;
}

void NodeScheduler::drop_stale_deadlines() {
  while (!deadlines_.empty() && !deadline_live(deadlines_.top())) deadlines_.pop();
  if (deadlines_.size() > 2 * in_flight_.size() + 1024) {
    std::vector<DeadlineQueue::Entry> live;
    for (const auto& [id, h] : in_flight_)
      if (h.deadline >= 0) live.emplace_back(h.deadline, id);
    std::sort(live.begin(), live.end());
    deadlines_.clear();
    for (const auto& [deadline, id] : live) deadlines_.push(deadline, id);
  }
}

void NodeScheduler::expire_deadlines(std::vector<Action>& out) {
  (void)out;
  while (!deadlines_.empty() && deadlines_.top().first <= state_.now) {
    const auto entry = deadlines_.top();
    const TaskId id = entry.second;
    deadlines_.pop();
    if (!deadline_live(entry)) continue;  // a task no longer held there: a stale entry
    auto it = in_flight_.find(id);
    it->second.deadline = -1;  // expired: disarmed whatever happens next
    if (it->second.to.local) continue;
    auto& times = reissues_[id];
    if (times >= state_.config.max_reissues) continue;  // its holders are waited for now
    ++times;
    const Target holder = it->second.to;
    in_flight_.erase(it);
    if (auto c = state_.children.find(holder.child); c != state_.children.end() && c->second.in_flight > 0)
      --c->second.in_flight;
    release(holder, TaskRef{id});
    state_.late_copies[id].push_back(holder);
    reissue_.push_back(TaskRef{id});
    ++reissued_count_;
  }
  drop_stale_deadlines();
}

/// Re-issued tasks go to the oldest request that can take them from a consumer that
/// holds no copy (a second copy at the same child would be a protocol error there).
void NodeScheduler::note_result(TaskId id, const Target& from) {
  if (!state_.config.is_root) return;
  if (recent_results_.empty()) recent_results_.resize(recent_capacity);
  recent_results_[recent_next_] = {id, from};
  recent_next_ = (recent_next_ + 1) % recent_results_.size();
  recent_count_ = std::min(recent_count_ + 1, recent_results_.size());
}

std::optional<Target> NodeScheduler::result_from(TaskId id) const {
  const std::size_t n = recent_results_.size();
  for (std::size_t k = 1; k <= recent_count_; ++k)  // the latest first
    if (const auto& [task, from] = recent_results_[(recent_next_ + n - k) % n]; task == id) return from;
  return std::nullopt;
}

void NodeScheduler::serve_reissues(std::vector<Action>& out) {
  for (auto it = reissue_.begin(); it != reissue_.end();) {
    const TaskRef task = *it;
    std::optional<std::size_t> pick;
    for (std::size_t i = 0; i < state_.requests.size(); ++i) {
      const Target& from = state_.requests[i].from;
      if (holds_late_copy(task.id, from) || !state_.can_assign(from, task)) continue;
      pick = i;
      break;
    }
    if (!pick) {
      ++it;
      continue;
    }
    it = reissue_.erase(it);
    assign(*pick, task, out);
  }
}

bool NodeScheduler::holds_late_copy(TaskId task, const Target& t) const {
  auto it = state_.late_copies.find(task);
  return it != state_.late_copies.end() && std::find(it->second.begin(), it->second.end(), t) != it->second.end();
}

/// A late copy's holder reported the task: the first result wins. If the task is still
/// pending here (held by its new holder, or waiting), this result completes it and the
/// other copy becomes the late one; otherwise it is a duplicate, dropped.
void NodeScheduler::late_copy_done(TaskRef task, const Target& from, std::vector<Action>& out) {
  if (auto it = state_.late_copies.find(task.id); it != state_.late_copies.end()) {
    std::erase(it->second, from);
    if (it->second.empty()) state_.late_copies.erase(it);
  }
  bool pending = false;
  if (auto it = in_flight_.find(task.id); it != in_flight_.end()) {
    const Target live = it->second.to;
    in_flight_.erase(it);
    if (!live.local)
      if (auto c = state_.children.find(live.child); c != state_.children.end() && c->second.in_flight > 0)
        --c->second.in_flight;
    release(live, task);
    drop_stale_deadlines();
    state_.late_copies[task.id].push_back(live);
    pending = true;
  } else if (auto r = std::find(reissue_.begin(), reissue_.end(), task); r != reissue_.end()) {
    reissue_.erase(r);
    pending = true;
  } else if (auto b = buffered_ids_.contains(task.id) ? std::find(state_.buffer.begin(), state_.buffer.end(), task)
                                                      : state_.buffer.end();
             b != state_.buffer.end()) {
    state_.buffer.erase(b);
    buffered_ids_.erase(task.id);
    pending = true;
  }
  if (pending) {
    task_done(task, out);
    return;
  }
  ++late_duplicate_count_;
  if (state_.config.is_root) {
    ++duplicate_count_;
    out.push_back(action::TaskCompleted{task, true});
  } else {
    out.push_back(action::LateResultDropped{task, from});
  }
}

}  // namespace treefarm::core
