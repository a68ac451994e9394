#include "runtime/node/NodeDriver.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/core/Overloaded.hpp"

namespace treefarm::node {

using core::Overloaded;

namespace {

/// Seconds as people write them: "1", "0.25", "6" (not std::to_string's "1.000000").
std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}
/// Calibration: kernel runs start this long after joining, so that the link probes
/// (made as children join) run on quiet cores and measure the links, not CPU contention.
constexpr double calibrate_kernels_after = 2.0;
/// Calibration: an application is measured for at least this many seconds of kernel time.
constexpr double calibrate_seconds = 1.0;

/// A reason as the wire carries it: at most net::max_name_bytes bytes (a longer string
/// would make the encoder refuse the whole message).
std::string wire_text(std::string text, std::size_t limit = net::max_name_bytes) {
  if (text.size() > limit) {
    text.resize(limit - 3);
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) text.pop_back();  // no split UTF-8
    if (!text.empty() && (static_cast<unsigned char>(text.back()) & 0x80)) text.pop_back();
    text += "...";
  }
  return text;
}

double earliest(double a, double b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}
}  // namespace

/// The fields an application and its wire form name alike, copied from one to the other.
template <class From, class To>
void copy_named_alike(const From& from, To& to) {
  to.name = from.name;
  to.n = from.n;
  to.weight = from.weight;
  to.tasks = from.tasks;
  to.cores_per_task = from.cores_per_task;
  to.memory_per_task = from.memory_per_task;
  to.disk_per_task = from.disk_per_task;
  to.min_speed = from.min_speed;
  to.argv = from.argv;
  to.timeout = from.timeout;
  to.expect_digest = from.expect_digest;
}

model::AppSpec app_from_wire(const net::msg::AppInfo& info) {
  model::AppSpec a;
  copy_named_alike(info, a);
  a.kernel = static_cast<model::Kernel>(info.kernel);
  a.send_output = info.max_output_bytes > 0;
  if (a.send_output) a.max_output_bytes = info.max_output_bytes;
  a.bytes = info.bytes;
  a.flops = info.flops;
  if (a.kernel == model::Kernel::matmul || a.kernel == model::Kernel::matadd) a.bytes = 0;
  return a;
}

net::msg::AppInfo app_to_wire(const model::AppSpec& app) {
  net::msg::AppInfo info;
  copy_named_alike(app, info);
  info.kernel = static_cast<std::uint8_t>(app.kernel);
  info.bytes = app.input_bytes();
  info.flops = app.task_flops();
  if (app.send_output) info.max_output_bytes = app.max_output_bytes;
  return info;
}

/// A child of this node, from its Hello on.
struct NodeDriver::Child {
  core::ChildId id;
  std::string name;
  double last_seen = 0;
  bool closing = false;                              ///< sent Shutdown, waiting for Bye
  std::uint64_t requested = 0;                       ///< tasks it asked for, not yet sent
  std::unordered_set<std::string> subtree;           ///< names it reported joined below it, and its own
  IdMap<SendRecord> sends;                     ///< task transfers not yet acknowledged
  std::string endpoint;                              ///< advertised by its TreeInfo ("" = none)
  std::uint32_t cores = 0;
  std::vector<net::msg::NodeLoad> loads;             ///< its subtree's states, from its last heartbeat
};

/// A job on the local runner: a task, or a calibration run of application `app`.
NodeDriver::NodeDriver(NodeOptions options, Transport& transport, LocalRunner* runner, std::optional<RootSetup> root)
    : opt_(std::move(options)), transport_(transport), runner_(runner), root_(std::move(root)) {
  if (opt_.name.empty()) throw std::invalid_argument("a node needs a name");
  if (opt_.heartbeat_interval < 0 || opt_.heartbeat_timeout <= 0)
    throw std::invalid_argument("heartbeat interval must be >= 0 and timeout > 0 seconds");
  if (opt_.heartbeat_interval > 0 && opt_.heartbeat_timeout <= opt_.heartbeat_interval)
    throw std::invalid_argument("the heartbeat timeout must be longer than the heartbeat interval");
  if (!(opt_.task_deadline_factor >= 0) || !(opt_.task_deadline_floor >= 0) || !(opt_.ack_timeout >= 0))
    throw std::invalid_argument("task deadline factor, task deadline floor and ack timeout must be >= 0");
  if (runner_ && runner_->cores() == 0) runner_ = nullptr;
}

NodeDriver::~NodeDriver() = default;

std::size_t NodeDriver::child_count() const { return children_.size(); }
std::uint64_t NodeDriver::completed() const { return sched_ ? sched_->completed() : 0; }

// ---- start, configuration --------------------------------------------------------

void NodeDriver::start(double now) {
  orphan_since_ = now;
  parent_link_ = net::msg::Ancestor{"", opt_.parent_endpoint, opt_.parent_public_key};
  if (opt_.heartbeat_interval > 0) next_heartbeat_ = now + opt_.heartbeat_interval;
  if (is_root()) {
    reset_ = opt_.serve;
    configure(root_->welcome, now);
    next_tick_ = now + root_->tick_interval;
    begin_running(now);
    return;
  }
  phase_ = Phase::joining;
  transport_.send_parent(net::msg::Hello{opt_.name, runner_ ? runner_->cores() : 0, opt_.memory});
  join_deadline_ = now + opt_.join_timeout;
}

void NodeDriver::configure(const net::msg::Welcome& w, double now) {
  welcome_ = w;
  apps_.clear();
  core::NodeConfig config;
  config.is_root = is_root();
  config.buffer = w.buffer;
  config.one_port = w.one_port;
  config.name = opt_.name;
  config.max_task_losses = opt_.max_task_losses;
  if (is_root()) config.done_before = root_->done_before;
  config.deadline_factor = opt_.task_deadline_factor;
  config.deadline_floor = opt_.task_deadline_floor;
  config.migration = opt_.migration;
  config.balance = opt_.balance;
  config.cores = runner_ ? runner_->cores() : 0;
  if (opt_.speed == 0 && opt_.measure_speed && runner_ &&
      std::any_of(w.apps.begin(), w.apps.end(), [](const net::msg::AppInfo& a) { return a.min_speed > 0; })) {
    opt_.speed = opt_.measure_speed();
    spdlog::info("{}: {:.3g} flop/s per core (measured for the applications' min_speed)", opt_.name, opt_.speed);
  }
  config.memory = opt_.memory;
  config.disk = opt_.disk;
  config.speed = opt_.speed;
  min_cores_per_task_ = std::numeric_limits<std::uint32_t>::max();
  for (const auto& info : w.apps) {
    apps_.push_back(is_root() ? root_->apps.at(apps_.size()) : app_from_wire(info));
    core::AppParams p;
    p.name = info.name;
    p.weight = info.weight;
    p.tasks = info.tasks;
    p.bytes = static_cast<double>(info.bytes);
    p.flops = info.flops;
    p.cores_per_task = info.cores_per_task;
    p.memory_per_task = info.memory_per_task;
    p.disk_per_task = info.disk_per_task;
    p.min_speed = info.min_speed;
    config.apps.push_back(p);
    min_cores_per_task_ = std::min(min_cores_per_task_, info.cores_per_task);
  }
  hint_bandwidth_.clear();
  std::vector<const net::msg::NodeHint*> hints;
  for (const auto& h : w.hints) hints.push_back(&h);
  for (const auto& h : opt_.known_hints) hints.push_back(&h);
  for (const auto* h : hints) {
    if (h->name == opt_.name) {
      config.local_seconds = h->task_seconds;
      if (!h->alpha.empty()) {  // the LP's rates (papers/beaumont2006 §4.1)
        core::NodePlan plan;
        plan.local = h->alpha;
        for (const auto* c : hints)
          if (c->name != opt_.name) plan.children[c->name] = c->received;
        config.plan = std::move(plan);
      }
    }
    hint_bandwidth_[h->name] = h->link_bandwidth;
  }
  // Say so when the LP leaves this node idle: under lp it then gets no task while a
  // planned node is connected (docs/policies.md, lp), which a user would otherwise take
  // for a fault. Idle: what its parent is planned to send it is under 1e-4 of the plan's
  // total (without_crumbs).
  if (w.policy == "lp" && !is_root() && w.calibrate_reps == 0) {
    double mine = -1, total = 0;
    for (const auto* h : hints) {
      for (double a : h->alpha) total += a;
      if (h->name == opt_.name && !h->received.empty()) {
        mine = 0;
        for (double r : h->received) mine += r;
      }
    }
    if (mine >= 0 && total > 0 && mine < 1e-4 * total)
      spdlog::info("{}: the LP's plan gives this node no tasks: it stays idle while a planned node is connected "
                   "(policy lp, docs/policies.md)", opt_.name);
  }
  sched_ = std::make_unique<core::NodeScheduler>(std::move(config), core::make_policy(w.policy, is_root() ? root_->policy_options : core::PolicyOptions{}));
  configured_ = true;
  calibrating_ = w.calibrate_reps > 0;
  if (calibrating_) {
    calib_start_at_ = now + calibrate_kernels_after;
    const std::uint64_t probe_bytes = std::max<std::uint64_t>(w.probe_bytes, 2);
    prober_ = std::make_unique<LinkProber>(
        opt_.name, transport_.probe_payload(1), transport_.probe_payload(probe_bytes),
        [this](PeerId peer, std::uint32_t seq, const Payload& p) { transport_.send_child(peer, net::msg::Probe{seq}, p); },
        [this](const net::msg::Measure& m) {
          using What = net::msg::Measure::What;
          if (m.what == What::link_round_trip)
            spdlog::info("{}: link to '{}': round trip {:.3g} s", opt_.name, m.node, m.value);
          else if (m.what == What::link_bandwidth_min || m.what == What::link_bandwidth_max)
            spdlog::info("{}: link to '{}': {} round {:.3g} bytes/s", opt_.name, m.node,
                         m.what == What::link_bandwidth_min ? "slowest" : "fastest", m.value);
          else
            spdlog::info("{}: {} {:.3g} bytes/s (median of {} rounds)", opt_.name,
                         m.what == What::link_bandwidth ? "link to '" + m.node + "' carries"
                                                        : "sends to all its children together",
                         m.value, LinkProber::rounds);
          report(m);
        });
  }
}

void NodeDriver::begin_running(double now) {
  phase_ = Phase::running;
  join_deadline_ = -1;
  lost_at_ = -1;
  backoff_ = 0.5;
  rejoin_targets_.clear();
  rejoin_next_ = 0;
  if (is_root()) {
    if (calibrating_) {
      dispatching_ = true;  // nothing is dispatched; events go straight to the core
    } else if (root_->wait_for_nodes == 0) {
      start_dispatching(now);
    } else {
      wait_deadline_ = now + root_->wait_timeout;
    }
  } else if (!calibrating_) {
    for (auto& a : sched_->start(now)) carry_out(a, now);
    top_up_local();
    drain(now);
  }
  // Children that said Hello before this node was configured.
  auto waiting = std::move(waiting_hellos_);
  waiting_hellos_.clear();
  for (auto& [peer, hello] : waiting) admit(peer, hello, now);
}

void NodeDriver::start_dispatching(double now) {
  dispatching_ = true;
  wait_deadline_ = -1;
  if (root_->on_start) root_->on_start(now);
  for (auto& a : sched_->start(now)) carry_out(a, now);
  for (auto& e : deferred_) events_.push_back(std::move(e));
  deferred_.clear();
  top_up_local();
  drain(now);
}

// ---- the core --------------------------------------------------------------------

void NodeDriver::post(core::Event e) {
  if (is_root() && !dispatching_) {
    deferred_.push_back(std::move(e));
    return;
  }
  events_.push_back(std::move(e));
}

/// Feeds queued events to the core and carries out its actions. An event the core
/// rejects drops the child that caused it; from the parent it means a broken parent.
void NodeDriver::drain(double now) {
  if (draining_ || !sched_ || phase_ == Phase::done) return;
  draining_ = true;
  while (!events_.empty() && phase_ != Phase::done) {
    core::Event e = events_.take_front();
    // One vector reused from event to event (issue 14); a nested drain gets a fresh one.
    std::vector<core::Action> actions = std::move(spare_actions_);
    actions.clear();
    try {
      sched_->handle_into(e, now, actions);
    } catch (const core::ProtocolError& err) {
      std::optional<core::ChildId> culprit;
      if (auto* r = std::get_if<core::event::WorkRequested>(&e); r && !r->from.local) culprit = r->from.child;
      if (auto* r = std::get_if<core::event::ResultArrived>(&e)) culprit = r->child;
      if (auto* r = std::get_if<core::event::PolicyMessage>(&e); r && !r->from_parent) culprit = r->child;
      if (auto* r = std::get_if<core::event::TasksReturned>(&e)) culprit = r->child;
      if (auto* r = std::get_if<core::event::TasksPushed>(&e)) culprit = r->child;
      if (culprit) {
        if (child_by_core(*culprit)) drop_child(peer_of_core_.at(culprit->value), err.what(), true, now);
        continue;
      }
      if (!is_root() && (std::holds_alternative<core::event::TaskArrived>(e) ||
                         std::holds_alternative<core::event::PolicyMessage>(e) ||
                         std::holds_alternative<core::event::PullRequested>(e) ||
                         std::holds_alternative<core::event::PushAnswered>(e))) {
        draining_ = false;
        parent_lost(err.what(), now);
        return;
      }
      draining_ = false;
      throw;
    }
    for (auto& a : actions) carry_out(a, now);
    actions.clear();
    spare_actions_ = std::move(actions);
    top_up_local();
  }
  draining_ = false;
}

/// Asks the core for local work while the runner has cores nobody has claimed yet (so
/// tasks are requested only when they could start).
void NodeDriver::top_up_local() {
  if (!runner_ || !sched_ || calibrating_ || phase_ != Phase::running || (is_root() && !dispatching_)) return;
  if (min_cores_per_task_ == 0 || min_cores_per_task_ == std::numeric_limits<std::uint32_t>::max()) return;
  const std::uint64_t claimed = committed_cores_ + std::uint64_t{local_pending_} * min_cores_per_task_;
  if (claimed >= runner_->cores()) return;
  const auto n = static_cast<std::uint32_t>((runner_->cores() - claimed) / min_cores_per_task_);
  if (n == 0) return;
  local_pending_ += n;
  events_.push_back(core::event::WorkRequested{core::Target::executor(), n});
}

void NodeDriver::carry_out(core::Action& action, double now) {
  std::visit(Overloaded{
      [&](core::action::RequestWork& a) { transport_.send_parent(net::msg::Request{a.count}); },
      [&](core::action::SendTask& a) { send_task(a.child, a.task, now); },
      [&](core::action::StartTask& a) { start_local(a.task); },
      [&](core::action::ForwardResult& a) {
        if (auto it = results_.find(a.task.id); it != results_.end()) {
          transport_.send_parent(it->second, take_output(a.task.id));  // the output frame shared, not copied
          results_.erase(it);
        }
        payloads_.erase(a.task.id);
      },
      [&](core::action::TaskCompleted& a) {
        if (auto it = results_.find(a.task.id); it != results_.end()) {
          const Payload output = take_output(a.task.id);
          if (output && !a.duplicate && root_->on_output) root_->on_output(it->second, output);
          if (root_->on_result) root_->on_result(it->second, a.duplicate, now);
          results_.erase(it);
        }
      },
      [&](core::action::TaskAbandoned& a) {
        net::msg::Result r;
        r.task_id = a.task.id.value;
        r.node = opt_.name;
        r.failed = true;
        r.error = "lost with " + std::to_string(a.losses) + " dead workers: given up";
        spdlog::error("{}: task {} of '{}' {}", opt_.name, a.task.id.index(), apps_.at(a.task.app().value).name, r.error);
        results_[a.task.id] = std::move(r);
      },
      [&](core::action::LateResultDropped& a) {
        // A re-issued task's second result (task deadlines): the first went up already.
        spdlog::info("{}: task {} of '{}': late copy's result dropped as a duplicate", opt_.name, a.task.id.index(),
                     apps_.at(a.task.app().value).name);
        results_.erase(a.task.id);
        outputs_.erase(a.task.id);
        blame_.retract(a.task.id.value);
      },
      [&](core::action::SendPolicyMessage& a) {
        net::msg::Policy m{std::move(a.payload)};
        if (a.to_parent) {
          if (!is_root()) transport_.send_parent(m);
        } else if (auto p = peer_of_core_.find(a.child.value); p != peer_of_core_.end()) {
          transport_.send_child(p->second, m);
        }
      },
      [&](core::action::SendPull& a) {
        if (auto p = peer_of_core_.find(a.child.value); p != peer_of_core_.end())
          transport_.send_child(p->second, net::msg::Pull{a.count, a.nbc});
      },
      [&](core::action::ReturnTasks& a) {
        // Task migration (docs/migration.md): the parent still holds the inputs.
        if (is_root()) return;
        net::msg::PullReply reply;
        for (std::size_t i = 0; i < a.tasks.size(); ++i) {
          payloads_.erase(a.tasks[i].id);
          reply.task_ids.push_back(a.tasks[i].id.value);
          reply.bcs.push_back(a.bcs[i]);
          if (reply.task_ids.size() == net::max_received_ids) {
            transport_.send_parent(reply);
            reply = {};
          }
        }
        reply.rejected = a.rejected;
        if (!reply.task_ids.empty() || reply.rejected > 0) transport_.send_parent(reply);
      },
      [&](core::action::PushTasks& a) { send_push(a); },
      [&](core::action::SendPushReply& a) { send_push_reply(a); },
      [&](core::action::DropTasks& a) {
        for (const auto& t : a.tasks) payloads_.erase(t.id);  // the parent took them (PUSH)
      },
      [&](core::action::ReportCapacity& a) {
        if (is_root()) return;
        transport_.send_parent(net::msg::Capacity{std::move(a.capacity.fits), a.capacity.cores, a.capacity.memory, a.capacity.disk});
      },
      [&](core::action::RunComplete&) {
        spdlog::info("{}: all tasks done", opt_.name);
        if (sched_->reissued() > 0)
          spdlog::info("{}: {} tasks re-issued after their deadline, {} late results dropped as duplicates", opt_.name,
                       sched_->reissued(), sched_->late_duplicates());
        begin_closing("run complete", now);
      }},
      action);
}

net::msg::NodeLoad NodeDriver::own_load() const {
  net::msg::NodeLoad l;
  l.name = opt_.name;
  l.cores = runner_ ? runner_->cores() : 0;
  l.busy_cores = static_cast<std::uint32_t>(std::min<std::uint64_t>(committed_cores_, l.cores));
  std::size_t running = 0;
  for (const auto& [id, job] : jobs_)
    if (job.task && job.epoch == epoch_) ++running;
  const std::size_t held = is_root() ? 0 : payloads_.size();
  l.queued = static_cast<std::uint32_t>(held > running ? held - running : 0);
  l.load1 = opt_.machine_load ? opt_.machine_load() : -1.0;
  if (!(l.load1 >= 0)) l.load1 = -1.0;
  return l;
}

Payload NodeDriver::take_output(core::TaskId id) {
  if (outputs_.empty()) return {};
  auto it = outputs_.find(id);
  if (it == outputs_.end()) return {};
  Payload output = std::move(it->second);
  outputs_.erase(it);
  return output;
}

void NodeDriver::send_task(core::ChildId child, core::TaskRef task, double now) {
  Payload payload;
  if (is_root()) {
    payload = root_->payload(task.id);
  } else if (auto it = payloads_.find(task.id); it != payloads_.end()) {
    payload = it->second;  // shared: ours is kept for re-queueing
  }
  Child* c = child_by_core(child);
  if (!c) {  // left meanwhile: the core re-queues on ChildLeft (already posted)
    events_.push_back(core::event::SendDone{child});
    return;
  }
  const PeerId peer = peer_of_core_.at(child.value);
  if (c->requested > 0) --c->requested;
  const double bytes = payload ? static_cast<double>(payload->size()) : 0.0;
  // A small transfer pipelines behind the others on the connection: the port is free
  // again at once, within the window of unacknowledged bytes (NodeOptions::one_port_window).
  const std::uint64_t size = payload ? payload->size() : 0;
  const bool release = welcome_.one_port && !transport_.reports_transfers() && opt_.one_port_window > 0 &&
                       released_bytes_ + size <= opt_.one_port_window;
  // Transfers that share the link (Transport::transfers_share_link) are observed only if
  // they had it to themselves throughout: a later one slows those already in flight.
  // Under one-port, concurrent sends to different children ("pbc") share the node's
  // port in time (the SimGrid adapter, beaumont2006 §4.4), so any other send counts.
  bool alone = c->sends.empty();
  if (transport_.transfers_share_link()) {
    for (auto& [id, other] : c->sends) other.alone = false;
    if (welcome_.one_port && sends_in_flight_ > c->sends.size())
      for (auto& [other_peer, other_child] : children_)
        for (auto& [id, other] : other_child->sends) {
          other.alone = false;
          alone = false;
        }
  }
  if (c->sends.insert_or_assign(task.id.value, SendRecord{now, bytes, alone, release}).second) ++sends_in_flight_;
  if (release) {
    released_bytes_ += size;
    events_.push_back(core::event::SendDone{child});
  }
  if (!transport_.send_child(peer, net::msg::Task{task.id.value}, payload))
    drop_child(peer, "unreachable (its connection is gone)", false, now);  // ends its transfers too
}

/// A transfer to a child ended (its acknowledgement, or the transport's own report):
/// the one-port is free again, and the transfer time is what the policies learn the
/// link from (papers/beaumont2006 §5.1.4). Only transfers that had the link to
/// themselves are observed: one that queued behind another on the child's connection
/// would under-measure it, and so would one that shared the link (SimGrid's concurrent
/// comms, Transport::transfers_share_link) with any other during its life — on
/// examples/bertin2008.toml under `price` its 10 kB/s links were learnt as 1–4 kB/s and
/// priced as if saturated when only a transfer's start was checked.
void NodeDriver::transfer_done(Child& child, std::uint64_t task_id, double now) {
  auto it = child.sends.find(task_id);
  if (it == child.sends.end()) return;  // not ours to end (a duplicate or late acknowledgement)
  const SendRecord s = it->second;
  child.sends.erase(it);
  --sends_in_flight_;
  if (s.released) released_bytes_ -= static_cast<std::uint64_t>(s.bytes);
  // Under multi-port a send holds no port: SendDone changes nothing in the core, and one
  // event fewer per task is a pass of the scheduler fewer (issue 14).
  else if (welcome_.one_port) post(core::event::SendDone{child.id});
  if (s.alone && s.bytes > 0 && now > s.sent_at)
    post(core::event::TransferObserved{child.id, s.bytes, now - s.sent_at});
}

void NodeDriver::start_local(core::TaskRef task) {
  if (local_pending_ > 0) --local_pending_;
  Payload input;
  if (is_root()) {
    input = root_->payload(task.id);
  } else if (auto it = payloads_.find(task.id); it != payloads_.end()) {
    input = it->second;
  }
  const model::AppSpec& app = apps_.at(task.app().value);
  const std::uint64_t id = next_job_++;
  jobs_.emplace(id, Job{task, epoch_, task.app().value, app.cores_per_task});
  committed_cores_ += app.cores_per_task;
  runner_->start_task(id, app, input, task.id.index());
}

void NodeDriver::on_job_done(std::uint64_t id, JobOutcome outcome, double now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  const Job job = it->second;
  jobs_.erase(it);
  if (!job.task) {
    calibration_done(job.app, outcome, now);
    return;
  }
  committed_cores_ -= job.cores;
  if (job.epoch != epoch_ || phase_ == Phase::done) {  // from before the parent was lost: its cores are free
    top_up_local();
    drain(now);
    return;
  }
  const core::TaskRef task = *job.task;
  net::msg::Result r;
  r.task_id = task.id.value;
  r.node = opt_.name;
  r.compute_seconds = outcome.run_seconds;
  r.queued_seconds = outcome.queued_seconds;
  r.checksum = outcome.checksum;
  if (outcome.failed) {
    r.failed = true;
    r.error = wire_text(outcome.error, net::max_text_bytes);
    spdlog::error("{}: task {} of '{}' failed: {}", opt_.name, task.id.index(), apps_.at(job.app).name, r.error);
  }
  if (!outcome.failed && job.app < apps_.size()) {
    local_seconds_.resize(apps_.size(), 0.0);
    local_runs_.resize(apps_.size(), 0);
    local_seconds_[job.app] += outcome.run_seconds;
    ++local_runs_[job.app];
  }
  if (outcome.output && !outcome.failed) {
    r.has_output = true;
    r.output_bytes = outcome.output->size();
    outputs_[task.id] = std::move(outcome.output);
  }
  blame_.record(task.id.value, BlameLedger::local);
  results_[task.id] = std::move(r);
  post(core::event::LocalTaskFinished{task, outcome.run_seconds});
  drain(now);
}

// ---- parent ----------------------------------------------------------------------

void NodeDriver::on_parent_message(net::Message message, Payload payload, double now) {
  if (is_root() || phase_ == Phase::done || phase_ == Phase::rejoin_wait) return;
  if (phase_ == Phase::joining) {
    if (auto* w = std::get_if<net::msg::Welcome>(&message)) {
      try {
        configure(*w, now);
      } catch (const std::exception& e) {
        parent_lost(std::string("unusable Welcome: ") + e.what(), now);
        return;
      }
      // Tree repair: this node's ancestors are its parent and the parent's own.
      if (!w->sender.empty()) {
        if (!parent_link_.name.empty() && parent_link_.name != w->sender)
          spdlog::warn("{}: expected '{}' at {}, joined '{}'", opt_.name, parent_link_.name, parent_link_.endpoint, w->sender);
        parent_link_.name = w->sender;
      }
      ancestors_.clear();
      const auto fits = [](const net::msg::Ancestor& a) {
        return !a.name.empty() && !a.endpoint.empty() && a.name.size() <= net::max_name_bytes &&
               a.endpoint.size() <= net::max_name_bytes && (a.public_key.empty() || a.public_key.size() == 40);
      };
      net::msg::Ancestor parent = parent_link_;
      if (parent.name.empty()) parent.name = parent.endpoint;  // a parent that does not say its name
      if (fits(parent)) ancestors_.push_back(parent);
      for (const auto& a : w->ancestors)
        if (a.name != opt_.name && fits(a) && ancestors_.size() < net::max_ancestors) ancestors_.push_back(a);
      spdlog::info("{}: joined{} (policy {}, buffer {})", opt_.name, w->sender.empty() ? "" : " '" + w->sender + "'",
                   w->policy, w->buffer);
      if (!opt_.endpoint.empty()) {  // so that `--parent auto` joiners can find this node
        net::msg::TreeInfo advert;
        advert.name = opt_.name;
        advert.endpoint = opt_.endpoint;
        transport_.send_parent(advert, transport_.probe_payload(0));
      }
      begin_running(now);
      return;
    }
    if (const auto* s = std::get_if<net::msg::Shutdown>(&message)) {
      if (s->reset) {  // a served tree between runs: wait for the next one (docs/serve.md)
        if (!parent_idle_) spdlog::info("{}: the parent serves a tree with no run now; waiting", opt_.name);
        parent_idle_ = true;
        join_deadline_ = -1;
        for (auto& [peer, hello] : waiting_hellos_) transport_.send_child(peer, net::msg::Shutdown{s->reason, true});
        return;
      }
      for (auto& [peer, hello] : waiting_hellos_) transport_.send_child(peer, net::msg::Shutdown{s->reason});
      end(exit_ok);
      return;
    }
    if (std::holds_alternative<net::msg::Heartbeat>(message)) return;
    if (opt_.after_reset) {  // the last run's tail, sent before the parent saw the new Hello
      spdlog::debug("{}: ignoring a {} of the last run while joining the next", opt_.name,
                    net::kind_name(net::kind_of(message)));
      return;
    }
    parent_lost(std::string("expected Welcome, got ") + net::kind_name(net::kind_of(message)), now);
    return;
  }
  std::visit(Overloaded{
      [&](net::msg::Task& t) {
        const core::TaskId id{t.task_id};
        if (id.app().value >= apps_.size()) return parent_lost("task of an unknown application", now);
        if (!payload || payload->size() != apps_[id.app().value].input_bytes())
          return parent_lost("task payload of the wrong size", now);
        if (payloads_.contains(id)) return parent_lost("task " + std::to_string(t.task_id) + " sent twice", now);
        payloads_.emplace(id, std::move(payload));
        if (!transport_.reports_transfers()) acks_.push_back(t.task_id);
        post(core::event::TaskArrived{core::TaskRef{id}});
        drain(now);
      },
      [&](net::msg::Shutdown& s) {
        spdlog::info("{}: {} from parent ({})", opt_.name, s.reset ? "reset" : "shutdown", s.reason);
        closing_from_parent_ = true;
        reset_ = s.reset;
        begin_closing(s.reason, now);
      },
      [&](net::msg::Heartbeat&) {},
      [&](net::msg::Probe& p) { transport_.send_parent(net::msg::ProbeAck{p.seq}); },
      [&](net::msg::Policy& p) {
        post(core::event::PolicyMessage{true, core::ChildId{}, std::move(p.payload)});
        drain(now);
      },
      [&](net::msg::Welcome&) { spdlog::warn("{}: ignoring a second Welcome", opt_.name); },
      [&](net::msg::Pull& p) {
        post(core::event::PullRequested{p.count, p.nbc});
        drain(now);
      },
      [&](net::msg::PushReply& r) { on_push_reply(r, now); },
      [&](net::msg::Blame& b) { on_blame(b, now); },
      [&](auto& other) {
        parent_lost(std::string("unexpected ") + net::kind_name(net::kind_of(net::Message{other})) + " from the parent", now);
      }},
      message);
}

void NodeDriver::on_parent_unreachable(const std::string& why, double now) {
  // Only a rejoin attempt moves on at once: at the first join the parent may not be up yet.
  if (is_root() || phase_ != Phase::joining || lost_at_ < 0) return;
  join_deadline_ = -1;
  parent_lost(why, now);
}

void NodeDriver::on_parent_lost(const std::string& why, double now) {
  if (is_root() || phase_ == Phase::done || phase_ == Phase::rejoin_wait) return;
  if (phase_ == Phase::closing && closing_from_parent_) return;  // it said Shutdown and left: expected
  parent_lost(why, now);
}

/// The parent misbehaved or vanished (or a rejoin attempt failed). This node starts
/// afresh (its parent re-queues everything it sent here): it forgets its tasks, closes
/// its children's connections (they rejoin it once it is back), and rejoins for
/// rejoin_timeout seconds counted from the loss. Tree repair: each round of attempts tries
/// the parent, then each of its ancestors up to the root (the nearest live one wins);
/// rounds are spaced by the back-off 0.5, 1, 2, 4, 8, 8, ... s.
void NodeDriver::parent_lost(const std::string& why, double now, bool voluntary) {
  if (!voluntary) spdlog::error("{}: lost the parent: {}", opt_.name, why);
  if (opt_.rejoin_timeout <= 0) {
    for (auto& [peer, c] : children_) transport_.send_child(peer, net::msg::Shutdown{"parent lost"});
    end(exit_parent_lost);
    return;
  }
  join_deadline_ = -1;
  const bool first_failure = lost_at_ < 0;
  if (first_failure) lost_at_ = now;
  if (now - lost_at_ > opt_.rejoin_timeout) {
    spdlog::error("{}: could not rejoin within {} s; giving up", opt_.name, opt_.rejoin_timeout);
    end(exit_parent_lost);
    return;
  }
  // Forget everything of the old tree; jobs still running are ignored when they end.
  for (auto& [peer, c] : children_) transport_.drop_child(peer);
  children_.clear();
  sends_in_flight_ = 0;
  released_bytes_ = 0;
  peer_of_core_.clear();
  waiting_hellos_.clear();
  events_.clear();
  payloads_.clear();
  results_.clear();
  outputs_.clear();
  blame_.clear();
  departed_.clear();
  acks_.clear();
  local_pending_ = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->second.task) ++it;
    else jobs_.erase(it++);  // calibration runs: forgotten (an erasure moves no other entry)
  }
  sched_.reset();
  prober_.reset();
  ++epoch_;
  configured_ = false;
  calibrating_ = false;
  calib_start_at_ = -1;
  phase_ = Phase::rejoin_wait;
  double delay = 0.1;  // the next ancestor of this round: at once (the socket needs a moment)
  if (first_failure || rejoin_targets_.empty()) {
    rejoin_targets_ = ancestors_;
    if (rejoin_targets_.empty()) rejoin_targets_.push_back(parent_link_);
    rejoin_next_ = 0;
  } else if (++rejoin_next_ >= rejoin_targets_.size()) {
    rejoin_next_ = 0;
  }
  if (first_failure || rejoin_next_ == 0) {  // a new round
    delay = backoff_;
    backoff_ = std::min(backoff_ * 2, 8.0);
  }
  rejoin_at_ = now + delay;
  const auto& target = rejoin_targets_[rejoin_next_];
  spdlog::info("{}: rejoining {} in {:.1f} s", opt_.name,
               target.name.empty() ? std::string("the parent") : "'" + target.name + "' at " + target.endpoint, delay);
}

bool NodeDriver::move_to(const net::msg::Ancestor& target, double now) {
  if (is_root() || phase_ != Phase::running || opt_.rejoin_timeout <= 0 || target.endpoint.empty() ||
      target.endpoint == parent_link_.endpoint)
    return false;
  spdlog::info("{}: re-parenting: leaving {} for '{}' at {}", opt_.name, parent_link_.endpoint, target.name, target.endpoint);
  transport_.send_parent(net::msg::Bye{});  // the old parent re-queues this subtree's tasks at once
  const auto old_ancestors = ancestors_;
  parent_lost("re-parenting to " + target.endpoint, now, true);
  if (phase_ != Phase::rejoin_wait) return true;
  rejoin_targets_.assign(1, target);  // the new parent first, then the old tree's nodes
  for (const auto& a : old_ancestors)
    if (a.endpoint != target.endpoint) rejoin_targets_.push_back(a);
  rejoin_next_ = 0;
  rejoin_at_ = now + 0.1;  // the Bye leaves first
  return true;
}

net::msg::Welcome NodeDriver::welcome_for_children() const {
  net::msg::Welcome w = welcome_;
  w.sender = opt_.name;
  w.ancestors.assign(ancestors_.begin(), ancestors_.begin() + static_cast<std::ptrdiff_t>(std::min(ancestors_.size(), net::max_ancestors)));
  return w;
}

// ---- children --------------------------------------------------------------------

void NodeDriver::on_child_message(PeerId peer, net::Message message, Payload payload, double now) {
  if (phase_ == Phase::done) return;
  auto it = children_.find(peer);
  if (const auto* query = std::get_if<net::msg::TreeQuery>(&message)) {
    // `--parent auto` (docs/planning.md): anyone may ask; the peer is not admitted.
    transport_.send_child(peer, tree_info(), transport_.probe_payload(static_cast<std::size_t>(query->probe_bytes)));
    return;
  }
  if (it != children_.end()) {
    if (const auto* info = std::get_if<net::msg::TreeInfo>(&message)) {
      it->second->endpoint = info->endpoint;  // the child's advertisement
      it->second->last_seen = now;
      return;
    }
  }
  if (it == children_.end()) {
    auto* hello = std::get_if<net::msg::Hello>(&message);
    if (!hello && std::holds_alternative<net::msg::Heartbeat>(message) &&
        std::any_of(waiting_hellos_.begin(), waiting_hellos_.end(), [&](const auto& w) { return w.first == peer; }))
      return;  // a child waiting for this node to join (a served tree between runs: for long)
    if (!hello) {
      spdlog::warn("{}: dropping unknown peer: first message is {}, not Hello", opt_.name,
                   net::kind_name(net::kind_of(message)));
      transport_.drop_child(peer);
      return;
    }
    if (phase_ == Phase::closing) {
      transport_.send_child(peer, net::msg::Shutdown{"run complete", reset_});
      return;
    }
    if (!configured_ || phase_ != Phase::running) {
      if (parent_idle_) transport_.send_child(peer, net::msg::Shutdown{"no run now", true});  // wait with this node
      waiting_hellos_.emplace_back(peer, std::move(*hello));
      return;
    }
    admit(peer, *hello, now);
    return;
  }
  Child& child = *it->second;
  child.last_seen = now;
  if (std::holds_alternative<net::msg::Hello>(message)) {
    // The same connection joins again (restarted or reconnected): a new child.
    const auto hello = std::get<net::msg::Hello>(message);
    drop_child(peer, "it joined again (restarted or reconnected)", false, now);
    admit(peer, hello, now);
    return;
  }
  handle_child(child, peer, message, payload, now);
  drain(now);
}

net::msg::TreeInfo NodeDriver::tree_info() const {
  net::msg::TreeInfo t;
  t.name = opt_.name;
  t.endpoint = opt_.endpoint;
  t.parent_endpoint = is_root() ? std::string() : parent_link_.endpoint;  // the parent now (after a repair or a move)
  t.cores = runner_ ? runner_->cores() : 0;
  if (auto bw = hint_bandwidth_.find(opt_.name); bw != hint_bandwidth_.end()) t.link_bandwidth = bw->second;
  const net::msg::NodeHint* own = nullptr;
  for (const auto& h : welcome_.hints)
    if (h.name == opt_.name) own = &h;
  for (std::size_t k = 0; k < apps_.size(); ++k) {
    const auto& a = apps_[k];
    t.apps.push_back({a.name, a.input_bytes(), a.task_flops(), a.weight, a.cores_per_task});
    double seconds = own && k < own->task_seconds.size() ? own->task_seconds[k] : 0.0;
    if (!(seconds > 0) && k < local_runs_.size() && local_runs_[k] > 0)
      seconds = local_seconds_[k] / static_cast<double>(local_runs_[k]);
    t.task_seconds.push_back(seconds);
  }
  for (const auto& [peer, c] : children_) {
    if (t.children.size() >= net::max_tree_children) break;
    const auto bw = hint_bandwidth_.find(c->name);
    t.children.push_back({c->name, c->endpoint, c->cores, bw == hint_bandwidth_.end() ? 0.0 : bw->second});
  }
  return t;
}

void NodeDriver::admit(PeerId peer, const net::msg::Hello& hello, double now) {
  if (std::find(convicted_.begin(), convicted_.end(), hello.name) != convicted_.end()) {
    spdlog::warn("{}: refusing '{}': caught forging a result earlier in this run", opt_.name, hello.name);
    transport_.send_child(peer, net::msg::Shutdown{"refused: caught forging a result"});
    transport_.drop_child(peer);
    return;
  }
  for (const auto& [p, c] : children_)
    if (c->name == hello.name && p != peer) {
      // A node of that name is already a child here, on another connection: a takeover
      // (or a duplicate name) is refused and logged, and the live node keeps its place
      // (issue 13, hole 3). The newcomer is not told: a restarted node whose old
      // connection is not yet declared dead retries its Hello until it is.
      spdlog::warn("{}: refused a second connection claiming the name '{}' of a live child", opt_.name, hello.name);
      transport_.drop_child(peer);
      return;
    }
  auto child = std::make_unique<Child>();
  child->id = core::ChildId{next_core_child_++};
  child->name = hello.name;
  child->cores = hello.cores;
  child->subtree.insert(hello.name);
  child->last_seen = now;
  peer_of_core_[child->id.value] = peer;
  const core::ChildId id = child->id;
  children_.emplace(peer, std::move(child));
  transport_.send_child(peer, welcome_for_children());
  spdlog::info("{}: child '{}' joined ({} cores)", opt_.name, hello.name, hello.cores);
  node_joined(net::msg::NodeJoined{hello.name, opt_.name, hello.cores, hello.memory}, now);
  const auto bw = hint_bandwidth_.find(hello.name);
  post(core::event::ChildJoined{id, core::ChildInfo{hello.name, hello.cores, bw == hint_bandwidth_.end() ? 0.0 : bw->second}});
  if (prober_) prober_->child_joined(peer, hello.name, now);
  drain(now);
}

void NodeDriver::handle_child(Child& child, PeerId peer, net::Message& message, Payload& payload, double now) {
  std::visit(Overloaded{
      [&](net::msg::Request& q) {
        // A child asks only while its buffer has room (papers/beaumont2006 §4, Figure 1):
        // never for more than B tasks not yet sent. More would black-hole the bag.
        child.requested += q.count;
        if (child.requested > welcome_.buffer)
          return drop_child(peer, "asked for " + std::to_string(child.requested) + " tasks, more than its buffer of " +
                                      std::to_string(welcome_.buffer), true, now);
        post(core::event::WorkRequested{core::Target::to_child(child.id), q.count});
        drain(now);
      },
      [&](net::msg::Result& s) {
        const core::TaskId id{s.task_id};
        if (id.app().value >= apps_.size()) return drop_child(peer, "result for an unknown application", true, now);
        // Result::node is bound to the connection at each hop: a child names only itself or
        // a node it reported joined below it (issue 13, "Blame below an inner node").
        if (!child.subtree.contains(s.node))
          return drop_child(peer, "sent a result computed by '" + s.node + "', outside its subtree", true, now);
        if (s.has_output) {  // a command's output file (docs/command-tasks.md, "Output files")
          const model::AppSpec& app = apps_[id.app().value];
          if (!app.send_output || s.failed)
            return drop_child(peer, "sent an output with a result of '" + app.name + "', which sends none back", true, now);
          if (!payload || payload->size() != s.output_bytes || s.output_bytes > app.max_output_bytes)
            return drop_child(peer, "sent an output of " + std::to_string(payload ? payload->size() : 0) + " bytes, said " +
                                        std::to_string(s.output_bytes) + " (limit " + std::to_string(app.max_output_bytes) + ")",
                              true, now);
          if (is_root() && root_->check_output && !root_->check_output(s, payload)) return blame_forgery(child, peer, s, now);
        }
        if (is_root() && root_->check_result && root_->check_result(s, child.name).forged)
          return blame_forgery(child, peer, s, now);
        blame_.record(s.task_id, child.id.value);
        if (s.has_output) outputs_[id] = std::move(payload);
        results_[id] = std::move(s);
        post(core::event::ResultArrived{child.id, core::TaskRef{id}});
        drain(now);
      },
      [&](net::msg::Received& r) {
        if (transport_.reports_transfers()) return;
        for (auto id : r.task_ids) transfer_done(child, id, now);
        drain(now);
      },
      [&](net::msg::NodeJoined& j) {
        // A child reports joins in its own subtree only: under itself or a node it reported.
        if (!child.subtree.contains(j.parent))
          return drop_child(peer, "reported '" + j.name + "' joined under '" + j.parent + "', outside its subtree", true, now);
        child.subtree.insert(j.name);
        node_joined(j, now);
      },
      [&](net::msg::ProbeAck& a) {
        if (prober_) prober_->on_ack(peer, a.seq, now);
      },
      [&](net::msg::Policy& p) {
        post(core::event::PolicyMessage{false, child.id, std::move(p.payload)});
        drain(now);
      },
      [&](net::msg::Measure& m) { report(m); },
      [&](net::msg::PullReply& r) {
        core::event::TasksReturned e{{{}, std::move(r.bcs), r.rejected}, child.id};
        for (auto id : r.task_ids) e.tasks.push_back(core::TaskRef{core::TaskId{id}});
        post(std::move(e));
        drain(now);
      },
      [&](net::msg::Push& p) { on_push(child.id, p, now); },
      [&](net::msg::Capacity& c) {
        // Say which applications a subtree cannot run: why it never gets their tasks.
        std::string cannot;
        for (std::size_t k = 0; k < c.fits.size() && k < apps_.size(); ++k)
          if (!c.fits[k]) cannot += (cannot.empty() ? "" : ", ") + apps_[k].name;
        if (!cannot.empty())
          spdlog::info("{}: '{}' and its subtree cannot run {} ({} cores, {} bytes of memory, {} bytes of disk in all)",
                       opt_.name, child.name, cannot, c.cores, c.memory, c.disk);
        post(core::event::CapacityReported{child.id, core::SubtreeCapacity{std::move(c.fits), c.cores, c.memory, c.disk}});
        drain(now);
      },
      [&](net::msg::BlameReply& r) { on_blame_reply(child, peer, r, now); },
      [&](net::msg::Heartbeat& h) {
        // Its own state and its subtree's only (as Result::node and NodeJoined are bound).
        for (const auto& l : h.loads)
          if (!child.subtree.contains(l.name))
            return drop_child(peer, "reported the state of '" + l.name + "', outside its subtree", true, now);
        if (!h.loads.empty()) child.loads = std::move(h.loads);
      },
      [&](net::msg::Bye&) {
        drop_child(peer, "said goodbye", false, now);
        maybe_closed(now);
      },
      [&](auto& other) {
        drop_child(peer, std::string("unexpected ") + net::kind_name(net::kind_of(net::Message{other})) + " from a child", true, now);
      }},
      message);
}

void NodeDriver::on_child_failed(PeerId peer, const std::string& why, double now) {
  if (children_.contains(peer)) {
    drop_child(peer, why, false, now);
    maybe_closed(now);
    drain(now);
  } else {
    spdlog::warn("{}: dropping unknown peer: {}", opt_.name, why);
    transport_.drop_child(peer);
  }
}

void NodeDriver::on_transfer_done(PeerId peer, std::uint64_t task_id, double now) {
  auto it = children_.find(peer);
  if (it == children_.end()) return;
  transfer_done(*it->second, task_id, now);
  drain(now);
}

/// Drops a child: the core re-queues what it held. `tell`: it misbehaved and is told so
/// (it may still be alive); a gone or departing child is not.
void NodeDriver::drop_child(PeerId peer, const std::string& why, bool tell, double now) {
  auto it = children_.find(peer);
  if (it == children_.end()) return;
  const bool quiet = phase_ == Phase::closing && why == "said goodbye";
  if (!quiet) spdlog::warn("{}: dropping child '{}': {}", opt_.name, it->second->name, why);
  if (tell) transport_.send_child(peer, net::msg::Shutdown{wire_text("dropped by its parent: " + why)});
  const core::ChildId id = it->second->id;
  const std::string name = it->second->name;
  // Its unacknowledged transfers are over: the port they held is free again.
  for (const auto& [task_id, s] : it->second->sends) {
    if (s.released) released_bytes_ -= static_cast<std::uint64_t>(s.bytes);
    else if (sched_) post(core::event::SendDone{id});
  }
  sends_in_flight_ -= it->second->sends.size();
  peer_of_core_.erase(id.value);
  children_.erase(it);
  transport_.drop_child(peer);
  if (prober_) prober_->child_left(peer, now);
  if (sched_) post(core::event::ChildLeft{id});
  // A Blame can still name it (it forged, then left): keep the names of recent departures.
  departed_.emplace_back(id.value, name);
  if (departed_.size() > 4096) departed_.pop_front();
  for (const auto& p : blame_.forget_child(id.value)) blame_found(p.task_id, name, name, now);  // accused, then gone
}

void NodeDriver::node_joined(const net::msg::NodeJoined& j, double now) {
  ++joined_nodes_;
  if (is_root()) {
    if (root_->on_joined) root_->on_joined(j);
    if (!dispatching_ && phase_ == Phase::running && joined_nodes_ >= root_->wait_for_nodes) start_dispatching(now);
  } else {
    transport_.send_parent(j);
  }
}

const core::Policy* NodeDriver::policy() const { return sched_ ? &sched_->policy() : nullptr; }

void NodeDriver::report(const net::msg::Measure& m) {
  if (is_root()) {
    if (root_->on_measure) root_->on_measure(m);
  } else {
    transport_.send_parent(m);
  }
}

NodeDriver::Child* NodeDriver::child_by_core(core::ChildId id) {
  auto p = peer_of_core_.find(id.value);
  if (p == peer_of_core_.end()) return nullptr;
  auto c = children_.find(p->second);
  return c == children_.end() ? nullptr : c->second.get();
}

// ---- ending ----------------------------------------------------------------------

/// Shutdown goes down the tree; each node waits (at most shutdown_grace) for its
/// children's Bye, then says Bye to its parent and ends — so no worker mistakes the
/// end of the run for a lost parent.
void NodeDriver::begin_closing(const std::string& reason, double now) {
  if (phase_ == Phase::closing || phase_ == Phase::done) return;
  phase_ = Phase::closing;
  closing_code_ = exit_ok;
  for (auto& [peer, c] : children_) {
    c->closing = true;
    transport_.send_child(peer, net::msg::Shutdown{wire_text(reason), reset_});
  }
  closing_deadline_ = now + opt_.shutdown_grace;
  maybe_closed(now);
}

void NodeDriver::maybe_closed(double now) {
  if (phase_ != Phase::closing) return;
  if (!children_.empty() && now < closing_deadline_) return;
  if (!children_.empty() && opt_.shutdown_grace > 0)
    spdlog::warn("{}: {} children did not say goodbye within {} s", opt_.name, children_.size(), opt_.shutdown_grace);
  // Issue 21: a policy's fallbacks (lp: FCFS choices) reach the master before Bye.
  if (sched_ && (sched_->policy().needs_calibration() || sched_->policy().fallbacks() > 0)) {
    const auto n = sched_->policy().fallbacks();
    spdlog::info("{}: policy {} fell back {} times", opt_.name, sched_->policy().name(), n);
    report(net::msg::Measure{opt_.name, "", net::msg::Measure::What::fallbacks, static_cast<double>(n)});
  }
  if (!is_root()) transport_.send_parent(net::msg::Bye{});
  end(closing_code_);
}

void NodeDriver::finish(double now) {
  if (is_root()) begin_closing("run complete", now);
}

void NodeDriver::interrupt(double now, int code) {
  if (phase_ == Phase::done) return;
  if (phase_ == Phase::closing) {
    closing_code_ = code;
    return;
  }
  reset_ = false;  // an interrupted node sends its children away, served tree or not
  begin_closing("interrupted", now);
  closing_code_ = code;
  // An interrupted node does not wait for its children: it tells them and leaves.
  closing_deadline_ = now;
  maybe_closed(now);
}

void NodeDriver::end(int code) {
  if (phase_ != Phase::done) log_migration();
  phase_ = Phase::done;
  exit_code_ = code;
}

// ---- time ------------------------------------------------------------------------

std::optional<double> NodeDriver::next_deadline() const {
  if (phase_ == Phase::done) return std::nullopt;
  double t = -1;
  t = earliest(t, join_deadline_);
  t = earliest(t, rejoin_at_);
  t = earliest(t, next_heartbeat_);
  if (phase_ == Phase::closing) t = earliest(t, closing_deadline_);
  t = earliest(t, next_tick_);
  t = earliest(t, wait_deadline_);
  t = earliest(t, calib_start_at_);
  if (auto due = blame_.next_deadline()) t = earliest(t, *due);
  if (is_root() && dispatching_ && !calibrating_ && phase_ == Phase::running)
    t = earliest(t, orphan_since_ + opt_.orphan_timeout);
  if (sched_ && phase_ == Phase::running && !calibrating_ && (!is_root() || dispatching_))
    if (auto due = sched_->next_deadline()) t = earliest(t, *due);
  if (t < 0) return std::nullopt;
  return t;
}

void NodeDriver::on_timer(double now) {
  if (phase_ == Phase::done) return;
  if (phase_ == Phase::joining && join_deadline_ >= 0 && now >= join_deadline_) {
    join_deadline_ = -1;
    parent_lost("no Welcome within " + seconds_text(opt_.join_timeout) + " s", now);
    return;
  }
  if (phase_ == Phase::rejoin_wait && now >= rejoin_at_) {
    rejoin_at_ = -1;
    if (now - lost_at_ > opt_.rejoin_timeout) {
      spdlog::error("{}: could not rejoin within {} s; giving up", opt_.name, opt_.rejoin_timeout);
      end(exit_parent_lost);
      return;
    }
    const net::msg::Ancestor target = rejoin_targets_.at(rejoin_next_);
    if (!target.endpoint.empty() && target.endpoint != parent_link_.endpoint)
      spdlog::info("{}: trying ancestor '{}' at {}", opt_.name, target.name, target.endpoint);
    parent_link_ = target;
    if (parent_link_.name == parent_link_.endpoint) parent_link_.name.clear();  // a parent that never said its name
    transport_.restart_to(target);
    phase_ = Phase::joining;
    transport_.send_parent(net::msg::Hello{opt_.name, runner_ ? runner_->cores() : 0, opt_.memory});
    join_deadline_ = now + std::min(opt_.join_timeout, 5.0);
    return;
  }
  if (next_heartbeat_ >= 0 && now >= next_heartbeat_) heartbeats(now);
  expire_blames(now);
  if (phase_ == Phase::closing) {
    maybe_closed(now);
    return;
  }
  if (is_root() && wait_deadline_ >= 0 && !dispatching_ &&
      (joined_nodes_ >= root_->wait_for_nodes || now >= wait_deadline_)) {
    if (joined_nodes_ < root_->wait_for_nodes)
      spdlog::warn("{}: only {} of {} nodes joined within {} s; starting anyway", opt_.name, joined_nodes_,
                   root_->wait_for_nodes, root_->wait_timeout);
    start_dispatching(now);
  }
  if (calib_start_at_ >= 0 && now >= calib_start_at_) start_calibration(now);
  if (is_root() && dispatching_ && !calibrating_ && phase_ == Phase::running) {
    if (!children_.empty() || runner_) {
      orphan_since_ = now;
    } else if (now - orphan_since_ >= opt_.orphan_timeout) {
      spdlog::error("{}: no node can compute: no worker for {} s", opt_.name, opt_.orphan_timeout);
      end(exit_error);
      return;
    }
  }
  if (sched_ && phase_ == Phase::running && !calibrating_ && (!is_root() || dispatching_)) {
    if (auto due = sched_->next_deadline(); due && now >= *due) events_.push_back(core::event::Tick{});
    drain(now);
  }
  if (is_root() && next_tick_ >= 0 && now >= next_tick_) {
    if (root_->on_tick) root_->on_tick(now);
    next_tick_ = now + root_->tick_interval;
  }
}

void NodeDriver::flush(double now) {
  (void)now;
  if (acks_.empty() || is_root()) return;
  for (std::size_t i = 0; i < acks_.size(); i += net::max_received_ids) {
    const auto end_i = std::min(acks_.size(), i + net::max_received_ids);
    transport_.send_parent(net::msg::Received{std::vector<std::uint64_t>(acks_.begin() + static_cast<std::ptrdiff_t>(i),
                                                                          acks_.begin() + static_cast<std::ptrdiff_t>(end_i))});
  }
  acks_.clear();
}

/// Heartbeats both ways (docs/fault-tolerance.md): every node sends one to its parent
/// and to each child every interval; a child silent for the timeout is dead. The parent
/// is judged by its connection (the adapter calls on_parent_lost), because heartbeats
/// queue behind task payloads on slow links.
void NodeDriver::heartbeats(double now) {
  next_heartbeat_ = now + opt_.heartbeat_interval;
  // Node states ride on the heartbeats up the tree (`treefarm status`): this node's, then
  // those its children last reported, as many as one heartbeat carries.
  net::msg::Heartbeat up;
  if (!is_root() || root_->on_load) {
    up.loads.push_back(own_load());
    for (const auto& [peer, c] : children_)
      for (const auto& l : c->loads)
        if (up.loads.size() < net::max_loads) up.loads.push_back(l);
  }
  if (is_root()) {
    if (root_->on_load)
      for (const auto& l : up.loads) root_->on_load(l);
  } else if (phase_ != Phase::rejoin_wait) {
    transport_.send_parent(up);
  }
  std::vector<PeerId> silent;
  for (auto& [peer, c] : children_) {
    transport_.send_child(peer, net::msg::Heartbeat{});
    if (now - c->last_seen > opt_.heartbeat_timeout) silent.push_back(peer);
  }
  for (auto peer : silent)
    drop_child(peer, "no message for " + seconds_text(opt_.heartbeat_timeout) + " s: declared dead", false, now);
  if (!silent.empty()) {
    drain(now);
    maybe_closed(now);
  }
  check_acknowledgements(now);
}

/// A child alive (it sends heartbeats) but that never acknowledges a transfer would hold
/// the one-port forever: past ack_timeout (plus four times the expected transfer time of
/// what it has not acknowledged, at the link's known bandwidth) it is dropped and told.
void NodeDriver::check_acknowledgements(double now) {
  if (!(opt_.ack_timeout > 0) || transport_.reports_transfers() || !sched_ || phase_ != Phase::running) return;
  std::vector<std::pair<PeerId, std::string>> late;
  for (auto& [peer, c] : children_) {
    if (c->sends.empty()) continue;
    double oldest = now, bytes = 0;
    for (const auto& [id, s] : c->sends) {
      oldest = std::min(oldest, s.sent_at);
      bytes += s.bytes;
    }
    double bandwidth = 0;
    if (auto st = sched_->state().children.find(c->id); st != sched_->state().children.end())
      bandwidth = st->second.bandwidth;
    const double limit = opt_.ack_timeout + (bandwidth > 0 ? 4 * bytes / bandwidth : 0.0);
    if (now - oldest > limit)
      late.emplace_back(peer, "did not acknowledge a task transfer within " + std::to_string(static_cast<long>(limit)) + " s");
  }
  for (const auto& [peer, why] : late) drop_child(peer, why, true, now);
  if (!late.empty()) {
    drain(now);
    maybe_closed(now);
  }
}

// ---- calibration -----------------------------------------------------------------

std::size_t calibration_inputs_for(std::uint64_t input_bytes) {
  if (input_bytes == 0) return 1;
  const std::uint64_t n = (calibration_pool_bytes + input_bytes - 1) / input_bytes;
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(n, 1, calibration_pool_inputs));
}

/// Keeps every core busy with the applications' kernels — interleaved, or one application
/// at a time under a CPU quota (CalibrationWindow) — until each has run calibrate_reps
/// times and for at least calibrate_seconds in all: all nodes measure at the same time, so
/// on shared cores the durations include the sharing, as in a run (docs/calibration.md).
void NodeDriver::start_calibration(double now) {
  calib_start_at_ = -1;
  calib_started_ = now;
  if (!runner_) return;
  std::vector<std::uint32_t> cores_per_task;
  std::vector<bool> measure;
  calib_inputs_.assign(apps_.size(), {});
  calib_next_input_.assign(apps_.size(), 0);
  calib_output_.assign(apps_.size(), {0.0, 0});
  for (std::size_t k = 0; k < apps_.size(); ++k) {
    const auto& app = apps_[k];
    cores_per_task.push_back(app.cores_per_task);
    measure.push_back(app.cores_per_task <= runner_->cores() && app.kernel != model::Kernel::abstract);
    // Several inputs taken in turn, together larger than a last-level cache: in a run each
    // task's input arrives fresh from the network, not from the cache a single reused
    // input would sit in (issue 21: the quickstart's kernels ran 1.4x slower in the run than
    // calibrated on one input).
    const std::size_t count = measure.back() ? calibration_inputs_for(app.input_bytes()) : 0;
    for (std::size_t i = 0; i < count; ++i)
      calib_inputs_[k].push_back(runner_->calibration_input(app, welcome_.seed, static_cast<std::uint32_t>(k)));
  }
  CalibrationWindow::Limits limits;
  limits.reps = welcome_.calibrate_reps;
  limits.min_kernel_seconds = calibrate_seconds;
  if (const auto quota = runner_->cpu_quota_period()) {
    // Under a CPU quota: one application at a time over five of its periods (issue 21).
    limits.sustained = true;
    limits.min_window = std::max(limits.min_window, 5 * *quota);
  }
  calib_window_.emplace(std::move(cores_per_task), std::move(measure), runner_->cores(), now, limits);
  for (std::uint32_t c = 0; c < runner_->cores(); ++c) submit_calibration();
}

/// Submits one more calibration run: the application the window asks for.
void NodeDriver::submit_calibration() {
  const auto k = calib_window_ ? calib_window_->next() : std::nullopt;
  if (!k) return;
  const std::uint64_t id = next_job_++;
  jobs_.emplace(id, Job{std::nullopt, 0, *k, apps_[*k].cores_per_task});
  auto& inputs = calib_inputs_[*k];
  runner_->start(id, apps_[*k], inputs.empty() ? Payload{} : inputs[calib_next_input_[*k]++ % inputs.size()]);
}

void NodeDriver::calibration_done(std::size_t k, const JobOutcome& done, double now) {
  if (!calibrating_ || !calib_window_ || k >= apps_.size()) return;
  if (done.failed) {
    if (!calib_window_->done(k)) spdlog::error("{}: calibration of '{}' failed: {}", opt_.name, apps_[k].name, done.error);
    calib_window_->abandon(k);
    submit_calibration();
    return;
  }
  const double window = calib_window_->window_seconds(k, now);
  auto& [output_sum, output_runs] = calib_output_[k];
  output_sum += static_cast<double>(done.output_bytes);
  ++output_runs;
  if (const auto seconds = calib_window_->record(k, done.run_seconds, now)) {
    if (apps_[k].send_output) {
      // The bytes each task sends back up (issue 20): before task_seconds, which the master
      // counts as the application measured here.
      const double bytes = output_sum / static_cast<double>(output_runs);
      spdlog::info("{}: '{}' writes {:.0f} bytes of output per task here (mean of {} runs)", opt_.name,
                   apps_[k].name, bytes, output_runs);
      report(net::msg::Measure{opt_.name, apps_[k].name, net::msg::Measure::What::output_bytes, bytes});
    }
    spdlog::info("{}: '{}' takes {:.6f} s per task here ({} runs over {:.3f} s; mean run {:.6f} s, median {:.6f} s)",
                 opt_.name, apps_[k].name, *seconds, calib_window_->runs(k), window,
                 calib_window_->mean_run_seconds(k), calib_window_->median_run_seconds(k));
    report(net::msg::Measure{opt_.name, apps_[k].name, net::msg::Measure::What::task_seconds, *seconds});
  }
  submit_calibration();
}

// ---- blame (issue 13) --------------------------------------------------------------
// docs/security.md, "Blame below an inner node". Only the root can prove a result forged
// (spot checks need the run's secret inputs); only the nodes on the result's way up know
// who sent it. Each asks the child it came from (msg::Blame), down to the node whose leaf
// child or own executor produced it: that node drops the forger and msg::BlameReply names
// it on the way up, each hop checking the name is in the answering child's subtree. A
// child that cannot or does not answer in time, or names a node outside its subtree, is
// convicted by its parent instead: an inner node is trusted exactly as far as its subtree.

namespace {
std::string task_text(std::uint64_t task_id, const std::vector<model::AppSpec>& apps) {
  const core::TaskId id{task_id};
  const auto k = id.app().value;
  return "task " + std::to_string(id.index()) + (k < apps.size() ? " of '" + apps[k].name + "'" : std::string());
}
}  // namespace

void NodeDriver::blame_forgery(Child& child, PeerId peer, const net::msg::Result& forged, double now) {
  const core::TaskRef task{core::TaskId{forged.task_id}};
  const core::ChildId id = child.id;
  // The child's hold on the task ends; with no stored result nothing is recorded, and the
  // task is done again. A child that does not hold the task (a result for a task it was
  // never sent, or out of the bag's range) is dropped by the scheduler's check right here
  // (drain): then there is nothing to reopen or blame (found by fuzz_driver).
  post(core::event::ResultArrived{id, task});
  drain(now);
  if (child_by_core(id) == nullptr) return;
  post(core::event::TasksReopened{{task}});
  const bool leaf = child.subtree.size() == 1 || forged.node == child.name;
  if (!leaf && blame_.expect(forged.task_id, child.id.value, now + opt_.blame_timeout)) {
    spdlog::warn("{}: the result of {} computed by '{}' is forged; asking '{}' who sent it", opt_.name,
                 task_text(forged.task_id, apps_), forged.node, child.name);
    transport_.send_child(peer, net::msg::Blame{forged.task_id, forged.node, opt_.blame_timeout / 2});
  } else {
    const std::string name = child.name;
    drop_child(peer, "forged the result of " + task_text(forged.task_id, apps_), true, now);
    blame_found(forged.task_id, name, name, now);
  }
  drain(now);
}

void NodeDriver::on_blame(const net::msg::Blame& b, double now) {
  const auto from = blame_.who_sent(b.task_id);
  std::string culprit;
  if (!from) {
    spdlog::warn("{}: blamed for {}, which it no longer remembers passing up", opt_.name, task_text(b.task_id, apps_));
    transport_.send_parent(net::msg::BlameReply{b.task_id, ""});
    return;
  }
  if (*from == BlameLedger::local) {
    spdlog::error("{}: its own executor computed the forged result of {}", opt_.name, task_text(b.task_id, apps_));
    transport_.send_parent(net::msg::BlameReply{b.task_id, opt_.name});
    return;
  }
  Child* c = child_by_core(core::ChildId{*from});
  if (!c) {  // it sent the result, then left: it is the one this node can name
    for (const auto& [core_id, name] : departed_)
      if (core_id == *from) culprit = name;
    if (!culprit.empty()) blame_found(b.task_id, culprit, culprit, now);
    else transport_.send_parent(net::msg::BlameReply{b.task_id, ""});
    return;
  }
  const PeerId peer = peer_of_core_.at(*from);
  const bool leaf = c->subtree.size() == 1 || b.node == c->name;
  const double wait = std::min(b.wait_seconds, opt_.blame_timeout);
  if (!leaf && wait > 0 && blame_.expect(b.task_id, *from, now + wait)) {
    spdlog::warn("{}: blamed for {}: asking '{}' who sent it", opt_.name, task_text(b.task_id, apps_), c->name);
    transport_.send_child(peer, net::msg::Blame{b.task_id, b.node, wait / 2});
    return;
  }
  culprit = c->name;
  drop_child(peer, "forged the result of " + task_text(b.task_id, apps_), true, now);
  blame_found(b.task_id, culprit, culprit, now);
  drain(now);
}

void NodeDriver::on_blame_reply(Child& child, PeerId peer, const net::msg::BlameReply& r, double now) {
  if (!blame_.answered(r.task_id, child.id.value))
    return drop_child(peer, "answered a Blame it was not asked", true, now);
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
    drop_child(peer, why + task_text(r.task_id, apps_), true, now);
    blame_found(r.task_id, name, name, now);
  }
  drain(now);
}

void NodeDriver::expire_blames(double now) {
  bool any = false;
  for (const auto& p : blame_.expired(now)) {
    const auto peer = peer_of_core_.find(p.child);
    if (peer == peer_of_core_.end()) continue;
    const std::string name = children_.at(peer->second)->name;
    drop_child(peer->second, "did not answer the Blame of " + task_text(p.task_id, apps_) + " in time", true, now);
    blame_found(p.task_id, name, name, now);
    any = true;
  }
  if (any) drain(now);
}

/// `culprit` is convicted of forging the result of `task_id`, which came through child
/// `via` (== culprit: the child itself is held responsible, and has been dropped).
void NodeDriver::blame_found(std::uint64_t task_id, const std::string& via, const std::string& culprit, double now) {
  (void)now;
  if (std::find(convicted_.begin(), convicted_.end(), culprit) == convicted_.end()) convicted_.push_back(culprit);
  if (!is_root()) {
    spdlog::warn("{}: '{}' convicted of forging the result of {}", opt_.name, culprit, task_text(task_id, apps_));
    transport_.send_parent(net::msg::BlameReply{task_id, culprit});
    return;
  }
  std::vector<core::TaskRef> redo;
  if (root_->convict) redo = root_->convict(culprit, via, culprit == via);
  spdlog::error("{}: '{}' (below child '{}') convicted of forging the result of {}; {} of its results are redone",
                opt_.name, culprit, via, task_text(task_id, apps_), redo.size());
  if (!redo.empty()) post(core::event::TasksReopened{std::move(redo)});
}

}  // namespace treefarm::node
