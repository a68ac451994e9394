/// @file NodeDriverParent.cpp
/// The node driver's side of its parent: the join (Hello, Welcome; a speed measurement
/// first when the run's applications need it), the parent's messages, its loss and the
/// rejoin over its ancestors (docs/fault-tolerance.md), re-parenting (docs/planning.md).
/// The link's own state is ParentLink's.

#include <algorithm>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/core/Overloaded.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::node {

using core::Overloaded;

net::msg::Hello NodeDriver::hello() const { return net::msg::Hello{opt_.name, work_.cores(), opt_.memory}; }

net::msg::Welcome NodeDriver::welcome_for_children() const {
  net::msg::Welcome w = run_.welcome();
  w.sender = opt_.name;
  const auto& ancestors = parent_.ancestors();
  w.ancestors.assign(ancestors.begin(), ancestors.begin() + static_cast<std::ptrdiff_t>(std::min(ancestors.size(), net::max_ancestors)));
  return w;
}

void NodeDriver::on_parent_message(net::Message message, Payload payload, double now) {
  if (is_root() || finished() || life_.is(Phase::rejoin_wait)) return;
  if (life_.is(Phase::measuring)) {  // applied once the speed is known, in order
    if (!std::holds_alternative<net::msg::Heartbeat>(message)) held_from_parent_.emplace_back(std::move(message), std::move(payload));
    return;
  }
  if (life_.is(Phase::joining)) {
    if (auto* w = std::get_if<net::msg::Welcome>(&message)) {
      // An application that requires a speed: this node's is measured first, by the adapter
      // (a matmul must not block the driver).
      const bool needs_speed = std::any_of(w->apps.begin(), w->apps.end(), [](const auto& a) { return a.min_speed > 0; });
      if (opt_.speed == 0 && needs_speed && work_.runner() && work_.runner()->measure_speed()) {
        pending_welcome_ = std::move(*w);
        timers_.disarm(Timer::join);
        life_.fire(Trigger::welcomed_measuring);
        return;
      }
      return welcomed(*w, now);
    }
    if (const auto* s = std::get_if<net::msg::Shutdown>(&message)) {
      if (s->reset) {  // a served tree between runs: wait for the next one (docs/serve.md)
        if (!parent_.idle) log_.info("{}: the parent serves a tree with no run now; waiting", opt_.name);
        parent_.idle = true;
        timers_.disarm(Timer::join);
        for (const auto& w : children_.waiting()) transport_.send_child(w.peer, net::msg::Shutdown{s->reason, true});
        return;
      }
      for (const auto& w : children_.waiting()) transport_.send_child(w.peer, net::msg::Shutdown{s->reason});
      return end(exit_ok);
    }
    if (std::holds_alternative<net::msg::Heartbeat>(message)) return;
    if (opt_.after_reset) {  // the last run's tail, sent before the parent saw the new Hello
      log_.debug("{}: ignoring a {} of the last run while joining the next", opt_.name, net::kind_name(net::kind_of(message)));
      return;
    }
    return parent_lost(std::string("expected Welcome, got ") + net::kind_name(net::kind_of(message)), now);
  }
  parent_says(message, payload, now);
}

void NodeDriver::welcomed(const net::msg::Welcome& w, double now) {
  try {
    configure(w, now);
  } catch (const std::exception& e) {
    return parent_lost(std::string("unusable Welcome: ") + e.what(), now);
  }
  parent_.welcomed(w, opt_.name, log_);
  log_.info("{}: joined{} (policy {}, buffer {})", opt_.name, w.sender.empty() ? "" : " '" + w.sender + "'", w.policy,
            w.buffer);
  if (!opt_.endpoint.empty()) {  // so that `--parent auto` joiners can find this node
    net::msg::TreeInfo advert;
    advert.name = opt_.name;
    advert.endpoint = opt_.endpoint;
    transport_.send_parent(advert, transport_.probe_payload(0));
  }
  begin_running(now);
}

/// The parent's messages once this node runs (or closes).
void NodeDriver::parent_says(net::Message& message, Payload& payload, double now) {
  std::visit(Overloaded{
      [&](net::msg::Task& t) {
        const core::TaskId id{t.task_id};
        const auto& apps = run_.apps();
        if (id.app().value >= apps.size()) return parent_lost("task of an unknown application", now);
        // A bag with its own inputs (AppSpec::task_fields): each task's input has its own size.
        const auto& app = apps[id.app().value];
        if (!payload || (app.task_fields ? payload->size() > net::max_payload_bytes : payload->size() != app.input_bytes()))
          return parent_lost("task payload of the wrong size", now);
        if (payloads_.contains(id)) return parent_lost("task " + std::to_string(t.task_id) + " sent twice", now);
        payloads_.emplace(id, std::move(payload));
        if (!transport_.reports_transfers()) parent_.acknowledge(t.task_id);
        post(core::event::TaskArrived{core::TaskRef{id}});
        drain(now);
      },
      [&](net::msg::Shutdown& s) {
        log_.info("{}: {} from parent ({})", opt_.name, s.reset ? "reset" : "shutdown", s.reason);
        parent_.closed_by_parent = true;
        reset_ = s.reset;
        begin_closing(s.reason, now);
      },
      [&](net::msg::Heartbeat&) {},
      [&](net::msg::Probe& p) { transport_.send_parent(net::msg::ProbeAck{p.seq}); },
      [&](net::msg::Policy& p) {
        post(core::event::PolicyMessage{true, core::ChildId{}, std::move(p.payload)});
        drain(now);
      },
      [&](net::msg::Welcome&) { log_.warn("{}: ignoring a second Welcome", opt_.name); },
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
  if (is_root() || !life_.is(Phase::joining) || !parent_.rejoining()) return;
  timers_.disarm(Timer::join);
  parent_lost(why, now);
}

void NodeDriver::on_parent_lost(const std::string& why, double now) {
  if (is_root() || finished() || life_.is(Phase::rejoin_wait)) return;
  if (life_.is(Phase::closing) && parent_.closed_by_parent) return;  // it said Shutdown and left: expected
  parent_lost(why, now);
}

/// The parent misbehaved or vanished (or a rejoin attempt failed). This node starts
/// afresh (its parent re-queues everything it sent here): it forgets its tasks, closes
/// its children's connections (they rejoin it once it is back), and rejoins for
/// rejoin_timeout seconds counted from the loss. Tree repair: each round of attempts tries
/// the parent, then each of its ancestors up to the root (the nearest live one wins);
/// rounds are spaced by the back-off 0.5, 1, 2, 4, 8, 8, ... s.
void NodeDriver::parent_lost(const std::string& why, double now, bool voluntary) {
  if (!voluntary) log_.error("{}: lost the parent: {}", opt_.name, why);
  if (opt_.rejoin_timeout <= 0) {
    for (auto& [peer, c] : children_.all()) transport_.send_child(peer, net::msg::Shutdown{"parent lost"});
    return end(exit_parent_lost);
  }
  timers_.disarm(Timer::join);
  const auto delay = parent_.lost(now, opt_.rejoin_timeout);
  if (!delay) {
    log_.error("{}: could not rejoin within {} s; giving up", opt_.name, opt_.rejoin_timeout);
    return end(exit_parent_lost);
  }
  // Forget everything of the old tree; jobs still running are ignored when they end.
  for (auto& [peer, c] : children_.all()) transport_.drop_child(peer);
  children_.clear();
  ledger_.clear();
  events_.clear();
  payloads_.clear();
  results_.clear();
  outputs_.clear();
  blame_.forget();
  parent_.forget_acks();
  work_.lost_parent();
  sched_.reset();
  calib_.stop();
  timers_.disarm(Timer::calibration_start);
  pending_welcome_.reset();
  held_from_parent_.clear();
  life_.fire(Trigger::parent_lost);
  timers_.arm(Timer::rejoin, now + *delay);
  const auto& target = parent_.target();
  log_.info("{}: rejoining {} in {:.1f} s", opt_.name,
            target.name.empty() ? std::string("the parent") : "'" + target.name + "' at " + target.endpoint, *delay);
}

void NodeDriver::rejoin_due(double now) {
  if (parent_.expired(now, opt_.rejoin_timeout)) {
    log_.error("{}: could not rejoin within {} s; giving up", opt_.name, opt_.rejoin_timeout);
    return end(exit_parent_lost);
  }
  const net::msg::Ancestor target = parent_.target();
  if (!target.endpoint.empty() && target.endpoint != parent_.parent().endpoint)
    log_.info("{}: trying ancestor '{}' at {}", opt_.name, target.name, target.endpoint);
  parent_.attempt();
  transport_.restart_to(target);
  life_.fire(Trigger::rejoin);
  transport_.send_parent(hello());
  timers_.arm(Timer::join, now + std::min(opt_.join_timeout, 5.0));
}

bool NodeDriver::move_to(const net::msg::Ancestor& target, double now) {
  if (is_root() || !life_.is(Phase::running) || opt_.rejoin_timeout <= 0 || target.endpoint.empty() ||
      target.endpoint == parent_.parent().endpoint)
    return false;
  log_.info("{}: re-parenting: leaving {} for '{}' at {}", opt_.name, parent_.parent().endpoint, target.name, target.endpoint);
  transport_.send_parent(net::msg::Bye{});  // the old parent re-queues this subtree's tasks at once
  const auto old_ancestors = parent_.ancestors();
  parent_lost("re-parenting to " + target.endpoint, now, true);
  if (!life_.is(Phase::rejoin_wait)) return true;
  parent_.move_to(target, old_ancestors);
  timers_.arm(Timer::rejoin, now + 0.1);  // the Bye leaves first
  return true;
}

}  // namespace treefarm::node
