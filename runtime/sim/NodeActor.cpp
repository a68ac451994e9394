#include "runtime/sim/NodeActor.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "runtime/core/Policy.hpp"

namespace treefarm::sim {

namespace sg4 = simgrid::s4u;

namespace {
template <class... Ts>
struct Overloaded : Ts... { using Ts::operator()...; };

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type.name();
  std::free(name);
  return out;
}

// Shortest wait we ask SimGrid for: an execution predicted to end "now" may be a few ulps
// from done; waiting this long lets it finish instead of spinning.
constexpr double min_wait = 1e-9;
}  // namespace

NodeActor::NodeActor(SimWorld& world, std::size_t node)
    : world_(world),
      platform_(*world.platform),
      node_(node),
      spec_(world.platform->nodes[node]),
      root_(world.platform->nodes[node].parent < 0) {}

double NodeActor::now() const { return sg4::Engine::get_clock(); }

void NodeActor::operator()() {
  try {
    if (!root_) sg4::Actor::self()->daemonize();
    setup();
    const double limit = world_.options->time_limit;
    const double wall_limit = world_.options->wall_limit;
    const auto wall_start = std::chrono::steady_clock::now();
    while (!done_) {
      collect_finished_executions();
      if (auto deadline = sched_->next_deadline(); deadline && *deadline <= now()) events_.push_back(core::event::Tick{});
      drain();
      if (done_) break;
      if (root_ && limit > 0 && now() >= limit) {
        world_.error = "time limit of " + std::to_string(limit) + " simulated seconds reached";
        break;
      }
      if (root_ && wall_limit > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count() > wall_limit) {
        world_.error = "wall-clock limit of " + std::to_string(wall_limit) + " s reached at simulated t=" +
                       std::to_string(now()) + " s";
        break;
      }

      // Everything this node may be waiting for: its gets, then its sends.
      std::vector<sg4::CommPtr> comms;
      comms.reserve(1 + up_get_.size() + outgoing_.size());
      if (!root_) {
        comms.push_back(down_get_);
        comms.push_back(control_get_);
      }
      for (auto& g : up_get_) comms.push_back(g);
      for (auto& o : outgoing_) comms.push_back(o.comm);
      double timeout = wait_timeout();
      if (root_ && limit > 0) timeout = timeout < 0 ? limit - now() : std::min(timeout, limit - now());
      if (timeout >= 0) timeout = std::max(timeout, min_wait);

      const ssize_t i = sg4::Comm::wait_any_for(comms, timeout);
      if (i < 0) continue;  // an execution ended, a deadline or the time limit came
      auto index = static_cast<std::size_t>(i);
      if (!root_) {
        if (index == 0) {
          SimMessage* m = down_buf_;
          post_get_down();
          received(m, std::nullopt);
          continue;
        }
        if (index == 1) {
          SimMessage* m = control_buf_;
          post_get_control();
          received(m, std::nullopt);
          continue;
        }
        index -= 2;
      }
      if (index < up_get_.size()) {
        SimMessage* m = up_buf_[index];
        post_get_up(index);
        received(m, index);
        continue;
      }
      index -= up_get_.size();
      const Outgoing done = outgoing_[index];
      outgoing_.erase(outgoing_.begin() + static_cast<std::ptrdiff_t>(index));
      if (done.task) {
        events_.push_back(core::event::SendDone{done.child});
        events_.push_back(core::event::TransferObserved{done.child, done.bytes, now() - done.started});
      }
    }
  } catch (const std::exception& e) {
    if (world_.error.empty()) world_.error = "node '" + spec_.name + "' at t=" + std::to_string(now()) + " s: " + e.what();
    if (!root_ && world_.root_actor) world_.root_actor->kill();  // ends the simulation
  }
}

void NodeActor::setup() {
  const auto& ex = platform_.experiment;
  core::NodeConfig config;
  config.name = spec_.name;
  config.is_root = root_;
  config.buffer = ex.run.buffer;
  config.one_port = ex.run.comm_model == model::CommModel::one_port;
  if (node_ < world_.plans.size()) config.plan = world_.plans[node_];
  min_cores_per_task_ = std::numeric_limits<std::uint32_t>::max();
  for (std::size_t k = 0; k < ex.apps.size(); ++k) {
    const auto& app = ex.apps[k];
    core::AppParams p;
    p.name = app.name;
    p.weight = app.weight;
    p.tasks = app.tasks;
    p.bytes = static_cast<double>(app.input_bytes());
    p.flops = app.task_flops();
    p.cores_per_task = app.cores_per_task;
    config.apps.push_back(p);
    const double t = spec_.task_seconds[k];
    config.local_seconds.push_back(spec_.work[k] > 0 && std::isfinite(t) ? t : 0.0);
    if (spec_.work[k] > 0) min_cores_per_task_ = std::min(min_cores_per_task_, app.cores_per_task);
  }
  sched_ = std::make_unique<core::NodeScheduler>(std::move(config), core::make_policy(ex.run.policy));

  for (std::size_t i = 0; i < spec_.children.size(); ++i) {
    const SimNode& child = platform_.nodes[spec_.children[i]];
    // The paper measures b_u inside the simulator and gives it to the heuristics
    // (beaumont2006 §5.1.4): the link's bandwidth is known from the start.
    events_.push_back(core::event::ChildJoined{core::ChildId{static_cast<std::uint32_t>(i)},
                                               core::ChildInfo{child.name, child.cores, child.bandwidth}});
  }
  up_get_.resize(spec_.children.size());
  up_buf_.assign(spec_.children.size(), nullptr);
  for (std::size_t i = 0; i < spec_.children.size(); ++i) post_get_up(i);
  if (!root_) {
    post_get_down();
    post_get_control();
  }

  for (const auto& a : sched_->start(now())) carry_out(a);
  top_up_local();
  drain();
}

void NodeActor::post_get_down() { down_get_ = world_.down[node_]->get_async<SimMessage>(&down_buf_); }

void NodeActor::post_get_control() {
  control_get_ = world_.control[node_]->get_async<SimMessage>(&control_buf_);
}

void NodeActor::post_get_up(std::size_t child) {
  up_get_[child] = world_.up[spec_.children[child]]->get_async<SimMessage>(&up_buf_[child]);
}

void NodeActor::received(SimMessage* message, std::optional<std::size_t> from_child) {
  std::unique_ptr<SimMessage> m(message);
  using Kind = SimMessage::Kind;
  const core::TaskRef task{core::TaskId{m->task}};
  if (!from_child) {
    if (m->kind == Kind::task)
      events_.push_back(core::event::TaskArrived{task});
    else if (m->kind == Kind::policy)
      events_.push_back(core::event::PolicyMessage{true, {}, std::move(m->payload)});
    else
      throw std::logic_error("a request or result came from the parent");
    return;
  }
  const core::ChildId child{static_cast<std::uint32_t>(*from_child)};
  switch (m->kind) {
    case Kind::request:
      events_.push_back(core::event::WorkRequested{core::Target::to_child(child), m->count});
      break;
    case Kind::result:
      results_[task.id] = ResultInfo{m->node, m->compute_seconds};
      events_.push_back(core::event::ResultArrived{child, task});
      break;
    case Kind::policy:
      events_.push_back(core::event::PolicyMessage{false, child, std::move(m->payload)});
      break;
    case Kind::task:
      throw std::logic_error("a task message came from a child");
  }
}

void NodeActor::collect_finished_executions() {
  for (auto it = running_.begin(); it != running_.end();) {
    if (!it->exec->test()) {
      ++it;
      continue;
    }
    const double seconds = now() - it->started;
    results_[it->task.id] = ResultInfo{static_cast<std::uint32_t>(node_), seconds};
    committed_cores_ -= it->cores;
    events_.push_back(core::event::LocalTaskFinished{it->task, seconds});
    it = running_.erase(it);
  }
}

double NodeActor::wait_timeout() const {
  double timeout = -1;  // none: wait for a comm
  const auto take = [&](double t) { timeout = timeout < 0 ? t : std::min(timeout, t); };
  // Executions run alone on their cores, so they end after remaining / rate; if the host
  // turned out to be shared we just wake up early and wait again.
  for (const auto& r : running_) take(std::max(0.0, r.exec->get_remaining()) / r.rate);
  if (auto deadline = sched_->next_deadline()) take(std::max(0.0, *deadline - now()));
  return timeout;
}

void NodeActor::drain() {
  while (!events_.empty()) {
    const core::Event e = std::move(events_.front());
    events_.pop_front();
    ++world_.events;
    // A rejected event here is a bug of the adapter or the core, never a peer's fault:
    // it stops the simulation with the core's message.
    for (const auto& a : sched_->handle(e, now())) carry_out(a);
    top_up_local();
  }
}

void NodeActor::carry_out(const core::Action& action) {
  std::visit(Overloaded{
      [&](const core::action::RequestWork& a) {
        send_up(new SimMessage{SimMessage::Kind::request, 0, a.count, 0, 0, {}});
      },
      [&](const core::action::SendTask& a) { send_task(a.child, a.task); },
      [&](const core::action::StartTask& a) { start_task(a.task); },
      [&](const core::action::ForwardResult& a) {
        auto it = results_.find(a.task.id);
        if (it == results_.end()) throw std::logic_error("ForwardResult for a task whose result is unknown here");
        send_up(new SimMessage{SimMessage::Kind::result, a.task.id.value, 0, it->second.node, it->second.compute_seconds, {}});
        results_.erase(it);
      },
      [&](const core::action::TaskCompleted& a) { record(a.task, a.duplicate); },
      [&](const core::action::RunComplete&) {
        world_.completed = true;
        done_ = true;
      },
      [&](const core::action::SendPolicyMessage& a) { send_policy_message(a); },
      // A new action of the core lands here until it gets its line above.
      [&](const auto& other) {
        throw std::logic_error("the SimGrid adapter does not carry out action " + type_name(typeid(other)) +
                               " yet (add a case to NodeActor::carry_out in runtime/sim/NodeActor.cpp)");
      }},
      action);
}

void NodeActor::send_task(core::ChildId child, core::TaskRef task) {
  if (child.value >= spec_.children.size()) throw std::logic_error("SendTask to an unknown child");
  const auto bytes = platform_.experiment.apps.at(task.app().value).input_bytes();
  const std::size_t v = spec_.children[child.value];
  auto comm = world_.down[v]->put_async(new SimMessage{SimMessage::Kind::task, task.id.value, 0, 0, 0, {}}, bytes);
  outgoing_.push_back(Outgoing{comm, true, child, static_cast<double>(bytes), now()});
}

void NodeActor::start_task(core::TaskRef task) {
  const std::size_t k = task.app().value;
  if (k >= spec_.work.size() || !(spec_.work[k] > 0))
    throw std::logic_error("StartTask of application '" + platform_.experiment.apps.at(k).name +
                           "', which this node cannot run (cores or duration)");
  if (local_pending_ > 0) --local_pending_;
  const std::uint32_t cores = platform_.experiment.apps[k].cores_per_task;
  auto exec = sg4::this_actor::exec_init(spec_.work[k]);
  exec->set_thread_count(static_cast<int>(cores));
  exec->start();
  committed_cores_ += cores;
  running_.push_back(Running{exec, task, now(), spec_.speed * cores, cores});
}

void NodeActor::send_up(SimMessage* message) {
  if (root_) {
    delete message;
    throw std::logic_error("the root has no parent to send to");
  }
  const auto bytes = static_cast<std::uint64_t>(world_.options->control_bytes) + message->payload.size();
  outgoing_.push_back(Outgoing{world_.up[node_]->put_async(message, bytes), false, {}, 0, now()});
}

void NodeActor::send_policy_message(const core::action::SendPolicyMessage& a) {
  auto* m = new SimMessage{SimMessage::Kind::policy, 0, 0, 0, 0, a.payload};
  if (a.to_parent) {
    send_up(m);
    return;
  }
  if (a.child.value >= spec_.children.size()) {
    delete m;
    throw std::logic_error("SendPolicyMessage to an unknown child");
  }
  const auto bytes = static_cast<std::uint64_t>(world_.options->control_bytes) + a.payload.size();
  auto comm = world_.control[spec_.children[a.child.value]]->put_async(m, bytes);
  outgoing_.push_back(Outgoing{comm, false, a.child, 0, now()});
}

void NodeActor::top_up_local() {
  if (spec_.cores == 0 || min_cores_per_task_ == std::numeric_limits<std::uint32_t>::max()) return;
  const std::uint64_t claimed = committed_cores_ + std::uint64_t{local_pending_} * min_cores_per_task_;
  if (claimed >= spec_.cores) return;
  const auto n = static_cast<std::uint32_t>((spec_.cores - claimed) / min_cores_per_task_);
  if (n == 0) return;
  local_pending_ += n;
  events_.push_back(core::event::WorkRequested{core::Target::executor(), n});
}

void NodeActor::record(core::TaskRef task, bool duplicate) {
  auto it = results_.find(task.id);
  if (duplicate) {
    ++world_.results.duplicates;
  } else {
    metrics::TaskRecord r;
    r.app = task.app().value;
    r.id = task.id.index();
    r.node = it == results_.end() ? spec_.name : platform_.nodes.at(it->second.node).name;
    r.completed_at = now();
    r.compute_seconds = it == results_.end() ? 0.0 : it->second.compute_seconds;
    world_.results.tasks.push_back(std::move(r));
  }
  if (it != results_.end()) results_.erase(it);
}

}  // namespace treefarm::sim
