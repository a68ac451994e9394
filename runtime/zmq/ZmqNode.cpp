#include "runtime/zmq/ZmqNode.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <sys/statvfs.h>
#include <sys/sysinfo.h>

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "runtime/exec/ExecutorRunner.hpp"
#include "runtime/logging/SpdlogSink.hpp"
#include "runtime/zmq/ChildBatches.hpp"
#include "runtime/zmq/FramePayload.hpp"
#include "runtime/zmq/GenerationRunner.hpp"
#include "runtime/node/RunOptions.hpp"
#include "runtime/zmq/NodeProcess.hpp"
#include "runtime/zmq/PeerProber.hpp"
#include "runtime/zmq/SharedInputLinks.hpp"
#include "runtime/zmq/Wire.hpp"

namespace treefarm::zmq_node {

namespace {
/// Messages read from one socket per loop turn at most, so that no socket starves the
/// others (or the executor).
constexpr int burst = 256;
}  // namespace

struct ZmqNode::Impl final : node::Transport {
  node::NodeOptions options;
  Endpoints endpoints;
  zmq::context_t ctx{1};
  std::optional<zmq::socket_t> up, down, up_monitor;
  std::unique_ptr<net::ZapHandler> zap;
  std::unique_ptr<exec::ExecutorRunner> runner;
  std::unique_ptr<GenerationRunner> jobs;  ///< what the drivers see of `runner`
  std::unique_ptr<node::NodeDriver> driver;
  std::unique_ptr<PeerProber> prober;  ///< `treefarm probe` requests (docs/machines-file.md)
  std::string bound;
  int monitor_count = 0;
  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();

  // Children: routing identity <-> peer id. Dropped identities are ignored until they say Hello again.
  std::unordered_map<std::string, node::PeerId> by_identity;
  std::unordered_map<std::uint32_t, std::string> identity_of;
  std::unordered_set<std::string> dropped;
  static constexpr std::size_t max_dropped = 65536;
  /// CURVE: the public key each routing identity said Hello with (names bound to keys).
  std::unordered_map<std::string, std::string> key_of_identity;
  std::uint32_t next_peer = 0;
  /// A served root (docs/serve.md): between runs its driver is one that keeps the Hellos of
  /// would-be children for the next run (NodeDriver::keeps_hellos).
  bool served_root = false;
  std::string run_error;  ///< why the last run_root() failed ("" = it did not)

  // Batching (runtime/net/Batch.hpp): small messages to a peer that announced
  // feature_batches wait here until the end of the loop turn, then go as one frame.
  // Anything sent alone to that peer flushes its batch first, so order is kept.
  bool parent_batches = false;
  net::BatchWriter parent_out;
  SharedInputLinks shared{options.name};  ///< the parent's and the children's shared input segments
  // Results and requests to the parent may wait up to parent_hold seconds (a batch of stream_count
  // leaves at once, in send_parent): a fast stream of tiny tasks turns into few frames, and the parent
  // answers many requests per turn. Anything else (acknowledgements, heartbeats, joins) flushes at once.
  static constexpr double parent_hold = 250e-6;
  // A batch leaves mid-turn once it holds this many messages (issue 14): a turn handling hundreds of
  // tasks or results streams its answers, so the peer works on the first ones meanwhile (sent whole at
  // the turn's end, master and worker took turns: docs/benchmarks.md "Dispatch reaches its goals").
  static constexpr std::size_t stream_count = 128;
  double parent_held_since = -1;  ///< when the oldest waiting result/request was queued
  bool parent_urgent = false;
  ChildBatches child_out;  ///< by peer id; present = batches announced

  /// Frames and the messages in them, each way, and loop turns: logged at debug level
  /// when the node ends (how well batching works, docs/benchmarks.md "Dispatch under load").
  struct Traffic {
    std::uint64_t frames_up = 0, msgs_up = 0, frames_down = 0, msgs_down = 0;
    std::uint64_t frames_in = 0, msgs_in = 0, turns = 0;
  } traffic;

  double now() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }

  void set_transport_heartbeats(zmq::socket_t& s) const {
    s.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(options.heartbeat_interval * 1000));
    s.set(zmq::sockopt::heartbeat_timeout, static_cast<int>(options.heartbeat_timeout * 1000));
    s.set(zmq::sockopt::heartbeat_ttl, static_cast<int>(options.heartbeat_timeout * 1000));
  }

  /// Closes the connection to the parent and its monitor. The monitor is stopped first: libzmq's I/O
  /// thread sends each event on an inproc PAIR and blocks (every socket of the context with it) if that
  /// PAIR has no reader — a socket retrying a dead parent emits an event every reconnect interval.
  void close_parent() {
    if (up) (void)zmq_socket_monitor(static_cast<void*>(*up), nullptr, 0);
    up.reset();
    up_monitor.reset();
  }

  ~Impl() override { close_parent(); }

  void open_parent() {
    up.emplace(ctx, zmq::socket_type::dealer);
    net::configure_socket(*up, false);
    up->set(zmq::sockopt::routing_id, options.name);
    set_transport_heartbeats(*up);
    net::apply_curve_client(*up, endpoints.curve);
    // The parent is lost when its connection closes: the process died (the kernel closes
    // it at once) or ZMTP heartbeats went unanswered for heartbeat_timeout. Any message
    // counts as an answer, so a slow link busy with big tasks is not mistaken for death.
    const std::string monitor = "inproc://parent-monitor-" + std::to_string(monitor_count++);
    // Tree repair: a refused connection or a failed CURVE handshake (a server without the
    // announced key) ends a rejoin attempt at once (NodeDriver::on_parent_unreachable).
    constexpr int events = ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(static_cast<void*>(*up), monitor.c_str(), events) != 0)
      throw std::runtime_error("cannot monitor the parent socket");
    up_monitor.emplace(ctx, zmq::socket_type::pair);
    up_monitor->connect(monitor);
    up->connect(endpoints.parent);
  }

  void open_children(const std::string& where) {
    if (where.empty()) return;
    down.emplace(ctx, zmq::socket_type::router);
    net::configure_socket(*down, true);
    // A rejoining worker takes over its name (its old connection may not be closed yet). Not under
    // CURVE: there ZeroMQ refuses a second connection under a live node's routing identity, so no key
    // pushes another node off (docs/security.md); a rejoining worker retries until the old one is gone.
    down->set(zmq::sockopt::router_handover, !endpoints.curve.enabled);
    // A connection that does not complete the ZMTP (and CURVE) handshake in 5 s is closed:
    // idle or garbage TCP peers cannot pile up.
    down->set(zmq::sockopt::handshake_ivl, 5000);
    set_transport_heartbeats(*down);
    if (endpoints.curve.enabled) {
      if (!zap) zap = std::make_unique<net::ZapHandler>(ctx, endpoints.curve, options.name,  // node keys only (a node probes itself with its own)
                                                          net::ZapPolicy{{net::KeyRole::node}, {}, "the tree"});
      net::apply_curve_server(*down, endpoints.curve);
    }
    // After a restart the old listener may still be closing in ZeroMQ's I/O thread.
    for (int attempt = 0;; ++attempt) {
      try {
        down->bind(where);
        break;
      } catch (const zmq::error_t& e) {
        if (e.num() != EADDRINUSE || attempt >= 40) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    bound = down->get(zmq::sockopt::last_endpoint);
  }

  // ---- node::Transport -----------------------------------------------------------
  void send_parent(const net::Message& message, const node::Payload& payload) override {
    if (!up) return;
    if (const auto* hello = std::get_if<net::msg::Hello>(&message)) {
      net::msg::Hello h = *hello;  // the transport announces what it reads
      h.features |= net::feature_batches;
      if (endpoints.parent.starts_with("ipc://")) h.features |= net::feature_shared_inputs;
      flush_parent();
      zmq::message_t frame;
      net::send(*up, h, nullptr, &frame);
      return;
    }
    shared.going_up(message);
    if (parent_batches && net::BatchWriter::batchable(message, payload ? payload->size() : 0)) {
      const bool holdable = std::holds_alternative<net::msg::Result>(message) || std::holds_alternative<net::msg::Request>(message);
      if (!add_to(parent_out, message, payload)) {
        flush_parent();
        (void)add_to(parent_out, message, payload);  // fits an empty batch: batchable() said so
      }
      if (!holdable) parent_urgent = true;
      else if (parent_held_since < 0) parent_held_since = now();
      if (parent_out.count() >= stream_count) flush_parent();
      return;
    }
    flush_parent();
    zmq::message_t frame = frame_of(payload);
    net::send(*up, message, nullptr, &frame);
    ++traffic.frames_up;
    ++traffic.msgs_up;
  }

  bool send_child(node::PeerId peer, const net::Message& message, const node::Payload& payload) override {
    auto it = identity_of.find(peer.value);
    if (it == identity_of.end() || !down) return false;
    if (SharedInputLinks::follows_held_tasks(message)) release_held(peer.value, true);  // order kept
    if (const auto* info = std::get_if<net::msg::TreeInfo>(&message); info && endpoints.curve.enabled) {
      // `--parent auto` under CURVE: the keys of this node, its parent and its children
      // (a child's routing identity is its name, its key the one it connected with).
      net::msg::TreeInfo t = *info;
      t.public_key = endpoints.curve.own.public_key;
      t.parent_public_key = endpoints.curve.parent_public_key;
      for (auto& c : t.children)
        if (auto key = key_of_identity.find(c.name); key != key_of_identity.end()) c.public_key = key->second;
      if (!flush_child(peer.value)) return false;
      zmq::message_t frame = frame_of(payload);
      return net::send(*down, t, &it->second, &frame);
    }
    if (const auto* welcome = std::get_if<net::msg::Welcome>(&message)) {
      net::msg::Welcome w = *welcome;
      w.features |= net::feature_batches;
      if (!flush_child(peer.value)) return false;
      zmq::message_t frame;
      if (!net::send(*down, w, &it->second, &frame)) return false;
      shared.offer(*down, peer.value, it->second, bound.starts_with("ipc://"), w.buffer, SharedInputLinks::largest_input(w));
      return true;
    }
    auto* out = child_out.find(peer.value);
    if (out && shared.batchable(peer.value, message, payload)) {
      auto* inputs = shared.of(peer.value);
      if (inputs && shared.hold(peer.value, message, payload)) return true;  // until its copied segment has a slot
      if (add_to(*out, message, payload, inputs)) return child_out.queued(peer.value, *out) < stream_count || flush_child(peer.value);
      if (!flush_child(peer.value)) return false;
      if (add_to(*out, message, payload, inputs)) return child_out.queued(peer.value, *out) > 0;
    }
    if (!flush_child(peer.value)) return false;
    zmq::message_t frame = frame_of(payload);
    ++traffic.frames_down;
    ++traffic.msgs_down;
    return net::send(*down, message, &it->second, &frame);
  }

  /// A child's tasks held for its copied segment into its batch (ChildBatches::release_held).
  void release_held(std::uint32_t peer, bool all) {
    child_out.release_held(shared, peer, all, [&] { return flush_child(peer); });
  }

  std::uint64_t connection_bytes(node::PeerId peer, std::uint64_t task_id, std::uint64_t bytes) const override {
    return shared.connection_bytes(peer.value, task_id, bytes);
  }

  void flush_parent() {
    if (up && !parent_out.empty()) {
      ++traffic.frames_up;
      traffic.msgs_up += parent_out.count();
      net::send_batch(*up, parent_out.take());
    }
    parent_held_since = -1;
    parent_urgent = false;
  }

  /// When the held batch to the parent must go (a time on now()'s clock), if any.
  std::optional<double> parent_flush_due() const {
    if (parent_out.empty()) return std::nullopt;
    if (parent_urgent || parent_held_since < 0) return 0.0;  // (a full batch left in send_parent)
    return parent_held_since + parent_hold;
  }

  /// Sends the child's waiting batch; false if the child is gone (the driver is told).
  bool flush_child(std::uint32_t peer) {
    auto* out = child_out.find(peer);
    if (!out || out->empty()) return true;
    auto id = identity_of.find(peer);
    ++traffic.frames_down;
    traffic.msgs_down += out->count();
    auto batch = out->take();
    if (id != identity_of.end() && down && net::send_batch(*down, std::move(batch), &id->second)) return true;
    return false;
  }

  /// End of a loop turn: every waiting batch goes out; an unreachable child is reported failed.
  void flush_all(bool force) {
    if (auto due = parent_flush_due(); due && (force || now() >= *due)) flush_parent();
    std::vector<std::uint32_t> gone;
    for (auto peer : child_out.take_waiting())  // only the children with a batch waiting
      if (!flush_child(peer)) gone.push_back(peer);
    for (auto peer : gone)
      driver->on_child_failed(node::PeerId{peer}, "unreachable (its connection closed)", now());
  }

  void drop_child(node::PeerId peer) override {
    auto it = identity_of.find(peer.value);
    if (it == identity_of.end()) return;
    if (dropped.size() >= max_dropped) dropped.clear();  // bounded: a flood of identities cannot grow it
    dropped.insert(it->second);
    key_of_identity.erase(it->second);
    by_identity.erase(it->second);
    identity_of.erase(it);
    child_out.erase(peer.value);
    shared.forget(peer.value);  // its slots die with it (the segment is unmapped)
  }

  void restart() override { restart_to(net::msg::Ancestor{}); }

  /// Tree repair: reconnects to `target` (empty endpoint: the same parent). Under CURVE
  /// the announced key is the server key, so the handshake fails unless the node there
  /// holds its secret: an orphan joins only the ancestor its tree announced.
  void restart_to(const net::msg::Ancestor& target) override {
    if (!target.endpoint.empty()) endpoints.parent = target.endpoint;
    if (endpoints.curve.enabled && !target.public_key.empty()) endpoints.curve.parent_public_key = target.public_key;
    close_parent();
    by_identity.clear();
    identity_of.clear();
    dropped.clear();
    key_of_identity.clear();
    child_out.clear();
    shared.clear();
    parent_batches = false;
    parent_out = net::BatchWriter();
    if (down) {
      down->set(zmq::sockopt::linger, 0);
      try {
        down->unbind(bound);
      } catch (const zmq::error_t&) {
      }
      down.reset();
      open_children(bound);  // same endpoint: the children find this node again
    }
    open_parent();
  }

  // ---- the loop ------------------------------------------------------------------
  std::optional<node::PeerId> peer_for(const std::string& identity, bool hello) {
    if (auto it = by_identity.find(identity); it != by_identity.end()) return it->second;
    if (dropped.contains(identity)) {
      if (!hello) return std::nullopt;
      dropped.erase(identity);
    }
    const node::PeerId peer{next_peer++};
    by_identity.emplace(identity, peer);
    identity_of.emplace(peer.value, identity);
    return peer;
  }

  /// CURVE: names bound to keys (docs/security.md). A Hello must name the node its key is bound to
  /// (authorized_keys `NAME PUBKEY`); every later message on that routing identity must come with the
  /// same key. Refusals are logged; the peer is ignored (a node whose old connection lingers retries).
  bool authenticated(const net::Received& r) {
    if (!endpoints.curve.enabled) return true;
    const auto* hello = std::get_if<net::msg::Hello>(&r.message);
    if (hello) {
      if (auto owner = zap ? zap->name_bound_to(r.user_id) : std::nullopt; owner && *owner != hello->name) {
        spdlog::warn("{}: refused a Hello as '{}' from public key {}: that key is bound to '{}'", options.name,
                     hello->name, r.user_id, *owner);
        return false;
      }
      if (auto known = key_of_identity.find(r.identity); known != key_of_identity.end() && known->second != r.user_id) {
        spdlog::warn("{}: refused a Hello as '{}' from public key {}: that node is connected with another key",
                     options.name, hello->name, r.user_id);
        return false;
      }
      key_of_identity[r.identity] = r.user_id;
      return true;
    }
    auto known = key_of_identity.find(r.identity);
    if (known != key_of_identity.end() && known->second != r.user_id) {
      spdlog::warn("{}: refused a {} under the identity of '{}' from another public key ({})", options.name,
                   net::kind_name(net::kind_of(r.message)), r.identity, r.user_id);
      return false;
    }
    return true;
  }

  template <class Got>
  void count_in(const Got& got) {
    ++traffic.frames_in;
    const auto* batch = std::get_if<net::ReceivedBatch>(&got);
    traffic.msgs_in += batch ? batch->entries.size() : 1;
  }

  /// `at`: when it arrived (now(); one reading per frame: a clock read per
  /// message of a batch was ~5 % of a loop's time).
  void from_parent(net::Message message, node::Payload payload, double at) {
    if (const auto* w = std::get_if<net::msg::Welcome>(&message)) parent_batches = (w->features & net::feature_batches) != 0;
    driver->on_parent_message(std::move(message), std::move(payload), at);
  }

  void read_parent() {
    for (int k = 0; k < burst && up && !driver->finished(); ++k) {
      auto got = net::try_receive_any(*up, false);
      if (!got) return;
      count_in(*got);
      if (auto* bad = std::get_if<net::BadMessage>(&*got)) {
        driver->on_parent_lost("bad message from the parent: " + bad->reason, now());
        return;
      }
      if (auto* inputs = std::get_if<net::InputsFrame>(&*got)) {
        if (auto bad = shared.offered(*up, *inputs)) return driver->on_parent_lost(*bad, now());
        continue;
      }
      if (auto* batch = std::get_if<net::ReceivedBatch>(&*got)) {
        std::string bad;
        const auto frame = SharedBatch::checked(*batch, shared.parent(), bad);
        if (!frame) return driver->on_parent_lost("bad message from the parent: " + bad, now());
        const double at = now();
        for (std::size_t i = 0; i < batch->entries.size(); ++i) {
          if (!up || driver->finished()) return;
          auto& e = batch->entries[i];
          from_parent(std::move(e.message), SharedBatch::payload(frame, i, e.has_payload), at);
        }
        continue;
      }
      auto& r = std::get<net::Received>(*got);
      node::Payload payload;
      if (r.payload) payload = std::make_shared<FrameBytes>(std::move(*r.payload));
      from_parent(std::move(r.message), std::move(payload), now());
    }
  }

  void from_child(node::PeerId peer, net::Message message, node::Payload payload, double at) {
    if (const auto* h = std::get_if<net::msg::Hello>(&message)) {
      if (h->features & net::feature_batches) child_out.announce(peer.value);  // a new incarnation
      else child_out.erase(peer.value);
      shared.hello(peer.value, h->features);
    }
    if (shared.coming_up(peer.value, message)) release_held(peer.value, false);
    driver->on_child_message(peer, std::move(message), std::move(payload), at);
  }

  /// Served root, after a run that ended by an error: the children waiting before it (`kept`,
  /// still connected) keep their place beside those the failed driver kept, and every child
  /// is told to reset (an admitted one forgets the run and says Hello again).
  std::vector<node::WaitingHello> keep_tree_after_failed_run(std::vector<node::WaitingHello> waiting,
                                                             const std::vector<node::WaitingHello>& kept) {
    for (const auto& w : kept) {
      if (!identity_of.contains(w.peer.value)) continue;
      if (std::none_of(waiting.begin(), waiting.end(), [&](const auto& e) { return e.peer == w.peer; })) waiting.push_back(w);
    }
    std::vector<std::uint32_t> peers;
    for (const auto& [peer, identity] : identity_of) peers.push_back(peer);
    for (auto peer : peers) (void)send_child(node::PeerId{peer}, net::msg::Shutdown{"the run failed; wait for the next", true}, {});
    flush_all(true);
    return waiting;
  }

  /// A finished driver takes no more messages, unless it keeps Hellos for the next run.
  bool accepting() const { return !driver->finished() || driver->keeps_hellos(); }

  void read_children() {
    for (int k = 0; k < burst && down && accepting(); ++k) {
      auto got = net::try_receive_any(*down, true);
      if (!got) return;
      count_in(*got);
      if (auto* bad = std::get_if<net::BadMessage>(&*got)) {
        if (auto it = by_identity.find(bad->identity); it != by_identity.end()) {
          driver->on_child_failed(it->second, "malformed message: " + bad->reason, now());
        } else if (dropped.size() < max_dropped && dropped.insert(bad->identity).second) {
          spdlog::warn("{}: dropping unknown peer: malformed message: {}", options.name, bad->reason);
        }
        continue;
      }
      if (auto* inputs = std::get_if<net::InputsFrame>(&*got)) {
        auto known = by_identity.find(inputs->identity);
        if (known == by_identity.end()) continue;
        if (endpoints.curve.enabled) {
          auto key = key_of_identity.find(inputs->identity);
          if (key == key_of_identity.end() || key->second != inputs->user_id) continue;
        }
        if (auto bad = shared.answered(known->second.value, *inputs)) driver->on_child_failed(known->second, *bad, now());
        continue;
      }
      if (auto* batch = std::get_if<net::ReceivedBatch>(&*got)) {
        // Batches come only from children that announced them in their Hello.
        auto known = by_identity.find(batch->identity);
        if (known == by_identity.end() || !child_out.contains(known->second.value)) continue;
        if (endpoints.curve.enabled) {  // names bound to keys: the same key as its Hello
          auto key = key_of_identity.find(batch->identity);
          if (key == key_of_identity.end() || key->second != batch->user_id) {
            spdlog::warn("{}: refused a batch under the identity of '{}' from another public key ({})", options.name,
                         batch->identity, batch->user_id);
            continue;
          }
        }
        const node::PeerId peer = known->second;
        std::string bad;  // a child has no segment of its parent's to name
        const auto frame = SharedBatch::checked(*batch, nullptr, bad);
        if (!frame) {
          driver->on_child_failed(peer, "malformed message: " + bad, now());
          continue;
        }
        const double at = now();
        for (std::size_t i = 0; i < batch->entries.size(); ++i) {
          if (!accepting() || !identity_of.contains(peer.value)) break;
          auto& e = batch->entries[i];
          from_child(peer, std::move(e.message), SharedBatch::payload(frame, i, e.has_payload), at);
        }
        continue;
      }
      auto& r = std::get<net::Received>(*got);
      if (auto* probe = std::get_if<net::msg::ProbeRequest>(&r.message)) {  // outside the tree
        if (prober) prober->submit(r.identity, std::move(*probe));
        continue;
      }
      if (!authenticated(r)) continue;
      const auto peer = peer_for(r.identity, std::holds_alternative<net::msg::Hello>(r.message));
      if (!peer) continue;
      node::Payload payload;
      if (r.payload) payload = std::make_shared<FrameBytes>(std::move(*r.payload));
      from_child(*peer, std::move(r.message), std::move(payload), now());
    }
  }

  void check_parent_connection() {
    if (!up_monitor) return;
    zmq::message_t event;
    while (up_monitor && up_monitor->recv(event, zmq::recv_flags::dontwait)) {
      std::uint16_t id = 0;
      if (event.size() >= 2) std::memcpy(&id, event.data(), 2);
      while (event.more()) (void)up_monitor->recv(event, zmq::recv_flags::none);
      if (id == ZMQ_EVENT_DISCONNECTED) {
        driver->on_parent_lost("the connection to the parent closed", now());
        return;
      }
      if (id == ZMQ_EVENT_CONNECT_RETRIED) {
        driver->on_parent_unreachable("connection to " + endpoints.parent + " refused", now());
        return;
      }
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
          id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        driver->on_parent_unreachable("handshake with " + endpoints.parent + " failed (not the announced key, or not admitted)", now());
        return;
      }
    }
  }

  /// Hands finished jobs to the driver. A job done on the fast path frees its core at once and the
  /// driver may start the next one inline too: go on (up to a burst) so that a node's buffer of tiny
  /// tasks drains in one turn. The tasks received so far are acknowledged first (the one-port window).
  void collect() {
    if (driver->flush(now()); parent_flush_due() == 0.0) flush_parent();
    for (int k = 0; k < burst && !driver->finished(); ++k) {
      runner->collect([&](std::uint64_t tagged, node::JobOutcome o) {
        if (auto job = jobs->current(tagged)) driver->on_job_done(*job, std::move(o), now());
      });
      if (!runner->has_inline_done()) return;
    }
  }

  void send_probe_reports() {
    for (auto& [identity, report] : prober->take_done())
      if (down) (void)net::send(*down, report, &identity);
  }

  /// The speed the driver waits for (a min_speed): a matmul, run here, not in the driver.
  void measure_speed_if_asked() {
    if (const auto* probe = jobs ? jobs->take_speed_request() : nullptr)  // later drivers know it
      driver->on_speed_measured(options.speed = (*probe)(), now());
  }

  /// Set by ZmqNode::run: called each loop turn to take a re-parenting request.
  std::function<void()> take_move;

  /// Runs the driver; `waiting`: Hellos an earlier driver kept for this run.
  int loop(const std::atomic<int>& stop_code, std::atomic<bool>& finish_requested,
           std::vector<node::WaitingHello> waiting = {}) {
    driver->start(now());
    driver->adopt(std::move(waiting), now());
    bool stopped = false;
    while (true) {
      if (driver->finished()) {
        // A worker of a served tree told to reset: a new driver on the same connections
        // says Hello again and waits for the next run as long as the parent is there.
        if (served_root || !driver->reset_requested() || stopped) break;
        flush_all(true);
        node::NodeOptions next = options;
        next.join_timeout = 1e9;  // seconds: the parent says when the next run starts
        next.after_reset = true;
        if (jobs) jobs->next_generation();
        auto kept = driver->take_waiting();
        driver = std::make_unique<node::NodeDriver>(std::move(next), *this, jobs.get(), std::nullopt);
        if (!bound.empty()) driver->set_endpoint(endpoints.advertise.empty() ? bound : endpoints.advertise);
        spdlog::info("{}: run over; staying connected for the next one", options.name);
        driver->start(now());
        driver->adopt(std::move(kept), now());
        continue;
      }
      if (const int code = stop_code.load(); code >= 0 && !stopped) {
        stopped = true;
        driver->interrupt(now(), code);
        continue;
      }
      if (finish_requested.exchange(false)) driver->finish(now());
      ++traffic.turns;
      flush_all(false);
      zmq::pollitem_t items[4];
      int n = 0;
      int i_down = -1, i_up = -1, i_exec = -1, i_mon = -1;
      if (down) { items[n] = {static_cast<void*>(*down), 0, ZMQ_POLLIN, 0}; i_down = n++; }
      if (up) { items[n] = {static_cast<void*>(*up), 0, ZMQ_POLLIN, 0}; i_up = n++; }
      if (runner) { items[n] = {nullptr, runner->notify_fd(), ZMQ_POLLIN, 0}; i_exec = n++; }
      if (up_monitor) { items[n] = {static_cast<void*>(*up_monitor), 0, ZMQ_POLLIN, 0}; i_mon = n++; }
      // Sleep until a socket or the executor has something, or the driver's next
      // deadline; at most a second, so that a stop request is seen.
      double wait = 1.0;
      if (auto due = driver->next_deadline()) wait = std::clamp(*due - now(), 0.0, 1.0);
      if (runner && runner->has_inline_done()) wait = 0;
      if (auto due = parent_flush_due()) wait = std::clamp(*due - now(), 0.0, wait);
      if (prober && prober->busy()) wait = std::min(wait, 0.01);
      try {
        zmq::poll(items, static_cast<std::size_t>(n), std::chrono::milliseconds(static_cast<long>(std::ceil(wait * 1000))));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;  // a signal: the stop flag is checked above
        throw;
      }
      if (i_exec >= 0 && ((items[i_exec].revents & ZMQ_POLLIN) || runner->has_inline_done())) collect();
      if (i_up >= 0 && (items[i_up].revents & ZMQ_POLLIN)) read_parent();
      measure_speed_if_asked();
      if (i_down >= 0 && (items[i_down].revents & ZMQ_POLLIN)) read_children();
      if (runner && runner->has_inline_done()) collect();
      if (i_mon >= 0 && (items[i_mon].revents & ZMQ_POLLIN)) check_parent_connection();
      driver->flush(now());
      if (auto due = driver->next_deadline(); due && now() >= *due) driver->on_timer(now());
      if (prober) send_probe_reports();
      if (take_move) take_move();
    }
    flush_all(true);
    spdlog::debug("{}: {} loop turns; sent {} frames ({} messages) to the parent, {} frames ({} messages) to children; "
                  "received {} frames ({} messages)",
                  options.name, traffic.turns, traffic.frames_up, traffic.msgs_up, traffic.frames_down, traffic.msgs_down,
                  traffic.frames_in, traffic.msgs_in);
    return driver->exit_code();
  }
};

ZmqNode::ZmqNode(node::NodeOptions options, Endpoints endpoints, Compute compute, std::optional<node::RootSetup> root)
    : impl_(std::make_unique<Impl>()) {
  const bool is_root = root.has_value() || endpoints.serve;
  if (endpoints.serve && (root.has_value() || !endpoints.parent.empty()))
    throw std::invalid_argument("a served root has no parent and gets its runs from run_root()");
  if (!is_root && endpoints.parent.empty())
    throw std::invalid_argument("a worker needs a parent endpoint (--parent tcp://HOST:PORT)");
  const bool exposed = (!endpoints.listen.empty() && !net::is_loopback_endpoint(endpoints.listen)) ||
                       (!endpoints.parent.empty() && !net::is_loopback_endpoint(endpoints.parent));
  if (exposed && !endpoints.curve.enabled && !endpoints.insecure)
    throw std::invalid_argument(
        "refusing unencrypted links on a non-loopback address: give CURVE keys (--curve-secret, --authorized-keys, "
        "--parent-key; see `treefarm keygen`) or --insecure");
  if (endpoints.curve.enabled && !endpoints.listen.empty() && endpoints.curve.authorized.empty())
    throw std::invalid_argument("CURVE is on but no authorized keys are given (--authorized-keys): no child could join");
  if (!compute.cores.empty()) {
    impl_->runner = std::make_unique<exec::ExecutorRunner>(
        exec::ExecutorConfig{compute.cores, compute.memory, compute.backfill, true, compute.shared_cpus});
    impl_->jobs = std::make_unique<GenerationRunner>(*impl_->runner, options.speed == 0 ? compute.speed_probe
                                                                                         : std::function<double()>{});
  }
  if (options.memory == 0) options.memory = compute.memory;
  if (options.disk == 0 && !compute.cores.empty()) {  // free bytes where tasks run (lee2010 slide 19)
    struct statvfs fs {};
    if (::statvfs(".", &fs) == 0) options.disk = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  }
  if (!options.log) options.log = logging::spdlog_sink();
  if (options.parent_endpoint.empty()) options.parent_endpoint = endpoints.parent;
  if (!options.machine_load)  // `treefarm status` shows it beside the busy cores
    options.machine_load = [] {
      struct sysinfo si {};
      return ::sysinfo(&si) == 0 ? static_cast<double>(si.loads[0]) / static_cast<double>(1u << SI_LOAD_SHIFT) : -1.0;
    };
  options.parent_public_key = endpoints.curve.enabled ? endpoints.curve.parent_public_key : std::string();
  impl_->options = options;
  impl_->prober = std::make_unique<PeerProber>(options.name, static_cast<std::uint32_t>(compute.cores.size()),
                                               endpoints.curve, std::move(compute.speed_probe));
  impl_->endpoints = std::move(endpoints);
  impl_->served_root = impl_->endpoints.serve;
  if (impl_->served_root)  // between runs until run_root()
    impl_->driver = std::make_unique<node::NodeDriver>(std::move(options), *impl_, std::vector<node::WaitingHello>{});
  else
    impl_->driver = std::make_unique<node::NodeDriver>(std::move(options), *impl_, impl_->jobs.get(), std::move(root));
}

ZmqNode::~ZmqNode() = default;

int ZmqNode::run() {
  Impl& m = *impl_;
  if (m.served_root) throw std::logic_error("a served root runs experiments with run_root()");
  raise_descriptor_limit();
  const int rc = exit_code_of(m.options.name, [&] {
    m.open_children(m.endpoints.listen);
    if (!m.bound.empty()) {
      m.driver->set_endpoint(m.endpoints.advertise.empty() ? m.bound : m.endpoints.advertise);
      spdlog::info("{}: listening on {}", m.options.name, m.bound);
      if (!m.endpoints.ready_file.empty()) write_ready_file(m.endpoints.ready_file, m.bound);
    }
    if (!m.endpoints.parent.empty()) m.open_parent();
    m.take_move = [this, &m] {
      std::optional<net::msg::Ancestor> target;
      {
        std::lock_guard lock(move_mutex_);
        target = std::exchange(move_request_, std::nullopt);
        parent_now_.endpoint = m.endpoints.parent;
        parent_now_.public_key = m.endpoints.curve.enabled ? m.endpoints.curve.parent_public_key : std::string();
      }
      if (target && !m.driver->move_to(*target, m.now()))
        spdlog::info("{}: not re-parenting to {} now (not running, or already its parent)", m.options.name, target->endpoint);
    };
    return m.loop(stop_code_, finish_requested_);
  });
  m.runner.reset();  // waits for running tasks
  return rc;
}

std::string ZmqNode::open() {
  Impl& m = *impl_;
  if (!m.served_root) throw std::logic_error("ZmqNode::open is for a served root");
  if (m.down) return m.bound;
  raise_descriptor_limit();
  m.open_children(m.endpoints.listen);
  spdlog::info("{}: serving a tree on {}", m.options.name, m.bound);
  if (!m.endpoints.ready_file.empty()) write_ready_file(m.endpoints.ready_file, m.bound);
  return m.bound;
}

int ZmqNode::run_root(node::RootSetup root, const node::NodeOptions& run) {
  Impl& m = *impl_;
  (void)open();
  node::NodeOptions o = node::with_run_options(m.options, run);
  o.serve = true;
  spdlog::info("{}: run with migration {}, balance {}, memory {} bytes, speed {:g} flop/s, one-port window {} bytes",
               m.options.name, core::to_string(o.migration), core::to_string(o.balance), o.memory, o.speed,
               o.one_port_window);
  finish_requested_ = false;
  m.run_error.clear();
  // A Welcome the wire cannot carry fails this run before any child hears of it.
  try {
    (void)net::encode(root.welcome);
  } catch (const std::exception& e) {
    m.run_error = std::string("the run's Welcome cannot be sent: ") + e.what();
    spdlog::error("{}: {}", m.options.name, m.run_error);
    return node::exit_error;
  }
  auto waiting = m.driver->take_waiting();  // the children waiting now: the new driver takes them
  const auto kept = waiting;
  bool threw = false;
  const int rc = exit_code_of(m.options.name, [&] {
    try {
      if (m.jobs) m.jobs->next_generation();
      m.driver = std::make_unique<node::NodeDriver>(std::move(o), m, m.jobs.get(), std::move(root));
      m.driver->set_endpoint(m.endpoints.advertise.empty() ? m.bound : m.endpoints.advertise);
      return m.loop(stop_code_, finish_requested_, std::move(waiting));
    } catch (const std::exception& e) {
      threw = true;
      m.run_error = e.what();
      throw;
    }
  });
  // Between runs: a driver that keeps the Hellos (those of this run's end too) for the next.
  auto next = m.driver->take_waiting();
  if (threw) next = m.keep_tree_after_failed_run(std::move(next), kept);
  m.driver = std::make_unique<node::NodeDriver>(m.options, m, std::move(next));
  return rc;
}

const std::string& ZmqNode::run_error() const { return impl_->run_error; }

bool ZmqNode::idle(const std::function<bool()>& wake) {
  Impl& m = *impl_;
  (void)open();
  while (stop_code_.load() < 0) {
    if (wake()) return true;
    zmq::pollitem_t items[2];
    int n = 0;
    items[n++] = {static_cast<void*>(*m.down), 0, ZMQ_POLLIN, 0};
    if (m.runner) items[n++] = {nullptr, m.runner->notify_fd(), ZMQ_POLLIN, 0};
    try {
      zmq::poll(items, static_cast<std::size_t>(n), std::chrono::milliseconds(100));
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      throw;
    }
    if (m.runner) m.runner->collect([](std::uint64_t, node::JobOutcome) {});  // a late duplicate: the run is over
    if (items[0].revents & ZMQ_POLLIN) m.read_children();
    m.flush_all(true);
  }
  // Every child connected, waiting or not yet back from the last run's reset, leaves now.
  std::vector<std::uint32_t> peers;
  for (const auto& [peer, identity] : m.identity_of) peers.push_back(peer);
  for (auto peer : peers) (void)m.send_child(node::PeerId{peer}, net::msg::Shutdown{"the served master stops"}, {});
  (void)m.driver->take_waiting();
  m.flush_all(true);
  return false;
}

std::vector<std::string> ZmqNode::waiting_children() const {
  std::vector<std::string> names;
  for (const auto& w : impl_->driver->waiting()) names.push_back(w.hello.name);
  return names;
}

void ZmqNode::stop(int exit_code) { stop_code_ = exit_code; }
void ZmqNode::finish() { finish_requested_ = true; }
std::string ZmqNode::endpoint() const { return impl_->bound; }

void ZmqNode::move_to(net::msg::Ancestor target) {
  std::lock_guard lock(move_mutex_);
  move_request_ = std::move(target);
}

net::msg::Ancestor ZmqNode::parent() const {
  std::lock_guard lock(move_mutex_);
  return parent_now_;
}

}  // namespace treefarm::zmq_node
