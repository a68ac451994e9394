#include "tests/runtime/core/TreeHarness.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "runtime/core/Overloaded.hpp"

namespace treefarm::core::testing {

namespace {

std::string task_name(TaskRef t) {
  return std::to_string(t.app().value) + ":" + std::to_string(t.id.index());
}
}  // namespace

std::string describe(const Event& e) {
  return std::visit(Overloaded{
      [](const event::TaskArrived& x) { return "TaskArrived " + task_name(x.task); },
      [](const event::WorkRequested& x) {
        return "WorkRequested " + (x.from.local ? std::string("executor") : "child " + std::to_string(x.from.child.value)) +
               " x" + std::to_string(x.count);
      },
      [](const event::SendDone& x) { return "SendDone " + std::to_string(x.child.value); },
      [](const event::LocalTaskFinished& x) { return "LocalTaskFinished " + task_name(x.task); },
      [](const event::ResultArrived& x) {
        return "ResultArrived child " + std::to_string(x.child.value) + " " + task_name(x.task);
      },
      [](const event::ChildJoined& x) { return "ChildJoined " + std::to_string(x.child.value); },
      [](const event::ChildLeft& x) { return "ChildLeft " + std::to_string(x.child.value); },
      [](const event::TransferObserved& x) { return "TransferObserved " + std::to_string(x.child.value); },
      [](const event::Tick&) { return std::string("Tick"); },
      [](const event::TasksReopened&) { return std::string("TasksReopened"); },
      [](const event::PullRequested& x) {
        return "PullRequested x" + std::to_string(x.count) + " nbc " + std::to_string(x.nbc);
      },
      [](const event::TasksReturned& x) {
        std::string out = "TasksReturned child " + std::to_string(x.child.value);
        for (const auto& t : x.tasks) out += " " + task_name(t);
        return out + " rejected " + std::to_string(x.rejected);
      },
      [](const event::TasksPushed& x) {
        std::string out = "TasksPushed child " + std::to_string(x.child.value);
        for (const auto& t : x.tasks) out += " " + task_name(t);
        return out;
      },
      [](const event::PushAnswered& x) {
        std::string out = x.answer ? "PushAnswered" : "PushStatus";
        for (const auto& t : x.refused) out += " refused " + task_name(t);
        return out + " free " + std::to_string(x.status.free) + " queue " + std::to_string(x.status.queue);
      },
      [](const event::CapacityReported& x) {
        std::string out = "CapacityReported child " + std::to_string(x.child.value) + " fits";
        for (bool f : x.capacity.fits) out += f ? " 1" : " 0";
        return out + " cores " + std::to_string(x.capacity.cores);
      },
      [](const event::PlanChanged& x) {
        return "PlanChanged (" + std::to_string(x.children.size()) + " children)";
      },
      [](const event::PolicyMessage& x) {
        return "PolicyMessage from " + (x.from_parent ? std::string("parent") : "child " + std::to_string(x.child.value)) +
               " (" + std::to_string(x.payload.size()) + " bytes)";
      }},
      e);
}

std::string describe(const Action& a) {
  return std::visit(Overloaded{
      [](const action::RequestWork& x) { return "RequestWork x" + std::to_string(x.count); },
      [](const action::SendTask& x) {
        return "SendTask child " + std::to_string(x.child.value) + " " + task_name(x.task);
      },
      [](const action::StartTask& x) { return "StartTask " + task_name(x.task); },
      [](const action::ForwardResult& x) { return "ForwardResult " + task_name(x.task); },
      [](const action::TaskCompleted& x) {
        return "TaskCompleted " + task_name(x.task) + (x.duplicate ? " (duplicate)" : "");
      },
      [](const action::RunComplete&) { return std::string("RunComplete"); },
      [](const action::TaskAbandoned& x) {
        return "TaskAbandoned " + task_name(x.task) + " after " + std::to_string(x.losses) + " losses";
      },
      [](const action::LateResultDropped& x) {
        return "LateResultDropped " + task_name(x.task) +
               (x.from.local ? std::string(" from the executor") : " from child " + std::to_string(x.from.child.value));
      },
      [](const action::SendPolicyMessage& x) {
        return "SendPolicyMessage to " + (x.to_parent ? std::string("parent") : "child " + std::to_string(x.child.value)) +
               " (" + std::to_string(x.payload.size()) + " bytes)";
      },
      [](const action::SendPull& x) {
        return "SendPull child " + std::to_string(x.child.value) + " x" + std::to_string(x.count) + " nbc " +
               std::to_string(x.nbc);
      },
      [](const action::ReturnTasks& x) {
        std::string out = "ReturnTasks";
        for (const auto& t : x.tasks) out += " " + task_name(t);
        return out + " rejected " + std::to_string(x.rejected);
      },
      [](const action::PushTasks& x) {
        std::string out = "PushTasks";
        for (const auto& t : x.tasks) out += " " + task_name(t);
        return out;
      },
      [](const action::SendPushReply& x) {
        std::string out = std::string(x.answer ? "AnswerPush" : "SendPushStatus") + " child " + std::to_string(x.child.value);
        for (const auto& t : x.refused) out += " refused " + task_name(t);
        return out + " free " + std::to_string(x.status.free) + " queue " + std::to_string(x.status.queue);
      },
      [](const action::DropTasks& x) {
        std::string out = "DropTasks";
        for (const auto& t : x.tasks) out += " " + task_name(t);
        return out;
      },
      [](const action::ReportCapacity& x) {
        std::string out = "ReportCapacity fits";
        for (bool f : x.capacity.fits) out += f ? " 1" : " 0";
        return out + " cores " + std::to_string(x.capacity.cores);
      }},
      a);
}

std::string node_name(std::size_t v) { return "n" + std::to_string(v); }

std::vector<std::optional<NodePlan>> proportional_plans(const TreeSpec& spec) {
  const std::size_t n = spec.nodes.size();
  const std::size_t k = spec.apps.size();
  double sum_w = 0;
  for (const auto& a : spec.apps) sum_w += a.weight;
  std::vector<NodePlan> plans(n);
  std::vector<std::vector<double>> subtree(n, std::vector<double>(k, 0.0));
  for (std::size_t v = 0; v < n; ++v) {
    plans[v].local.assign(k, 0.0);
    const auto& d = spec.nodes[v].task_seconds;
    for (std::size_t a = 0; a < k; ++a) {
      const double t = d.empty() ? 1.0 : d.size() == 1 ? d[0] : d.at(a);
      plans[v].local[a] = spec.nodes[v].cores * spec.apps[a].weight / sum_w / t;
    }
  }
  for (std::size_t v = n; v-- > 0;) {
    for (std::size_t a = 0; a < k; ++a) subtree[v][a] += plans[v].local[a];
    if (v > 0) {
      const std::size_t p = spec.nodes[v].parent;
      plans[p].children[node_name(v)] = subtree[v];
      for (std::size_t a = 0; a < k; ++a) subtree[p][a] += subtree[v][a];
    }
  }
  return {plans.begin(), plans.end()};
}

TreeHarness::TreeHarness(TreeSpec spec) : spec_(std::move(spec)) {
  if (spec_.nodes.empty()) throw std::invalid_argument("TreeHarness: at least a root is required");
  const std::size_t n = spec_.nodes.size();
  for (std::size_t v = 1; v < n; ++v)
    if (spec_.nodes[v].parent >= v) throw std::invalid_argument("TreeHarness: a parent must come before its child");
  if (spec_.plans.empty()) spec_.plans = proportional_plans(spec_);
  spec_.plans.resize(n);
  children_.resize(n);
  for (std::size_t v = 0; v < n; ++v) {
    NodeConfig config;
    config.name = node_name(v);
    config.is_root = v == 0;
    config.buffer = spec_.nodes[v].buffer;
    config.apps = spec_.apps;
    config.one_port = spec_.one_port;
    config.plan = spec_.plans[v];
    config.migration = spec_.migration;
    config.balance = spec_.balance;
    if (spec_.nodes[v].memory > 0) {
      config.cores = spec_.nodes[v].cores;
      config.memory = spec_.nodes[v].memory;
    }
    if (spec_.calibrated)
      for (std::size_t a = 0; a < spec_.apps.size(); ++a)
        config.local_seconds.push_back(duration(v, TaskRef{TaskId::make(AppId{static_cast<std::uint32_t>(a)}, 0)}));
    nodes_.push_back(std::make_unique<NodeScheduler>(std::move(config), make_policy(spec_.policy)));
    if (v > 0) {
      const std::size_t p = spec_.nodes[v].parent;
      if (p >= v) throw std::invalid_argument("TreeHarness: a parent must come before its child");
      children_[p].push_back(v);
    }
  }
  alive_.assign(n, true);
  asked_.assign(n, false);
  running_.assign(n, 0);
  tick_at_.assign(n, std::nullopt);
}

void TreeHarness::push(Seconds at, std::size_t to, std::size_t from, Event e) {
  queue_.push(Pending{at, seq_++, to, from, std::move(e)});
}

void TreeHarness::start() {
  for (std::size_t v = 1; v < nodes_.size(); ++v) {
    ChildInfo info;
    info.name = node_name(v);
    info.cores = spec_.nodes[v].cores;
    if (spec_.calibrated)
      info.bandwidth = spec_.nodes[v].link_bandwidth > 0 ? spec_.nodes[v].link_bandwidth : 1.0 / spec_.nodes[v].link_seconds;
    push(0, spec_.nodes[v].parent, spec_.nodes[v].parent, event::ChildJoined{ChildId{static_cast<std::uint32_t>(v)}, info});
  }
  for (std::size_t v = 0; v < nodes_.size(); ++v) {
    auto actions = nodes_[v]->start(0);
    for (const auto& a : actions) log_.push_back(Record{0, v, a});
    carry_out(v, actions);
    schedule_tick(v);
  }
  for (std::size_t v = 0; v < nodes_.size(); ++v) {
    if (spec_.nodes[v].cores > 0)
      push(0, v, v, event::WorkRequested{Target::executor(), spec_.nodes[v].cores});
  }
}

void TreeHarness::kill(std::size_t v, Seconds at) {
  if (v == 0 || v >= nodes_.size()) throw std::invalid_argument("TreeHarness::kill: not a worker");
  queue_.push(Pending{at, seq_++, v, v, std::nullopt});
}

void TreeHarness::kill_now(std::size_t v) {
  std::vector<std::size_t> stack{v};
  while (!stack.empty()) {
    const std::size_t u = stack.back();
    stack.pop_back();
    alive_[u] = false;
    for (auto c : children_[u]) stack.push_back(c);
  }
  deliver(spec_.nodes[v].parent, event::ChildLeft{ChildId{static_cast<std::uint32_t>(v)}});
}

bool TreeHarness::step() {
  if (queue_.empty()) return false;
  Pending p = queue_.top();
  queue_.pop();
  now_ = p.time;
  if (!p.event) {
    if (alive_[p.to]) kill_now(p.to);
    return true;
  }
  // The dead receive nothing, and what they sent is lost with their connection.
  if (!alive_[p.to] || !alive_[p.from]) return true;
  if (std::holds_alternative<event::Tick>(*p.event)) {
    if (!tick_at_[p.to] || *tick_at_[p.to] != p.time) return true;  // superseded
    tick_at_[p.to].reset();
  }
  deliver(p.to, *p.event);
  return true;
}

void TreeHarness::run(std::size_t max_steps) {
  for (std::size_t i = 0; i < max_steps; ++i) {
    if (!step()) return;
  }
  ADD_FAILURE() << "TreeHarness::run: still busy after " << max_steps << " steps";
}

void TreeHarness::deliver(std::size_t v, const Event& e) {
  NodeScheduler& node = *nodes_[v];
  Step info;
  info.node = v;
  info.time = now_;
  info.event = &e;
  info.buffer_before = node.state().buffer.size();
  info.requested_before = node.state().requested_from_parent;
  if (std::holds_alternative<event::WorkRequested>(e)) asked_[v] = true;
  log_.push_back(Record{now_, v, e});
  const std::vector<Action> actions = node.handle(e, now_);
  if (std::holds_alternative<event::LocalTaskFinished>(e)) {
    // The executor frees the slot and, having reported the finish, asks for a task again.
    --running_[v];
    push(now_, v, v, event::WorkRequested{Target::executor(), 1});
  }
  for (const auto& a : actions) log_.push_back(Record{now_, v, a});
  carry_out(v, actions);
  schedule_tick(v);
  info.actions = &actions;
  if (on_step) on_step(*this, info);
}

void TreeHarness::schedule_tick(std::size_t v) {
  auto d = nodes_[v]->next_deadline();
  if (!d || nodes_[0]->run_complete()) return;
  const Seconds at = std::max(*d, now_);
  if (tick_at_[v] && *tick_at_[v] <= at) return;
  tick_at_[v] = at;
  push(at, v, v, event::Tick{});
}

Seconds TreeHarness::link_time(std::size_t child, TaskRef task) const {
  const NodeSpec& c = spec_.nodes[child];
  const double bytes = spec_.apps.at(task.app().value).bytes;
  if (c.link_bandwidth > 0 && bytes > 0) return bytes / c.link_bandwidth;
  return c.link_seconds;
}

Seconds TreeHarness::duration(std::size_t v, TaskRef task) const {
  const auto& d = spec_.nodes[v].task_seconds;
  if (d.empty()) return 1.0;
  return d.size() == 1 ? d[0] : d.at(task.app().value);
}

void TreeHarness::carry_out(std::size_t v, const std::vector<Action>& actions) {
  const NodeSpec& me = spec_.nodes[v];
  const std::size_t parent = me.parent;
  for (const auto& a : actions) {
    std::visit(Overloaded{
        [&](const action::RequestWork& x) {
          if (v == 0) {
            ADD_FAILURE() << "the root requested work";
            return;
          }
          push(now_ + me.latency_seconds, parent, v,
               event::WorkRequested{Target::to_child(ChildId{static_cast<std::uint32_t>(v)}), x.count});
        },
        [&](const action::SendTask& x) {
          const std::size_t c = x.child.value;
          if (c >= nodes_.size() || spec_.nodes[c].parent != v || c == 0) {
            ADD_FAILURE() << "node " << v << " sent a task to " << c << ", not its child";
            return;
          }
          const Seconds link = link_time(c, x.task);
          const Seconds at = now_ + link;
          const double bytes = spec_.apps[x.task.app().value].bytes;
          push(at, c, v, event::TaskArrived{x.task});
          // Bytes of a task, or one unit per task when the apps have no size.
          push(at, v, v, event::TransferObserved{x.child, bytes > 0 ? bytes : 1.0, link});
          push(at, v, v, event::SendDone{x.child});
        },
        [&](const action::StartTask& x) {
          if (running_[v] >= me.cores) {
            ADD_FAILURE() << "node " << v << " started " << task_name(x.task) << " on a full executor ("
                          << running_[v] << "/" << me.cores << " slots busy)";
            return;
          }
          if (me.memory > 0 && !fits(spec_.apps[x.task.app().value], me.cores, me.memory, 0, 0))
            ADD_FAILURE() << "node " << v << " started " << task_name(x.task) << ", which needs more memory than its "
                          << me.memory << " bytes";
          ++running_[v];
          const Seconds d = duration(v, x.task);
          push(now_ + d, v, v, event::LocalTaskFinished{x.task, d});
        },
        [&](const action::ForwardResult& x) {
          if (v == 0) {
            ADD_FAILURE() << "the root forwarded a result";
            return;
          }
          push(now_ + me.latency_seconds, parent, v,
               event::ResultArrived{ChildId{static_cast<std::uint32_t>(v)}, x.task});
        },
        [&](const action::TaskCompleted& x) {
          if (x.duplicate)
            ++duplicate_completions_;
          else
            ++completions_[x.task.id];
        },
        [&](const action::RunComplete&) { ++run_complete_count_; },
        // The ForwardResult / TaskCompleted that follows carries the task on.
        [&](const action::TaskAbandoned&) {},
        [&](const action::LateResultDropped&) {},
        [&](const action::SendPolicyMessage& x) {
          if (x.to_parent) {
            if (v == 0) {
              ADD_FAILURE() << "the root sent a policy message to its parent";
              return;
            }
            push(now_ + me.latency_seconds, parent, v,
                 event::PolicyMessage{false, ChildId{static_cast<std::uint32_t>(v)}, x.payload});
            return;
          }
          const std::size_t c = x.child.value;
          if (c == 0 || c >= nodes_.size() || spec_.nodes[c].parent != v) {
            ADD_FAILURE() << "node " << v << " sent a policy message to " << c << ", not its child";
            return;
          }
          push(now_ + spec_.nodes[c].latency_seconds, c, v, event::PolicyMessage{true, ChildId{}, x.payload});
        },
        [&](const action::SendPull& x) {
          const std::size_t c = x.child.value;
          if (c == 0 || c >= nodes_.size() || spec_.nodes[c].parent != v) {
            ADD_FAILURE() << "node " << v << " pulled from " << c << ", not its child";
            return;
          }
          ++pulls_;
          push(now_ + spec_.nodes[c].latency_seconds, c, v, event::PullRequested{x.count, x.nbc});
        },
        [&](const action::ReturnTasks& x) {
          if (v == 0) {
            ADD_FAILURE() << "the root returned tasks";
            return;
          }
          migrated_ += x.tasks.size();
          push(now_ + me.latency_seconds, parent, v,
               event::TasksReturned{{x.tasks, x.bcs, x.rejected}, ChildId{static_cast<std::uint32_t>(v)}});
        },
        [&](const action::PushTasks& x) {
          if (v == 0) {
            ADD_FAILURE() << "the root pushed tasks";
            return;
          }
          ++pushes_;
          push(now_ + me.latency_seconds, parent, v, event::TasksPushed{ChildId{static_cast<std::uint32_t>(v)}, x.tasks, x.bcs});
        },
        [&](const action::SendPushReply& x) {
          const std::size_t c = x.child.value;
          if (c == 0 || c >= nodes_.size() || spec_.nodes[c].parent != v) {
            ADD_FAILURE() << "node " << v << " answered a push of " << c << ", not its child";
            return;
          }
          push(now_ + spec_.nodes[c].latency_seconds, c, v, event::PushAnswered{x.answer, x.refused, x.status});
        },
        [&](const action::DropTasks& x) { migrated_ += x.tasks.size(); },
        [&](const action::ReportCapacity& x) {
          if (v == 0) {
            ADD_FAILURE() << "the root reported its capacity";
            return;
          }
          push(now_ + me.latency_seconds, parent, v, event::CapacityReported{ChildId{static_cast<std::uint32_t>(v)}, x.capacity});
        }},
        a);
  }
}

::testing::AssertionResult TreeHarness::emptiness_check() const {
  std::ostringstream bad;
  if (!queue_.empty()) bad << queue_.size() << " events still pending; ";
  if (run_complete_count_ != 1) bad << "RunComplete emitted " << run_complete_count_ << " times; ";
  const NodeScheduler& root = *nodes_[0];
  if (!root.run_complete())
    bad << "root recorded " << root.completed() << "/" << root.total_tasks() << " tasks; ";
  for (std::size_t k = 0; k < spec_.apps.size(); ++k) {
    for (std::uint64_t i = 0; i < spec_.apps[k].tasks; ++i) {
      const TaskId id = TaskId::make(AppId{static_cast<std::uint32_t>(k)}, i);
      auto it = completions_.find(id);
      const std::size_t n = it == completions_.end() ? 0 : it->second;
      if (n != 1) bad << "task " << k << ":" << i << " recorded " << n << " times; ";
    }
  }
  if (completions_.size() > root.total_tasks()) bad << "completions of unknown tasks; ";
  for (std::size_t v = 0; v < nodes_.size(); ++v) {
    if (!alive_[v]) continue;
    const auto& s = nodes_[v]->state();
    if (!s.buffer.empty()) bad << "node " << v << " still buffers " << s.buffer.size() << " tasks; ";
    if (nodes_[v]->in_flight() != 0) bad << "node " << v << " has " << nodes_[v]->in_flight() << " tasks in flight; ";
    if (running_[v] != 0) bad << "node " << v << " executor still runs " << running_[v] << " tasks; ";
    if (s.port_busy) bad << "node " << v << " port still busy; ";
  }
  if (bad.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad.str();
}

}  // namespace treefarm::core::testing
