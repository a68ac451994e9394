/// @file NodeDriverChildren.cpp
/// The node driver's side of its children: admission (Hello, Welcome), their messages,
/// drops, liveness (heartbeats both ways, acknowledgement deadlines) and what the node
/// tells of itself (TreeInfo, its state in heartbeats). The children's own state is
/// Children's; their transfers' is SendLedger's.

#include <algorithm>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/core/Overloaded.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::node {

using core::Overloaded;

void NodeDriver::on_child_message(PeerId peer, net::Message message, Payload payload, double now) {
  if (auto* hello = std::get_if<net::msg::Hello>(&message); hello && keeps_hellos()) {
    // A served tree's next run (docs/serve.md): kept, and the child told to wait.
    children_.hold(peer, *hello);
    transport_.send_child(peer, net::msg::Shutdown{"no run now", true});
    return;
  }
  if (finished()) return;
  if (const auto* query = std::get_if<net::msg::TreeQuery>(&message)) {
    // `--parent auto` (docs/planning.md): anyone may ask; the peer is not admitted.
    transport_.send_child(peer, tree_info(), transport_.probe_payload(static_cast<std::size_t>(query->probe_bytes)));
    return;
  }
  Child* child = children_.find(peer);
  if (!child) {
    auto* hello = std::get_if<net::msg::Hello>(&message);
    if (!hello && std::holds_alternative<net::msg::Heartbeat>(message) && children_.waiting(peer))
      return;  // a child waiting for this node to join (a served tree between runs: for long)
    if (!hello) {
      log_.warn("{}: dropping unknown peer: first message is {}, not Hello", opt_.name, net::kind_name(net::kind_of(message)));
      transport_.drop_child(peer);
      return;
    }
    if (life_.is(Phase::closing)) {
      transport_.send_child(peer, net::msg::Shutdown{"run complete", reset_});
      return;
    }
    if (!life_.is(Phase::running)) {
      if (parent_.idle) transport_.send_child(peer, net::msg::Shutdown{"no run now", true});  // wait with this node
      children_.hold(peer, std::move(*hello));
      return;
    }
    return admit(peer, *hello, now);
  }
  if (const auto* info = std::get_if<net::msg::TreeInfo>(&message)) {
    child->endpoint = info->endpoint;  // the child's advertisement
    child->last_seen = now;
    return;
  }
  child->last_seen = now;
  if (std::holds_alternative<net::msg::Hello>(message)) {
    // The same connection joins again (restarted or reconnected): a new child.
    const auto hello = std::get<net::msg::Hello>(message);
    drop_child(peer, DropKind::gone, "it joined again (restarted or reconnected)", now);
    return admit(peer, hello, now);
  }
  handle_child(*child, peer, message, payload, now);
  drain(now);
}

net::msg::TreeInfo NodeDriver::tree_info() const {
  net::msg::TreeInfo t;
  t.name = opt_.name;
  t.endpoint = opt_.endpoint;
  t.parent_endpoint = is_root() ? std::string() : parent_.parent().endpoint;  // the parent now (after a repair or a move)
  t.cores = work_.cores();
  if (run_.knows_bandwidth_of(opt_.name)) t.link_bandwidth = run_.bandwidth_of(opt_.name);
  const net::msg::NodeHint* own = nullptr;
  for (const auto& h : run_.welcome().hints)
    if (h.name == opt_.name) own = &h;
  const auto& apps = run_.apps();
  for (std::size_t k = 0; k < apps.size(); ++k) {
    const auto& a = apps[k];
    t.apps.push_back({a.name, a.input_bytes(), a.task_flops(), a.weight, a.cores_per_task});
    double seconds = own && k < own->task_seconds.size() ? own->task_seconds[k] : 0.0;
    if (const auto mean = work_.mean_seconds(k); !(seconds > 0) && mean) seconds = *mean;
    t.task_seconds.push_back(seconds);
  }
  for (const auto& [peer, c] : children_.all()) {
    if (t.children.size() >= net::max_tree_children) break;
    t.children.push_back({c->name, c->endpoint, c->cores, run_.bandwidth_of(c->name)});
  }
  return t;
}

void NodeDriver::admit(PeerId peer, const net::msg::Hello& hello, double now) {
  if (blame_.convicted(hello.name)) {
    log_.warn("{}: refusing '{}': caught forging a result earlier in this run", opt_.name, hello.name);
    transport_.send_child(peer, net::msg::Shutdown{"refused: caught forging a result"});
    transport_.drop_child(peer);
    return;
  }
  if (children_.name_taken(hello.name, peer)) {
    // A node of that name is already a child here, on another connection: a takeover
    // (or a duplicate name) is refused and logged, and the live node keeps its place.
    // The newcomer is not told: a restarted node whose old connection is not yet declared
    // dead retries its Hello until it is.
    log_.warn("{}: refused a second connection claiming the name '{}' of a live child", opt_.name, hello.name);
    transport_.drop_child(peer);
    return;
  }
  const core::ChildId id = children_.add(peer, hello, now).id;
  transport_.send_child(peer, welcome_for_children());
  log_.info("{}: child '{}' joined ({} cores)", opt_.name, hello.name, hello.cores);
  node_joined(net::msg::NodeJoined{hello.name, opt_.name, hello.cores, hello.memory}, now);
  post(core::event::ChildJoined{id, core::ChildInfo{hello.name, hello.cores, run_.bandwidth_of(hello.name)}});
  if (auto* prober = calib_.prober()) prober->child_joined(peer, hello.name, now);
  drain(now);
}

void NodeDriver::handle_child(Child& child, PeerId peer, net::Message& message, Payload& payload, double now) {
  std::visit(Overloaded{
      [&](net::msg::Request& q) {
        // A child asks only while its buffer has room (papers/beaumont2006 §4, Figure 1):
        // never for more than B tasks not yet sent. More would black-hole the bag.
        child.requested += q.count;
        const auto buffer = run_.welcome().buffer;
        if (child.requested > buffer)
          return drop_child(peer, DropKind::misbehaved, "asked for " + std::to_string(child.requested) +
                                                            " tasks, more than its buffer of " + std::to_string(buffer), now);
        post(core::event::WorkRequested{core::Target::to_child(child.id), q.count});
        drain(now);
      },
      [&](net::msg::Result& s) { child_result(child, peer, s, payload, now); },
      [&](net::msg::Received& r) {
        if (transport_.reports_transfers()) return;
        for (auto id : r.task_ids) transfer_done(child, id, now);
        drain(now);
      },
      [&](net::msg::NodeJoined& j) {
        // A child reports joins in its own subtree only: under itself or a node it reported.
        if (!child.subtree.contains(j.parent))
          return drop_child(peer, DropKind::misbehaved,
                            "reported '" + j.name + "' joined under '" + j.parent + "', outside its subtree", now);
        child.subtree.insert(j.name);
        node_joined(j, now);
      },
      [&](net::msg::ProbeAck& a) {
        if (auto* prober = calib_.prober()) prober->on_ack(peer, a.seq, now);
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
        const auto& apps = run_.apps();
        for (std::size_t k = 0; k < c.fits.size() && k < apps.size(); ++k)
          if (!c.fits[k]) cannot += (cannot.empty() ? "" : ", ") + apps[k].name;
        if (!cannot.empty())
          log_.info("{}: '{}' and its subtree cannot run {} ({} cores, {} bytes of memory, {} bytes of disk in all)",
                    opt_.name, child.name, cannot, c.cores, c.memory, c.disk);
        post(core::event::CapacityReported{child.id, core::SubtreeCapacity{std::move(c.fits), c.cores, c.memory, c.disk}});
        drain(now);
      },
      [&](net::msg::BlameReply& r) { on_blame_reply(child, peer, r, now); },
      [&](net::msg::Heartbeat& h) {
        // Its own state and its subtree's only (as Result::node and NodeJoined are bound).
        for (const auto& l : h.loads)
          if (!child.subtree.contains(l.name))
            return drop_child(peer, DropKind::misbehaved, "reported the state of '" + l.name + "', outside its subtree", now);
        if (!h.loads.empty()) child.loads = std::move(h.loads);
        // Its subtree's estimates only, of this run's applications (docs/live-model.md).
        for (const auto& e : h.estimates) {
          if (!child.subtree.contains(e.node))
            return drop_child(peer, DropKind::misbehaved, "reported an estimate of '" + e.node + "', outside its subtree", now);
          if ((e.what == net::msg::Estimate::What::task_seconds || e.what == net::msg::Estimate::What::compute_cpu_seconds) &&
              e.app >= run_.apps().size())
            return drop_child(peer, DropKind::misbehaved, "reported an estimate of application " + std::to_string(e.app) +
                                                              " of " + std::to_string(run_.apps().size()), now);
        }
        if (!h.estimates.empty()) estimates_.from_child(child.name, std::move(h.estimates));
      },
      [&](net::msg::Bye&) {
        drop_child(peer, DropKind::goodbye, "said goodbye", now);
        maybe_closed(now);
      },
      [&](auto& other) {
        drop_child(peer, DropKind::misbehaved,
                   std::string("unexpected ") + net::kind_name(net::kind_of(net::Message{other})) + " from a child", now);
      }},
      message);
}

void NodeDriver::child_result(Child& child, PeerId peer, net::msg::Result& s, Payload& payload, double now) {
  const core::TaskId id{s.task_id};
  const auto& apps = run_.apps();
  if (id.app().value >= apps.size()) return drop_child(peer, DropKind::misbehaved, "result for an unknown application", now);
  // Result::node is bound to the connection at each hop: a child names only itself or a
  // node it reported joined below it (docs/security.md, "Blame below an inner node").
  if (!child.subtree.contains(s.node))
    return drop_child(peer, DropKind::misbehaved, "sent a result computed by '" + s.node + "', outside its subtree", now);
  if (s.has_output) {  // a command's output file (docs/command-tasks.md, "Output files")
    const model::AppSpec& app = apps[id.app().value];
    if (!app.send_output || s.failed)
      return drop_child(peer, DropKind::misbehaved, "sent an output with a result of '" + app.name + "', which sends none back",
                        now);
    if (!payload || payload->size() != s.output_bytes || s.output_bytes > app.max_output_bytes)
      return drop_child(peer, DropKind::misbehaved,
                        "sent an output of " + std::to_string(payload ? payload->size() : 0) + " bytes, said " +
                            std::to_string(s.output_bytes) + " (limit " + std::to_string(app.max_output_bytes) + ")",
                        now);
    if (root_ && !root_->output_checks(s, payload)) return blame_forgery(child, peer, s, now);
  }
  if (root_ && root_->forged(s, child.name)) return blame_forgery(child, peer, s, now);
  blame_.passed_up(s.task_id, child.id.value);
  if (s.has_output) outputs_[id] = std::move(payload);
  results_[id] = std::move(s);
  post(core::event::ResultArrived{child.id, core::TaskRef{id}});
  drain(now);
}

void NodeDriver::on_child_failed(PeerId peer, const std::string& why, double now) {
  if (children_.contains(peer)) {
    drop_child(peer, DropKind::gone, why, now);
    maybe_closed(now);
    drain(now);
    return;
  }
  if (!children_.waiting(peer)) log_.warn("{}: dropping unknown peer: {}", opt_.name, why);
  children_.forget_waiting(peer);
  transport_.drop_child(peer);
}

void NodeDriver::on_transfer_done(PeerId peer, std::uint64_t task_id, double now) {
  Child* child = children_.find(peer);
  if (!child) return;
  transfer_done(*child, task_id, now);
  drain(now);
}

/// Drops a child: the core re-queues what it held. A child that misbehaved is told (it
/// may still be alive); a gone or departing one is not.
void NodeDriver::drop_child(PeerId peer, DropKind kind, const std::string& why, double now) {
  std::unique_ptr<Child> child = children_.remove(peer);
  if (!child) return;
  // While closing (every task done, Shutdown sent down), a child leaving is expected: with a
  // Bye, or gone before this node read its Bye (a heartbeat to it found its connection closed).
  if (life_.is(Phase::closing) && kind != DropKind::misbehaved)
    log_.debug("{}: child '{}' left: {}", opt_.name, child->name, why);
  else
    log_.warn("{}: dropping child '{}': {}", opt_.name, child->name, why);
  if (kind == DropKind::misbehaved) transport_.send_child(peer, net::msg::Shutdown{wire_text("dropped by its parent: " + why)});
  const core::ChildId id = child->id;
  // Its unacknowledged transfers are over: the port they held is free again.
  const std::size_t held = ledger_.forget(child->sends);
  if (sched_)
    for (std::size_t i = 0; i < held; ++i) post(core::event::SendDone{id});
  transport_.drop_child(peer);
  if (auto* prober = calib_.prober()) prober->child_left(peer, now);
  if (sched_) post(core::event::ChildLeft{id});
  // A Blame can still name it (it forged, then left): keep the names of recent departures.
  blame_.departed(id.value, child->name);
  estimates_.forget(child->name);
  for (const auto& p : blame_.ledger.forget_child(id.value)) blame_found(p.task_id, child->name, child->name, now);  // accused, then gone
}

void NodeDriver::node_joined(const net::msg::NodeJoined& j, double now) {
  if (!root_) return transport_.send_parent(j);
  root_->joined(j);
  if (!root_->dispatching() && life_.is(Phase::running) && root_->enough_joined()) start_dispatching(now);
}

net::msg::NodeLoad NodeDriver::own_load() const {
  net::msg::NodeLoad l;
  l.name = opt_.name;
  l.cores = work_.cores();
  l.busy_cores = static_cast<std::uint32_t>(std::min<std::uint64_t>(work_.busy_cores(), l.cores));
  const std::size_t running = work_.running_tasks();
  const std::size_t held = is_root() ? 0 : payloads_.size();
  l.queued = static_cast<std::uint32_t>(held > running ? held - running : 0);
  l.load1 = opt_.machine_load ? opt_.machine_load() : -1.0;
  if (!(l.load1 >= 0)) l.load1 = -1.0;
  return l;
}

/// Heartbeats both ways (docs/fault-tolerance.md): every node sends one to its parent
/// and to each child every interval; a child silent for the timeout is dead. The parent
/// is judged by its connection (the adapter calls on_parent_lost), because heartbeats
/// queue behind task payloads on slow links.
void NodeDriver::heartbeats(double now) {
  timers_.arm(Timer::heartbeat, now + opt_.heartbeat_interval);
  // Node states ride on the heartbeats up the tree (`treefarm status`): this node's, then
  // those its children last reported, as many as one heartbeat carries.
  net::msg::Heartbeat up;
  if (!root_ || root_->wants_loads()) {
    up.loads.push_back(own_load());
    for (const auto& [peer, c] : children_.all())
      for (const auto& l : c->loads)
        if (up.loads.size() < net::max_loads) up.loads.push_back(l);
  }
  if (root_) root_->loads(up.loads);
  if (opt_.process_cpu_seconds) estimates_.process_cpu(opt_.process_cpu_seconds());
  up.estimates = estimates_.report();  // docs/live-model.md: estimates ride on heartbeats
  if (root_) root_estimates(std::move(up.estimates), now);
  else if (!life_.is(Phase::rejoin_wait)) transport_.send_parent(up);
  for (auto& [peer, c] : children_.all()) transport_.send_child(peer, net::msg::Heartbeat{});
  const auto silent = children_.silent(now, opt_.heartbeat_timeout);
  for (auto peer : silent)
    drop_child(peer, DropKind::gone, "no message for " + seconds_text(opt_.heartbeat_timeout) + " s: declared dead", now);
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
  if (!(opt_.ack_timeout > 0) || transport_.reports_transfers() || !sched_ || !life_.is(Phase::running)) return;
  std::vector<std::pair<PeerId, std::string>> late;
  for (auto& [peer, c] : children_.all()) {
    double bandwidth = 0;
    if (auto st = sched_->state().children.find(c->id); st != sched_->state().children.end()) bandwidth = st->second.bandwidth;
    if (auto why = SendLedger::late(c->sends, now, bandwidth, opt_.ack_timeout)) late.emplace_back(peer, std::move(*why));
  }
  for (const auto& [peer, why] : late) drop_child(peer, DropKind::misbehaved, why, now);
  if (!late.empty()) {
    drain(now);
    maybe_closed(now);
  }
}

}  // namespace treefarm::node
