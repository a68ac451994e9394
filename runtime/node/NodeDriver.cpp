#include "runtime/node/NodeDriver.hpp"

#include <utility>

#include <algorithm>
#include <stdexcept>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/core/Overloaded.hpp"

namespace treefarm::node {

using core::Overloaded;

NodeDriver::NodeDriver(NodeOptions options, Transport& transport, LocalRunner* runner, std::optional<RootSetup> root)
    : opt_(std::move(options)),
      log_(opt_.log),
      transport_(transport),
      work_(runner),
      root_(root ? std::make_unique<RootRole>(std::move(*root)) : nullptr),
      blame_(root_ != nullptr),
      calib_(opt_.name, work_, transport_, log_, [this](const net::msg::Measure& m) { report(m); }) {
  if (opt_.name.empty()) throw std::invalid_argument("a node needs a name");
  if (opt_.heartbeat_interval < 0 || opt_.heartbeat_timeout <= 0)
    throw std::invalid_argument("heartbeat interval must be >= 0 and timeout > 0 seconds");
  if (opt_.heartbeat_interval > 0 && opt_.heartbeat_timeout <= opt_.heartbeat_interval)
    throw std::invalid_argument("the heartbeat timeout must be longer than the heartbeat interval");
  if (!(opt_.task_deadline_factor >= 0) || !(opt_.task_deadline_floor >= 0) || !(opt_.ack_timeout >= 0))
    throw std::invalid_argument("task deadline factor, task deadline floor and ack timeout must be >= 0");
}

NodeDriver::NodeDriver(NodeOptions options, Transport& transport, std::vector<WaitingHello> waiting)
    : NodeDriver(std::move(options), transport, nullptr, std::nullopt) {
  reset_ = true;
  life_.fire(Trigger::end);
  for (auto& w : waiting) children_.hold(w.peer, std::move(w.hello));
}

NodeDriver::~NodeDriver() = default;

std::uint64_t NodeDriver::completed() const { return sched_ ? sched_->completed() : 0; }
const core::Policy* NodeDriver::policy() const { return sched_ ? &sched_->policy() : nullptr; }

// ---- start, configuration --------------------------------------------------------

void NodeDriver::start(double now) {
  parent_.start(opt_.parent_endpoint, opt_.parent_public_key);
  if (opt_.heartbeat_interval > 0) timers_.arm(Timer::heartbeat, now + opt_.heartbeat_interval);
  if (is_root()) {
    timers_.arm(Timer::orphan, now + opt_.orphan_timeout);
    reset_ = opt_.serve;
    configure(root_->setup().welcome, now);
    timers_.arm(Timer::tick, now + root_->setup().tick_interval);
    begin_running(now);
    return;
  }
  transport_.send_parent(hello());
  timers_.arm(Timer::join, now + opt_.join_timeout);
}

void NodeDriver::adopt(std::vector<WaitingHello> waiting, double now) {
  for (auto& w : waiting) on_child_message(w.peer, std::move(w.hello), {}, now);
}

void NodeDriver::configure(const net::msg::Welcome& w, double now) {
  NodeTraits traits{opt_.name,         work_.cores(),       opt_.memory,          opt_.disk,
                    opt_.speed,        opt_.max_task_losses, opt_.task_deadline_factor, opt_.task_deadline_floor,
                    opt_.migration,    opt_.balance,        &opt_.known_hints};
  core::NodeConfig config = run_.apply(w, traits, is_root() ? &root_->setup().apps : nullptr,
                                       is_root() ? &root_->setup().done_before : nullptr, log_);
  configure_estimates(config.local_seconds);
  work_.configure(run_.apps());
  ledger_.configure(w.one_port, transport_.reports_transfers(), transport_.transfers_share_link(), opt_.one_port_window);
  sched_ = std::make_unique<core::NodeScheduler>(
      std::move(config), core::make_policy(w.policy, is_root() ? root_->setup().policy_options : core::PolicyOptions{}));
  calib_.configure(w);
  if (calib_.active()) timers_.arm(Timer::calibration_start, now + CalibrationRuns::kernels_after);
  if (opt_.heartbeat_interval == 0 && opt_.estimate_interval > 0 && !calib_.active())
    timers_.arm(Timer::estimates, now + opt_.estimate_interval);
}

void NodeDriver::begin_running(double now) {
  life_.fire(Trigger::configured);
  timers_.disarm(Timer::join);
  parent_.joined();
  if (is_root()) {
    if (calib_.active()) {
      root_->calibrating();  // nothing is dispatched; events go straight to the core
    } else if (root_->setup().wait_for_nodes == 0) {
      start_dispatching(now);
    } else {
      timers_.arm(Timer::wait_for_nodes, now + root_->setup().wait_timeout);
    }
  } else if (!calib_.active()) {
    for (auto& a : sched_->start(now)) carry_out(a, now);
    top_up_local();
    drain(now);
  }
  // Children that said Hello before this node was configured.
  for (auto& w : children_.take_waiting()) admit(w.peer, w.hello, now);
}

void NodeDriver::start_dispatching(double now) {
  timers_.disarm(Timer::wait_for_nodes);
  auto deferred = root_->start_dispatching(now);
  for (auto& a : sched_->start(now)) carry_out(a, now);
  for (auto& e : deferred) events_.push_back(std::move(e));
  top_up_local();
  drain(now);
}

void NodeDriver::on_speed_measured(double flops_per_core, double now) {
  if (!life_.is(Phase::measuring) || !pending_welcome_) return;
  opt_.speed = flops_per_core;
  log_.info("{}: {:.3g} flop/s per core (measured for the applications' min_speed)", opt_.name, opt_.speed);
  const net::msg::Welcome w = std::move(*pending_welcome_);
  pending_welcome_.reset();
  welcomed(w, now);
  // What the parent sent while this node measured, in order.
  auto held = std::move(held_from_parent_);
  held_from_parent_.clear();
  for (auto& [message, payload] : held)
    if (!finished() && !life_.is(Phase::rejoin_wait)) on_parent_message(std::move(message), std::move(payload), now);
}

// ---- the core --------------------------------------------------------------------

void NodeDriver::post(core::Event e) {
  if (root_ && root_->defer(e)) return;
  events_.push_back(std::move(e));
}

/// Feeds queued events to the core and carries out its actions. An event the core
/// rejects drops the child that caused it; from the parent it means a broken parent.
void NodeDriver::drain(double now) {
  if (draining_ || !sched_ || finished()) return;
  draining_ = true;
  while (!events_.empty() && !finished()) {
    core::Event e = events_.take_front();
    // One vector reused from event to event; a nested drain gets a fresh one.
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
        if (auto peer = children_.peer_of(culprit->value)) drop_child(*peer, DropKind::misbehaved, err.what(), now);
        continue;
      }
      draining_ = false;
      if (!is_root() && (std::holds_alternative<core::event::TaskArrived>(e) ||
                         std::holds_alternative<core::event::PolicyMessage>(e) ||
                         std::holds_alternative<core::event::PullRequested>(e) ||
                         std::holds_alternative<core::event::PushAnswered>(e)))
        return parent_lost(err.what(), now);
      throw;
    }
    retried_ = false;
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
  if (!work_.runner() || !sched_ || calib_.active() || !life_.is(Phase::running) || (root_ && !root_->dispatching())) return;
  if (const std::uint32_t n = work_.claim(); n > 0) events_.push_back(core::event::WorkRequested{core::Target::executor(), n});
}

void NodeDriver::carry_out(core::Action& action, double now) {
  const auto app_name = [&](core::TaskRef t) -> const std::string& { return run_.apps().at(t.app().value).name; };
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
          if (!a.duplicate && it->second.failed && root_->retry(it->second)) {  // max_retries: done again
            take_output(a.task.id);
            results_.erase(it);
            retried_ = true;
            post(core::event::TasksReopened{{a.task}});
            return;
          }
          root_->completed(it->second, take_output(a.task.id), a.duplicate, now);
          results_.erase(it);
        }
      },
      [&](core::action::TaskAbandoned& a) {
        net::msg::Result r;
        r.task_id = a.task.id.value;
        r.node = opt_.name;
        r.failed = true;
        r.error = "lost with " + std::to_string(a.losses) + " dead workers: given up";
        log_.error("{}: task {} of '{}' {}", opt_.name, a.task.id.index(), app_name(a.task), r.error);
        results_[a.task.id] = std::move(r);
      },
      [&](core::action::LateResultDropped& a) {
        // A re-issued task's second result (task deadlines): the first went up already.
        log_.info("{}: task {} of '{}': late copy's result dropped as a duplicate", opt_.name, a.task.id.index(),
                  app_name(a.task));
        results_.erase(a.task.id);
        outputs_.erase(a.task.id);
        blame_.ledger.retract(a.task.id.value);
      },
      [&](core::action::SendPolicyMessage& a) {
        net::msg::Policy m{std::move(a.payload)};
        if (a.to_parent) {
          if (!is_root()) transport_.send_parent(m);
        } else if (auto peer = children_.peer_of(a.child.value)) {
          transport_.send_child(*peer, m);
        }
      },
      [&](core::action::SendPull& a) {
        if (auto peer = children_.peer_of(a.child.value)) transport_.send_child(*peer, net::msg::Pull{a.count, a.nbc});
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
        if (std::exchange(retried_, false)) return;  // a task of this batch is done again: not complete
        log_.info("{}: all tasks done", opt_.name);
        if (sched_->reissued() > 0)
          log_.info("{}: {} tasks re-issued after their deadline, {} late results dropped as duplicates", opt_.name,
                    sched_->reissued(), sched_->late_duplicates());
        begin_closing("run complete", now);
      }},
      action);
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
  if (root_) {
    payload = root_->payload(task.id);
  } else if (auto it = payloads_.find(task.id); it != payloads_.end()) {
    payload = it->second;  // shared: ours is kept for re-queueing
  }
  Child* c = children_.by_core(child);
  if (!c) {  // left meanwhile: the core re-queues on ChildLeft (already posted)
    events_.push_back(core::event::SendDone{child});
    return;
  }
  const PeerId peer = *children_.peer_of(child.value);
  if (c->requested > 0) --c->requested;
  const std::uint64_t size = payload ? payload->size() : 0;
  if (!transport_.send_child(peer, net::msg::Task{task.id.value}, payload)) {
    // Its transfers end with it; this one never began: the port is free again.
    events_.push_back(core::event::SendDone{child});
    drop_child(peer, DropKind::gone, "unreachable (its connection is gone)", now);
    return;
  }
  const std::uint64_t on_connection = transport_.connection_bytes(peer, task.id.value, size);
  const bool released = ledger_.begin(c->sends, task.id.value, size, on_connection, now, [&](auto&& f) {
    for (auto& [p, other] : children_.all()) f(other->sends);
  });
  if (released) events_.push_back(core::event::SendDone{child});
}

/// A transfer to a child ended (its acknowledgement, or the transport's own report):
/// the one-port is free again, and the transfer time is what the policies learn the
/// link from (papers/beaumont2006 §5.1.4). Only transfers that had the link to
/// themselves are observed (SendLedger).
void NodeDriver::transfer_done(Child& child, std::uint64_t task_id, double now) {
  const auto s = ledger_.end(child.sends, task_id);
  if (!s) return;  // not ours to end (a duplicate or late acknowledgement)
  // Under multi-port a send holds no port: SendDone changes nothing in the core, and one
  // event fewer per task is a pass of the scheduler fewer.
  if (!s->released && ledger_.one_port()) post(core::event::SendDone{child.id});
  if (s->alone && s->bytes > 0 && now > s->sent_at) {
    post(core::event::TransferObserved{child.id, s->bytes, now - s->sent_at});
    estimates_.transfer(child.name, s->bytes, now - s->sent_at);
  }
}

void NodeDriver::start_local(core::TaskRef task) {
  Payload input;
  if (root_) {
    input = root_->payload(task.id);
  } else if (auto it = payloads_.find(task.id); it != payloads_.end()) {
    input = it->second;
  }
  work_.start_task(task, run_.apps().at(task.app().value), input);
}

void NodeDriver::on_job_done(std::uint64_t id, JobOutcome outcome, double now) {
  const auto job = work_.finish(id);
  if (!job) return;
  if (!job->task) return calib_.done(job->app, outcome, now, run_.apps());
  if (!work_.current(*job) || finished()) {  // from before the parent was lost: its cores are free
    top_up_local();
    drain(now);
    return;
  }
  const core::TaskRef task = *job->task;
  // The kernel's own CPU, where measured, for the a-posteriori node rows (docs/live-model.md).
  if (outcome.cpu_seconds >= 0) estimates_.task_cpu(job->app, outcome.cpu_seconds);
  net::msg::Result r;
  r.task_id = task.id.value;
  r.node = opt_.name;
  r.compute_seconds = outcome.run_seconds;
  r.queued_seconds = outcome.queued_seconds;
  r.checksum = outcome.checksum;
  if (outcome.failed) {
    r.failed = true;
    r.error = wire_text(outcome.error, net::max_text_bytes);
    log_.error("{}: task {} of '{}' failed: {}", opt_.name, task.id.index(), run_.apps().at(job->app).name, r.error);
  } else {
    work_.ran(job->app, outcome.run_seconds, run_.apps().size());
    task_estimate(job->app, outcome.run_seconds);
  }
  if (outcome.output && !outcome.failed) {
    r.has_output = true;
    r.output_bytes = outcome.output->size();
    outputs_[task.id] = std::move(outcome.output);
  }
  blame_.passed_up(task.id.value, BlameLedger::local);
  results_[task.id] = std::move(r);
  post(core::event::LocalTaskFinished{task, outcome.run_seconds});
  drain(now);
}

void NodeDriver::report(const net::msg::Measure& m) {
  if (root_) root_->measured(m);
  else transport_.send_parent(m);
}

void NodeDriver::flush(double) {
  if (!is_root()) parent_.flush(transport_);
}

// ---- ending ----------------------------------------------------------------------

/// Shutdown goes down the tree; each node waits (at most shutdown_grace) for its
/// children's Bye, then says Bye to its parent and ends — so no worker mistakes the
/// end of the run for a lost parent.
void NodeDriver::begin_closing(const std::string& reason, double now) {
  if (!life_.allows(Trigger::close)) return;
  life_.fire(Trigger::close);
  closing_code_ = exit_ok;
  for (auto& [peer, c] : children_.all()) {
    c->closing = true;
    transport_.send_child(peer, net::msg::Shutdown{wire_text(reason), reset_});
  }
  timers_.arm(Timer::closing, now + opt_.shutdown_grace);
  maybe_closed(now);
}

void NodeDriver::maybe_closed(double now) {
  if (!life_.is(Phase::closing)) return;
  if (!children_.empty() && !timers_.due(Timer::closing, now)) return;
  if (!children_.empty() && opt_.shutdown_grace > 0 && waits_for_children_)
    log_.warn("{}: {} children did not say goodbye within {} s", opt_.name, children_.size(), opt_.shutdown_grace);
  // A policy's fallbacks (lp: FCFS choices) reach the master before Bye; a policy that
  // follows a plan reports them even when there were none (results say "0 times").
  if (sched_ && (sched_->policy().follows_plan() || sched_->policy().fallbacks() > 0)) {
    const auto n = sched_->policy().fallbacks();
    log_.info("{}: policy {} fell back {} times", opt_.name, sched_->policy().name(), n);
    report(net::msg::Measure{opt_.name, "", net::msg::Measure::What::fallbacks, static_cast<double>(n)});
  }
  if (!is_root()) transport_.send_parent(net::msg::Bye{});
  end(closing_code_);
}

void NodeDriver::finish(double now) {
  if (is_root()) begin_closing("run complete", now);
}

void NodeDriver::interrupt(double now, int code) {
  if (finished()) return;
  if (life_.is(Phase::closing)) {
    closing_code_ = code;
    return;
  }
  reset_ = false;  // an interrupted node sends its children away, served tree or not
  begin_closing("interrupted", now);
  closing_code_ = code;
  // An interrupted node does not wait for its children: it tells them and leaves.
  timers_.arm(Timer::closing, now);
  waits_for_children_ = false;
  if (!children_.empty()) log_.info("{}: interrupted; {} children told to stop, not waited for", opt_.name, children_.size());
  maybe_closed(now);
}

void NodeDriver::end(int code) {
  if (!finished()) log_migration();
  life_.fire(Trigger::end);
  exit_code_ = code;
}

// ---- time ------------------------------------------------------------------------

std::optional<double> NodeDriver::next_deadline() const {
  if (finished()) return std::nullopt;
  std::optional<double> t;
  for (Timer k : {Timer::join, Timer::rejoin, Timer::heartbeat, Timer::tick, Timer::wait_for_nodes, Timer::calibration_start,
                 Timer::estimates})
    t = timers_.earliest(k, t);
  if (life_.is(Phase::closing)) t = timers_.earliest(Timer::closing, t);
  t = Timers::earliest(t, blame_.ledger.next_deadline());
  const bool scheduling = sched_ && life_.is(Phase::running) && !calib_.active() && (!root_ || root_->dispatching());
  if (root_ && scheduling) t = timers_.earliest(Timer::orphan, t);
  if (scheduling) t = Timers::earliest(t, sched_->next_deadline());
  return t;
}

void NodeDriver::on_timer(double now) {
  if (finished()) return;
  if (life_.is(Phase::joining) && timers_.take(Timer::join, now))
    return parent_lost("no Welcome within " + seconds_text(opt_.join_timeout) + " s", now);
  if (life_.is(Phase::rejoin_wait) && timers_.take(Timer::rejoin, now)) return rejoin_due(now);
  if (timers_.due(Timer::heartbeat, now)) heartbeats(now);
  if (timers_.due(Timer::estimates, now)) send_estimates(now);
  expire_blames(now);
  if (life_.is(Phase::closing)) return maybe_closed(now);
  if (root_ && timers_.armed(Timer::wait_for_nodes) && !root_->dispatching() &&
      (root_->enough_joined() || timers_.due(Timer::wait_for_nodes, now))) {
    if (!root_->enough_joined())
      log_.warn("{}: only {} of {} nodes joined within {} s; starting anyway", opt_.name, root_->joined_nodes(),
                root_->setup().wait_for_nodes, root_->setup().wait_timeout);
    start_dispatching(now);
  }
  if (timers_.take(Timer::calibration_start, now)) calib_.start(now, run_.apps());
  const bool scheduling = sched_ && life_.is(Phase::running) && !calib_.active() && (!root_ || root_->dispatching());
  if (root_ && scheduling) {
    if (!children_.empty() || work_.runner()) {
      timers_.arm(Timer::orphan, now + opt_.orphan_timeout);
    } else if (timers_.due(Timer::orphan, now)) {
      log_.error("{}: no node can compute: no worker for {} s", opt_.name, opt_.orphan_timeout);
      return end(exit_error);
    }
  }
  if (scheduling) {
    if (auto due = sched_->next_deadline(); due && now >= *due) events_.push_back(core::event::Tick{});
    drain(now);
  }
  if (root_ && timers_.due(Timer::tick, now)) {
    root_->tick(now);
    timers_.arm(Timer::tick, now + root_->setup().tick_interval);
  }
}

}  // namespace treefarm::node
