#include "runtime/sim/NodeActor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <simgrid/Exception.hpp>
#include <spdlog/spdlog.h>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>

#include "runtime/core/Ids.hpp"
#include "runtime/logging/SpdlogSink.hpp"
#include "runtime/sim/PlatformBuilder.hpp"

namespace treefarm::sim {

namespace sg4 = simgrid::s4u;

namespace {
// Shortest wait we ask SimGrid for: an execution predicted to end "now" may be a few ulps
// from done; waiting this long lets it finish instead of spinning.
constexpr double min_wait = 1e-9;
}  // namespace

NodeActor::NodeActor(SimWorld& world, std::size_t node)
    : world_(world),
      platform_(*world.platform),
      node_(node),
      spec_(world.platform->nodes[node]),
      root_(world.platform->nodes[node].parent < 0),
      one_port_(world.platform->experiment.run.comm_model == model::CommModel::one_port) {}

double NodeActor::now() const { return sg4::Engine::get_clock(); }

/// What this node knows from the platform (beaumont2006 §5.1.4: the simulator measures
/// b_u and gives it to the heuristics; durations and LP rates likewise): its own task
/// durations and LP rates, each child's link bandwidth and the rates it is sent.
std::vector<net::msg::NodeHint> NodeActor::known_hints() const {
  const bool planned = node_ < world_.plans.size();
  std::vector<net::msg::NodeHint> hints;
  net::msg::NodeHint own;
  own.name = spec_.name;
  own.link_bandwidth = spec_.bandwidth;
  for (std::size_t k = 0; k < spec_.task_seconds.size(); ++k) {
    const double t = spec_.task_seconds[k];
    own.task_seconds.push_back(spec_.work[k] > 0 && std::isfinite(t) ? t : 0.0);
  }
  if (planned) own.alpha = world_.plans[node_].local;
  hints.push_back(std::move(own));
  for (std::size_t v : spec_.children) {
    net::msg::NodeHint h;
    h.name = platform_.nodes[v].name;
    h.link_bandwidth = platform_.nodes[v].bandwidth;
    if (planned) {
      const auto& sent = world_.plans[node_].children;
      if (auto it = sent.find(h.name); it != sent.end()) h.received = it->second;
    }
    hints.push_back(std::move(h));
  }
  return hints;
}

node::RootSetup NodeActor::root_setup() {
  const auto& ex = platform_.experiment;
  node::RootSetup root;
  root.welcome.buffer = ex.run.buffer;
  root.welcome.policy = ex.run.policy;
  if (auto it = ex.run.policy_options.find(ex.run.policy); it != ex.run.policy_options.end())
    root.policy_options = it->second;
  root.welcome.one_port = ex.run.comm_model == model::CommModel::one_port;
  root.welcome.seed = ex.run.seed;
  for (const auto& app : ex.apps) root.welcome.apps.push_back(node::app_to_wire(app));
  root.apps = ex.apps;
  std::vector<node::Payload> inputs;
  for (const auto& app : ex.apps) inputs.push_back(std::make_shared<node::SizeOnly>(app.input_bytes()));
  root.payload = [inputs](core::TaskId id) { return inputs.at(id.app().value); };
  root.wait_for_nodes = platform_.nodes.size() - 1;
  root.wait_timeout = std::numeric_limits<double>::infinity();
  root.tick_interval = std::numeric_limits<double>::infinity();
  root.on_start = [this](double t) { world_.start = t; };
  root.on_measure = [this](const net::msg::Measure& m) {  // policy fallbacks
    if (m.what == net::msg::Measure::What::fallbacks)
      world_.results.policy_fallbacks[m.node] = static_cast<std::uint64_t>(m.value);
  };
  // docs/live-model.md: the nodes' online estimates; under lp, a re-plan when a task time moved.
  root.on_estimates = [this](const std::vector<net::msg::Estimate>& estimates,
                             double t) -> std::optional<std::vector<net::msg::NodeHint>> {
    if (world_.warmup && !world_.warmup->made()) return first_plan(estimates, t - world_.start);
    if (!world_.live) return std::nullopt;
    const auto replan = world_.live->update(estimates, t - world_.start);
    if (!replan) return std::nullopt;
    spdlog::info("simulate: re-plan at {:.1f} s: {} of {} moved from {:.4g} to {:.4g} s; LP optimum {:.4f} -> {:.4f} tasks/s",
                 replan->at, replan->figure, replan->node, replan->old_value, replan->new_value, replan->old_optimum,
                 replan->new_optimum);
    world_.results.replans.push_back(lp::to_json(*replan));
    return world_.live->hints();
  };
  root.on_result = [this](const net::msg::Result& r, bool duplicate, double t) {
    if (duplicate) {
      ++world_.results.duplicates;
      return;
    }
    const core::TaskId id{r.task_id};
    metrics::TaskRecord rec;
    rec.app = id.app().value;
    rec.id = id.index();
    rec.node = r.node;
    rec.completed_at = t - world_.start;
    rec.compute_seconds = r.compute_seconds;
    world_.results.tasks.push_back(std::move(rec));
    if (world_.results.tasks.size() == platform_.experiment.total_tasks()) world_.completed = true;
  };
  return root;
}

std::optional<std::vector<net::msg::NodeHint>> NodeActor::first_plan(const std::vector<net::msg::Estimate>& estimates,
                                                                     double at) {
  try {
    world_.first_plan = world_.warmup->update(estimates, at);
  } catch (const std::exception& e) {
    spdlog::warn("simulate: no plan from the estimates at {:.1f} s ({}): the run goes on with FCFS", at, e.what());
    return std::nullopt;
  }
  if (!world_.first_plan) return std::nullopt;
  const auto& plan = *world_.first_plan;
  std::string loose;
  for (const auto& l : world_.warmup->loose()) loose += "; " + l;
  spdlog::info("simulate: plan ready at {:.1f} s: LP optimum {:.4f} tasks/s (from the run's own estimates{}{})", at,
               plan.solution.fair_throughput, plan.tight ? "" : ", still loose", loose);
  if (lp::replans(platform_.experiment)) world_.live = std::make_shared<lp::LiveModel>(plan.model, plan.solution);
  return lp::plan_hints(plan.model, plan.solution);
}

void NodeActor::operator()() {
  try {
    if (!root_) sg4::Actor::self()->daemonize();
    node::NodeOptions options;
    options.name = spec_.name;
    options.log = logging::spdlog_sink();
    options.heartbeat_interval = 0;  // nothing fails in a simulation
    // The online estimates go up every second instead (docs/live-model.md), where the root
    // reads them: re-planning or a first plan from the estimates. Elsewhere none: on a large
    // tree they would be most of the simulation's events.
    options.estimate_interval = world_.live || world_.warmup ? 1 : 0;
    options.task_deadline_factor = 0;  // nor is any node slower than the platform says
    options.rejoin_timeout = 0;
    options.join_timeout = std::numeric_limits<double>::infinity();
    options.orphan_timeout = std::numeric_limits<double>::infinity();
    options.shutdown_grace = 0;      // the results are recorded: end at once
    options.known_hints = known_hints();
    options.migration = platform_.experiment.run.migration;
    options.balance = platform_.experiment.run.balance;
    for (const auto& n : platform_.experiment.nodes)  // resources for requirements (lee2010 slide 19)
      if (n.name == spec_.name) {
        options.memory = n.memory;
        options.disk = n.disk;
        options.speed = n.speed.value_or(0.0);
      }
    std::optional<node::RootSetup> root;
    if (root_) root = root_setup();
    driver_ = std::make_unique<node::NodeDriver>(std::move(options), *this, this, std::move(root));

    up_get_.resize(spec_.children.size());
    up_buf_.assign(spec_.children.size(), nullptr);
    for (std::size_t i = 0; i < spec_.children.size(); ++i) post_get_up(i);
    if (!root_) {
      post_get_down();
      post_get_control();
    }
    driver_->start(now());

    const double limit = world_.options->time_limit;
    const double wall_limit = world_.options->wall_limit;
    const auto wall_start = std::chrono::steady_clock::now();
    while (!driver_->finished()) {
      collect_finished_executions();
      if (auto due = driver_->next_deadline(); due && *due <= now()) driver_->on_timer(now());
      driver_->flush(now());
      if (driver_->finished()) break;
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
      comms.reserve(2 + up_get_.size() + outgoing_.size());
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
      ++world_.events;
      auto index = static_cast<std::size_t>(i);
      if (!root_) {
        if (index < 2) {
          std::unique_ptr<SimMessage> m(index == 0 ? down_buf_ : control_buf_);
          index == 0 ? post_get_down() : post_get_control();
          driver_->on_parent_message(std::move(m->message), std::move(m->payload), now());
          continue;
        }
        index -= 2;
      }
      if (index < up_get_.size()) {
        std::unique_ptr<SimMessage> m(up_buf_[index]);
        post_get_up(index);
        driver_->on_child_message(node::PeerId{static_cast<std::uint32_t>(index)}, std::move(m->message),
                                  std::move(m->payload), now());
        continue;
      }
      index -= up_get_.size();
      const Outgoing done = outgoing_[index];
      outgoing_.erase(outgoing_.begin() + static_cast<std::ptrdiff_t>(index));
      if (done.task) {
        share_port();
        driver_->on_transfer_done(done.child, done.task_id, now());
      }
    }
    if (root_) world_.root_done = true;
    if (root_ && driver_->policy()) world_.policy_planned_fair_throughput = driver_->policy()->planned_fair_throughput();
    if (root_ && driver_->finished() && driver_->exit_code() != node::exit_ok && world_.error.empty())
      world_.error = "the root ended with exit code " + std::to_string(driver_->exit_code());
    // The root ends the simulation with sends and gets still under way (messages to daemons that
    // are never read): cancel them here, in the actor, or each CommPtr's destructor prints a
    // SimGrid backtrace whose symbolisation cost seconds per simulation.
    if (root_) {
      for (auto& o : outgoing_) o.comm->cancel();
      for (auto& g : up_get_)
        if (g) g->cancel();
    }
  } catch (const std::exception& e) {
    if (!root_ && world_.root_done) return;  // the tree's run ended (other origins' trees go on)
    if (world_.error.empty()) world_.error = "node '" + spec_.name + "' at t=" + std::to_string(now()) + " s: " + e.what();
    if (world_.abort) world_.abort();  // ends the simulation
  }
}

void NodeActor::post_get_down() { down_get_ = world_.down[node_]->get_async<SimMessage>(&down_buf_); }

void NodeActor::post_get_control() {
  control_get_ = world_.control[node_]->get_async<SimMessage>(&control_buf_);
}

void NodeActor::post_get_up(std::size_t child) {
  up_get_[child] = world_.up[spec_.children[child]]->get_async<SimMessage>(&up_buf_[child]);
}

std::uint64_t NodeActor::message_bytes(const net::Message& message) const {
  auto bytes = static_cast<std::uint64_t>(world_.options->control_bytes);
  if (auto* p = std::get_if<net::msg::Policy>(&message)) bytes += p->payload.size();
  if (auto* r = std::get_if<net::msg::Result>(&message); r && !r->failed) {  // its output
    const auto k = core::TaskId{r->task_id}.app().value;
    if (k < platform_.result_bytes.size()) bytes += static_cast<std::uint64_t>(platform_.result_bytes[k]);
  }
  return bytes;
}

// ---- node::Transport ---------------------------------------------------------------

void NodeActor::send_parent(const net::Message& message, const node::Payload& payload) {
  if (root_) throw std::logic_error("the root has no parent to send to");
  const std::uint64_t bytes = message_bytes(message) + (payload ? payload->size() : 0);
  outgoing_.push_back(Outgoing{world_.up[node_]->put_async(new SimMessage{message, payload}, bytes), false, {}, 0});
}

bool NodeActor::send_child(node::PeerId peer, const net::Message& message, const node::Payload& payload) {
  if (peer.value >= spec_.children.size()) throw std::logic_error("send to an unknown child");
  const std::size_t v = spec_.children[peer.value];
  if (auto* t = std::get_if<net::msg::Task>(&message)) {
    const std::uint64_t bytes = payload ? payload->size() : 0;
    auto comm = world_.down[v]->put_async(new SimMessage{message, payload}, bytes);
    outgoing_.push_back(Outgoing{comm, true, peer, t->task_id});
    // What the move costs the CPU pools of a calibrated host while the task travels (the
    // child's end, the sender's half between two hosts: SimNode::receive_work, send_work).
    const std::size_t k = core::TaskId{t->task_id}.app().value;
    const SimNode& child = platform_.nodes[v];
    if (child.cpu_pool >= 0 && k < child.receive_work.size() && child.receive_work[k] > 0)
      side_.push_back(sg4::this_actor::exec_init(child.receive_work[k])->set_host(world_.exec_hosts[v])->start());
    if (spec_.cpu_pool >= 0 && k < child.send_work.size() && child.send_work[k] > 0)
      side_.push_back(sg4::this_actor::exec_init(child.send_work[k])->set_host(world_.exec_hosts[node_])->start());
    share_port();
    return true;
  }
  const std::uint64_t bytes = message_bytes(message) + (payload ? payload->size() : 0);
  outgoing_.push_back(Outgoing{world_.control[v]->put_async(new SimMessage{message, payload}, bytes), false, peer, 0});
  return true;
}

// beaumont2006 §4.4: "pbc"'s concurrent sends share the one-port in time. With n task
// transfers in flight, each child's link carries its task at b_v / n: together they
// use the port Σ 1/n = 1 of the time, where a port link of the fastest child's
// bandwidth let sends to unequal links use more (up to 2.2× on the paper campaign's
// stars). Latencies still overlap. With one send in flight (every other
// policy) each link keeps its bandwidth.
void NodeActor::share_port() {
  if (!one_port_ || spec_.children.empty()) return;
  if (down_links_.empty()) {
    for (std::size_t v : spec_.children) {
      down_links_.push_back(world_.down_links.at(v));
      down_peaks_.push_back(link_peak_bandwidth(platform_.nodes[v]));
      down_shares_.push_back(1.0);
    }
  }
  std::size_t n = 0;
  std::vector<bool> busy(spec_.children.size(), false);
  for (const auto& o : outgoing_)
    if (o.task) {
      ++n;
      busy[o.child.value] = true;
    }
  for (std::size_t i = 0; i < busy.size(); ++i) {
    const double share = busy[i] && n > 1 ? 1.0 / static_cast<double>(n) : 1.0;
    if (share == down_shares_[i]) continue;
    down_shares_[i] = share;
    down_links_[i]->set_bandwidth(down_peaks_[i] * share);
  }
}

void NodeActor::restart() { throw std::logic_error("a simulated node lost its parent"); }

node::Payload NodeActor::probe_payload(std::size_t bytes) { return std::make_shared<node::SizeOnly>(bytes); }

// ---- node::LocalRunner -------------------------------------------------------------

std::uint32_t NodeActor::cores() const {
  for (double w : spec_.work)
    if (w > 0) return spec_.cores;
  return 0;  // runs nothing: forwards only
}

void NodeActor::start(std::uint64_t job, const model::AppSpec& app, const node::Payload&) {
  std::size_t k = 0;
  while (k < platform_.experiment.apps.size() && platform_.experiment.apps[k].name != app.name) ++k;
  if (k >= spec_.work.size() || !(spec_.work[k] > 0))
    throw std::logic_error("a job of application '" + app.name + "', which this node cannot run (cores or duration)");
  auto exec = sg4::this_actor::exec_init(spec_.work[k]);
  exec->set_thread_count(static_cast<int>(app.cores_per_task));
  // On its CPU pool when it has one (a calibrated host's CPUs, shared with its other nodes).
  const double speed =
      spec_.cpu_pool >= 0 ? platform_.cpu_pools[static_cast<std::size_t>(spec_.cpu_pool)].speed : spec_.speed;
  if (spec_.cpu_pool >= 0) exec->set_host(world_.exec_hosts[node_]);
  exec->start();
  running_.push_back(Running{exec, job, now(), speed * app.cores_per_task});
}

node::Payload NodeActor::calibration_input(const model::AppSpec& app, std::uint64_t, std::uint32_t) {
  return std::make_shared<node::SizeOnly>(app.input_bytes());
}

void NodeActor::collect_finished_executions() {
  // Transfers' CPU (send_child): nobody waits for it, it only takes its share of the pool.
  side_.erase(std::remove_if(side_.begin(), side_.end(), [](const sg4::ExecPtr& e) { return e->test(); }), side_.end());
  for (std::size_t i = 0; i < running_.size();) {
    if (!running_[i].exec->test()) {
      ++i;
      continue;
    }
    const Running r = running_[i];
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    ++world_.events;
    node::JobOutcome o;
    o.run_seconds = now() - r.started;
    driver_->on_job_done(r.job, std::move(o), now());
  }
}

double NodeActor::wait_timeout() const {
  double timeout = -1;  // none: wait for a comm
  const auto take = [&](double t) { timeout = timeout < 0 ? t : std::min(timeout, t); };
  // Executions run alone on their cores, so they end after remaining / rate; if the host
  // turned out to be shared we just wake up early and wait again.
  for (const auto& r : running_) take(std::max(0.0, r.exec->get_remaining()) / r.rate);
  if (auto deadline = driver_->next_deadline(); deadline && std::isfinite(*deadline)) take(std::max(0.0, *deadline - now()));
  return timeout;
}

}  // namespace treefarm::sim
