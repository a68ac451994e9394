#include "worker/NodeRuntime.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>
#include <thread>
#include <unordered_set>

#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/net/Wire.hpp"
#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"
#include "worker/Executor.hpp"

namespace treefarm::worker {

namespace {
template <class... Ts>
struct Overloaded : Ts... { using Ts::operator()...; };

/// The parent misbehaved or vanished: a worker cannot go on without it.
struct ParentLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write_ready_file(const std::string& path, const std::string& endpoint) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << endpoint << "\n";
  }
  std::filesystem::rename(tmp, path);
}
}  // namespace

model::AppSpec app_from_wire(const net::msg::AppInfo& info) {
  model::AppSpec a;
  a.name = info.name;
  a.kernel = static_cast<model::Kernel>(info.kernel);
  a.n = info.n;
  a.bytes = info.bytes;
  a.flops = info.flops;
  a.weight = info.weight;
  a.tasks = info.tasks;
  a.cores_per_task = info.cores_per_task;
  a.memory_per_task = info.memory_per_task;
  if (a.kernel == model::Kernel::matmul || a.kernel == model::Kernel::matadd) a.bytes = 0;
  return a;
}

net::msg::AppInfo app_to_wire(const model::AppSpec& app) {
  net::msg::AppInfo info;
  info.name = app.name;
  info.kernel = static_cast<std::uint8_t>(app.kernel);
  info.n = app.n;
  info.bytes = app.input_bytes();
  info.flops = app.task_flops();
  info.weight = app.weight;
  info.tasks = app.tasks;
  info.cores_per_task = app.cores_per_task;
  info.memory_per_task = app.memory_per_task;
  return info;
}

/// A task running on the local executor: what its thread writes, read at completion.
struct LocalRun {
  core::TaskRef task;
  std::shared_ptr<const std::vector<std::byte>> root_input;  // root: the pool buffer
  const std::byte* data = nullptr;
  std::size_t size = 0;
  double checksum = 0;
};

struct NodeRuntime::Impl {
  NodeOptions opt;
  std::optional<RootSetup> root;
  zmq::context_t ctx{1};
  std::optional<zmq::socket_t> up;
  std::optional<zmq::socket_t> down;
  std::optional<zmq::socket_t> up_monitor;  // DISCONNECTED events of `up`
  std::string bound;
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::atomic<bool> stopping{false};
  std::atomic<bool> finish_requested{false};

  // Calibration runs (Welcome.calibrate_reps > 0).
  bool calibrating = false;
  std::unordered_map<std::uint64_t, std::size_t> calib_runs;      // exec id -> app
  std::vector<std::vector<double>> calib_samples;                 // per app, seconds
  std::vector<std::shared_ptr<const std::vector<std::byte>>> calib_inputs;
  struct Probe {
    std::uint32_t seq = 0;
    double sent_at = 0;
    std::vector<double> small, big;   // round trips (small), ack times (big), seconds
  };
  static constexpr int small_probes = 3, big_probes = 8;
  std::map<std::uint32_t, Probe> probes;                          // by child id (at most one)
  std::deque<std::uint32_t> probe_queue;                          // children waiting for their probe

  // After the children's links one by one, all of them at once: the node's aggregate
  // output (the bounded multi-port model's cap, bertin2008 §2.1), for 2+ children.
  static constexpr std::uint32_t fanout_seq = 0x80000000u;
  struct Fanout {
    double sent_at = 0;
    std::size_t expected = 0, received = 0;
    std::map<std::uint32_t, int> acks;  // per child
    bool reported = false;
  };
  std::optional<Fanout> fanout;
  double probe_overhead = 0;  // seconds, smallest round trip seen
  std::size_t fanout_children = 0;  // children covered by the last fan-out

  void start_fanout() {
    if (!calibrating || !probe_big || children.size() < 2 || children.size() == fanout_children) return;
    fanout = Fanout{now(), children.size() * big_probes, 0, {}, false};
    fanout_children = children.size();
    for (auto& [id, c] : children)
      for (int i = 0; i < big_probes; ++i) {
        zmq::message_t payload = net::share_bytes(probe_big);
        net::send(*down, net::msg::Probe{fanout_seq | static_cast<std::uint32_t>(i)}, &c.identity, &payload);
      }
  }

  /// The aggregate is taken when the first child has all its probes — while every link
  /// was still busy: later, only the slower links would be sending.
  void on_fanout_ack(std::uint32_t child) {
    if (!fanout) return;
    ++fanout->received;
    if (++fanout->acks[child] == big_probes && !fanout->reported) {
      fanout->reported = true;
      const double transfer = now() - fanout->sent_at - probe_overhead;
      const double bytes = static_cast<double>(probe_big->size()) * static_cast<double>(fanout->received);
      const double bw = transfer > 0 ? bytes / transfer : 0;
      spdlog::info("{}: sends {:.3g} bytes/s to its {} children together", opt.name, bw, fanout_children);
      report(net::msg::Measure{opt.name, "", net::msg::Measure::What::out_bandwidth, bw});
    }
    if (fanout->received < fanout->expected) return;
    fanout.reset();
    next_probe();
  }

  void next_probe() {
    if (!calibrating || fanout) return;  // the fan-out probe finishes first
    while (!probe_queue.empty()) {
      const auto child = probe_queue.front();
      probe_queue.pop_front();
      if (!children.contains(child)) continue;
      probes[child] = Probe{};
      send_probe(child);
      return;
    }
    start_fanout();
  }
  std::shared_ptr<const std::vector<std::byte>> probe_small, probe_big;

  std::unique_ptr<core::NodeScheduler> sched;
  net::msg::Welcome welcome;  // configuration, passed on to children
  std::vector<model::AppSpec> apps;
  std::unique_ptr<Executor> exec;
  std::uint32_t min_cores_per_task = 1;
  std::uint64_t exec_committed_cores = 0;
  std::uint32_t local_pending = 0;
  std::uint64_t next_exec_id = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<LocalRun>> local_runs;

  struct Child {
    std::string identity;
    std::string name;
    double last_seen = 0;
  };
  std::unique_ptr<net::ZapHandler> zap;
  std::map<std::string, double> hint_bandwidth;  // node -> bytes/s of its link (calibration)
  double orphan_since = 0;
  double next_heartbeat = 0;
  std::map<std::uint32_t, Child> children;
  std::unordered_map<std::string, core::ChildId> by_identity;
  std::unordered_set<std::string> dropped;
  std::uint32_t next_child = 0;

  std::unordered_map<core::TaskId, zmq::message_t> payloads;
  std::unordered_map<core::TaskId, net::msg::Result> results;
  std::deque<core::Event> events;

  bool dispatching = false;            // root: started
  std::vector<core::Event> deferred;   // root: events before start
  std::size_t joined_nodes = 0;
  bool finished = false;
  int exit_code = 0;
  double next_tick = 0;

  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  bool is_root() const { return root.has_value(); }

  // ---- configuration -------------------------------------------------------------
  void configure(const net::msg::Welcome& w) {
    welcome = w;
    apps.clear();
    core::NodeConfig config;
    config.is_root = is_root();
    config.buffer = w.buffer;
    config.one_port = w.one_port;
    min_cores_per_task = UINT32_MAX;
    for (const auto& info : w.apps) {
      apps.push_back(is_root() ? root->apps.at(apps.size()) : app_from_wire(info));
      core::AppParams p;
      p.name = info.name;
      p.weight = info.weight;
      p.tasks = info.tasks;
      p.bytes = static_cast<double>(info.bytes);
      p.flops = info.flops;
      p.cores_per_task = info.cores_per_task;
      config.apps.push_back(p);
      min_cores_per_task = std::min(min_cores_per_task, info.cores_per_task);
    }
    config.name = opt.name;
    config.max_task_losses = opt.max_task_losses;
    if (is_root()) config.done_before = root->done_before;
    for (const auto& h : w.hints) {
      if (h.name == opt.name) {
        config.local_seconds = h.task_seconds;
        core::NodePlan plan;
        plan.local = h.alpha;
        for (const auto& c : w.hints)
          if (c.name != opt.name) plan.children[c.name] = c.received;
        config.plan = std::move(plan);
      }
      hint_bandwidth[h.name] = h.link_bandwidth;
    }
    sched = std::make_unique<core::NodeScheduler>(config, core::make_policy(w.policy));
    calibrating = w.calibrate_reps > 0;
    if (!opt.cores.empty()) {
      ExecutorConfig ec;
      ec.cores = opt.cores;
      ec.memory = opt.memory;
      ec.backfill = opt.backfill;
      exec = std::make_unique<Executor>(ec);
    }
  }

  void bind_children_socket() {
    if (opt.listen.empty()) return;
    down.emplace(ctx, zmq::socket_type::router);
    net::configure_socket(*down, true);
    down->set(zmq::sockopt::router_handover, true);  // a rejoining worker takes over its name
    set_transport_heartbeats(*down);
    if (opt.curve.enabled) {
      zap = std::make_unique<net::ZapHandler>(ctx, opt.curve.authorized, opt.name);
      net::apply_curve_server(*down, opt.curve);
    }
    down->bind(opt.listen);
    bound = down->get(zmq::sockopt::last_endpoint);
    spdlog::info("{}: listening on {}", opt.name, bound);
    if (!opt.ready_file.empty()) write_ready_file(opt.ready_file, bound);
  }

  // ---- the core ------------------------------------------------------------------
  void post(core::Event e) {
    if (is_root() && !dispatching) {
      deferred.push_back(std::move(e));
      return;
    }
    events.push_back(std::move(e));
  }

  /// Feeds queued events to the core and carries out its actions. An event that the
  /// core rejects drops the child that caused it.
  void drain() {
    while (!events.empty()) {
      core::Event e = std::move(events.front());
      events.pop_front();
      std::vector<core::Action> actions;
      try {
        actions = sched->handle(e, now());
      } catch (const core::ProtocolError& err) {
        if (auto child = child_of(e)) {
          drop_child(*child, err.what());
          continue;
        }
        if (!is_root() && (std::holds_alternative<core::event::TaskArrived>(e) ||
                           std::holds_alternative<core::event::PolicyMessage>(e)))
          throw ParentLost(err.what());
        throw;
      }
      for (auto& a : actions) carry_out(a);
      top_up_local();
    }
  }

  std::optional<core::ChildId> child_of(const core::Event& e) const {
    if (auto* r = std::get_if<core::event::WorkRequested>(&e); r && !r->from.local) return r->from.child;
    if (auto* r = std::get_if<core::event::ResultArrived>(&e)) return r->child;
    if (auto* r = std::get_if<core::event::ChildJoined>(&e)) return r->child;
    if (auto* r = std::get_if<core::event::PolicyMessage>(&e); r && !r->from_parent) return r->child;
    if (auto* r = std::get_if<core::event::ChildLeft>(&e)) return r->child;  // already gone: nothing to drop
    return std::nullopt;
  }

  void start_dispatching() {
    dispatching = true;
    if (root->on_start) root->on_start(now());
    for (auto& a : sched->start(now())) carry_out(a);
    for (auto& e : deferred) events.push_back(std::move(e));
    deferred.clear();
    top_up_local();
    drain();
  }

  /// Asks the core for local work while the executor has cores nobody has claimed yet
  /// (so tasks are requested only when the executor could start them).
  void top_up_local() {
    if (!exec || !sched || calibrating || (is_root() && !dispatching)) return;
    const std::uint64_t claimed = exec_committed_cores + std::uint64_t{local_pending} * min_cores_per_task;
    if (claimed >= exec->total_cores()) return;
    const auto n = static_cast<std::uint32_t>((exec->total_cores() - claimed) / min_cores_per_task);
    if (n == 0) return;
    local_pending += n;
    events.push_back(core::event::WorkRequested{core::Target::executor(), n});
  }

  void carry_out(core::Action& action) {
    std::visit(Overloaded{
        [&](core::action::RequestWork& a) { net::send(*up, net::msg::Request{a.count}); },
        [&](core::action::SendTask& a) { send_task(a.child, a.task); },
        [&](core::action::StartTask& a) { start_local(a.task); },
        [&](core::action::ForwardResult& a) {
          auto it = results.find(a.task.id);
          if (it != results.end()) {
            net::send(*up, it->second);
            results.erase(it);
          }
          payloads.erase(a.task.id);
        },
        [&](core::action::TaskCompleted& a) {
          auto it = results.find(a.task.id);
          if (it != results.end()) {
            root->on_result(it->second, a.duplicate, now());
            results.erase(it);
          }
        },
        [&](core::action::TaskAbandoned& a) {
          net::msg::Result r;
          r.task_id = a.task.id.value;
          r.node = opt.name;
          r.failed = true;
          r.error = "lost with " + std::to_string(a.losses) + " dead workers: given up";
          spdlog::error("{}: task {} of '{}' {}", opt.name, a.task.id.index(), apps.at(a.task.app().value).name, r.error);
          results[a.task.id] = r;
        },
        [&](core::action::SendPolicyMessage& a) {
          net::msg::Policy m{std::move(a.payload)};
          if (a.to_parent) {
            if (up) net::send(*up, m);
          } else if (auto c = children.find(a.child.value); c != children.end()) {
            net::send(*down, m, &c->second.identity);
          }
        },
        [&](core::action::RunComplete&) {
          spdlog::info("{}: all tasks done", opt.name);
          shutdown_children("run complete");
          finished = true;
        }},
        action);
  }

  void send_task(core::ChildId child, core::TaskRef task) {
    auto c = children.find(child.value);
    zmq::message_t payload;
    if (is_root()) {
      payload = net::share_bytes(root->payload(task.id));
    } else {
      payload.copy(payloads.at(task.id));  // shares the bytes; ours is kept for re-queueing
    }
    const bool sent = c != children.end() && net::send(*down, net::msg::Task{task.id.value}, &c->second.identity, &payload);
    events.push_back(core::event::SendDone{child});
    if (!sent) drop_child(child, "unreachable (its connection is gone)");
  }

  void start_local(core::TaskRef task) {
    --local_pending;
    auto run = std::make_shared<LocalRun>();
    run->task = task;
    if (is_root()) {
      run->root_input = root->payload(task.id);
      run->data = run->root_input->data();
      run->size = run->root_input->size();
    } else {
      const auto& msg = payloads.at(task.id);
      run->data = static_cast<const std::byte*>(msg.data());
      run->size = msg.size();
    }
    const model::AppSpec* app = &apps.at(task.app().value);
    ExecTask t;
    t.id = next_exec_id++;
    t.cores = app->cores_per_task;
    t.memory = app->memory_per_task;
    t.run = [run, app](TaskContext& ctx) {
      tbb::task_arena* arena = ctx.cores().size() > 1 ? &ctx.arena() : nullptr;
      run->checksum = tasks::run_task(*app, std::span<const std::byte>(run->data, run->size), arena);
    };
    exec_committed_cores += t.cores;
    local_runs.emplace(t.id, run);
    exec->submit(std::move(t));
  }

  void collect_local() {
    for (auto& done : exec->poll_done()) {
      if (auto c = calib_runs.find(done.id); c != calib_runs.end()) {
        calibration_done(c->second, done);
        calib_runs.erase(c);
        continue;
      }
      auto it = local_runs.find(done.id);
      if (it == local_runs.end()) continue;
      auto run = it->second;
      local_runs.erase(it);
      const auto& app = apps.at(run->task.app().value);
      exec_committed_cores -= app.cores_per_task;
      net::msg::Result r;
      r.task_id = run->task.id.value;
      r.node = opt.name;
      r.compute_seconds = done.run_seconds;
      r.queued_seconds = done.queued_seconds;
      r.checksum = run->checksum;
      if (done.error) {
        r.failed = true;
        try {
          std::rethrow_exception(done.error);
        } catch (const std::exception& e) {
          r.error = e.what();
        } catch (...) {
          r.error = "unknown error";
        }
        spdlog::error("{}: task {} of '{}' failed: {}", opt.name, run->task.id.index(), app.name, r.error);
      }
      results[run->task.id] = r;
      events.push_back(core::event::LocalTaskFinished{run->task, done.run_seconds});
    }
  }

  // ---- calibration ---------------------------------------------------------------
  /// Keeps every core of this node busy with the applications' kernels, interleaved,
  /// until each has run calibrate_reps times and for at least calibrate_seconds in all:
  /// all nodes measure at the same time, so on shared cores the durations include the
  /// sharing, as in a run (docs/calibration.md). Reports the median per application.
  static constexpr double calibrate_seconds = 1.0;
  std::vector<double> calib_total;     // per app, seconds accumulated
  std::vector<bool> calib_reported;
  std::size_t calib_in_flight = 0;

  /// Kernel runs start this long after joining, so that the link probes (done as
  /// children join) run on quiet cores and measure the links, not the CPU contention.
  static constexpr double calibrate_kernels_after = 2.0;
  double calib_start_at = -1;

  double calib_started = 0;

  void start_calibration() {
    calib_start_at = -1;
    calib_started = now();
    if (!exec) return;
    calib_samples.assign(apps.size(), {});
    calib_total.assign(apps.size(), 0.0);
    calib_reported.assign(apps.size(), true);
    calib_inputs.assign(apps.size(), nullptr);
    for (std::size_t k = 0; k < apps.size(); ++k) {
      const auto& app = apps[k];
      if (app.cores_per_task > exec->total_cores() || app.kernel == model::Kernel::abstract) continue;
      auto input = std::make_shared<std::vector<std::byte>>();
      tasks::fill_input(app, welcome.seed, static_cast<std::uint32_t>(k), 0, *input);
      calib_inputs[k] = input;
      calib_reported[k] = false;
    }
    for (std::uint32_t c = 0; c < exec->total_cores(); ++c) submit_calibration();
  }

  /// Submits one more calibration task: the application furthest from done.
  void submit_calibration() {
    std::optional<std::size_t> best;
    for (std::size_t k = 0; k < apps.size(); ++k) {
      if (calib_reported[k]) continue;
      if (!best || calib_total[k] < calib_total[*best]) best = k;
    }
    if (!best) return;
    const std::size_t k = *best;
    auto input = calib_inputs[k];
    ExecTask t;
    t.id = next_exec_id++;
    t.cores = apps[k].cores_per_task;
    t.memory = apps[k].memory_per_task;
    const model::AppSpec* spec = &apps[k];
    t.run = [input, spec](TaskContext& ctx) {
      tbb::task_arena* arena = ctx.cores().size() > 1 ? &ctx.arena() : nullptr;
      (void)tasks::run_task(*spec, std::span<const std::byte>(input->data(), input->size()), arena);
    };
    calib_runs.emplace(t.id, k);
    ++calib_in_flight;
    exec->submit(std::move(t));
  }

  void calibration_done(std::size_t k, const ExecDone& done) {
    --calib_in_flight;
    if (done.error) {
      spdlog::error("{}: calibration of '{}' failed", opt.name, apps[k].name);
      calib_reported[k] = true;
      return;
    }
    auto& samples = calib_samples[k];
    samples.push_back(done.run_seconds);
    calib_total[k] += done.run_seconds;
    // Enough: reps runs and a second of kernel time — or, for tiny kernels (noop), a
    // thousand runs or three seconds of trying.
    const bool enough = calib_total[k] >= calibrate_seconds || samples.size() >= 1000 ||
                        now() - calib_started >= 3 * calibrate_seconds;
    if (!calib_reported[k] && samples.size() >= welcome.calibrate_reps && enough) {
      calib_reported[k] = true;
      std::sort(samples.begin(), samples.end());
      const double median = samples[samples.size() / 2];
      spdlog::info("{}: '{}' takes {:.6f} s per task here ({} runs)", opt.name, apps[k].name, median, samples.size());
      report(net::msg::Measure{opt.name, apps[k].name, net::msg::Measure::What::task_seconds, median});
    }
    submit_calibration();
  }

  void report(const net::msg::Measure& m) {
    if (is_root()) {
      if (root->on_measure) root->on_measure(m);
    } else {
      net::send(*up, m);
    }
  }

  /// Link probe: small ping-pongs give the round-trip overhead; then big_probes
  /// payload-sized probes are sent back to back (streaming, as tasks are) and
  /// bandwidth = their bytes / (time to the last ack − overhead).
  void send_probe(std::uint32_t child) {
    auto c = children.find(child);
    auto p = probes.find(child);
    if (c == children.end() || p == probes.end()) return;
    auto& st = p->second;
    if (st.small.size() < small_probes) {
      zmq::message_t payload = net::share_bytes(probe_small);
      st.sent_at = now();
      net::send(*down, net::msg::Probe{++st.seq}, &c->second.identity, &payload);
      return;
    }
    st.sent_at = now();
    for (int i = 0; i < big_probes; ++i) {
      zmq::message_t payload = net::share_bytes(probe_big);
      net::send(*down, net::msg::Probe{++st.seq}, &c->second.identity, &payload);
    }
  }

  void on_probe_ack(std::uint32_t child, const net::msg::ProbeAck& ack) {
    if (ack.seq & fanout_seq) {
      on_fanout_ack(child);
      return;
    }
    auto p = probes.find(child);
    if (p == probes.end()) return;
    auto& st = p->second;
    if (st.small.size() < small_probes) {
      if (ack.seq != st.seq) return;
      st.small.push_back(now() - st.sent_at);
      send_probe(child);
      return;
    }
    st.big.push_back(now());
    if (ack.seq != st.seq) return;  // wait for the last of the stream
    const double overhead = *std::min_element(st.small.begin(), st.small.end());
    probe_overhead = probe_overhead > 0 ? std::min(probe_overhead, overhead) : overhead;
    const double transfer = now() - st.sent_at - overhead;
    const double bytes = static_cast<double>(probe_big->size()) * big_probes;
    const double bw = transfer > 0 ? bytes / transfer : 0;
    spdlog::info("{}: link to '{}' carries {:.3g} bytes/s", opt.name, children[child].name, bw);
    report(net::msg::Measure{children[child].name, "", net::msg::Measure::What::link_bandwidth, bw});
    probes.erase(p);
    next_probe();
  }

  // ---- children ------------------------------------------------------------------
  void drop_child(core::ChildId child, const std::string& why) {
    auto it = children.find(child.value);
    if (it == children.end()) return;
    spdlog::warn("{}: dropping child '{}': {}", opt.name, it->second.name, why);
    dropped.insert(it->second.identity);
    by_identity.erase(it->second.identity);
    children.erase(it);
    if (fanout) {  // its acks will not come: measure without it
      fanout.reset();
      fanout_children = 0;
    }
    if (probes.erase(child.value) || !fanout) next_probe();
    post(core::event::ChildLeft{child});
  }

  void drop_identity(const std::string& identity, const std::string& why) {
    if (auto it = by_identity.find(identity); it != by_identity.end()) {
      drop_child(it->second, why);
      return;
    }
    if (dropped.insert(identity).second) spdlog::warn("{}: dropping unknown peer: {}", opt.name, why);
  }

  void shutdown_children(const std::string& reason) {
    if (!down) return;
    for (auto& [id, c] : children) net::send(*down, net::msg::Shutdown{reason}, &c.identity);
  }

  void node_joined(const net::msg::NodeJoined& j) {
    ++joined_nodes;
    if (is_root()) {
      if (root->on_joined) root->on_joined(j);
    } else {
      net::send(*up, j);
    }
  }

  void on_child_message(net::Received& r) {
    if (dropped.contains(r.identity)) {
      if (!std::holds_alternative<net::msg::Hello>(r.message)) return;
      dropped.erase(r.identity);  // a restarted worker under the same name may join again
    }
    auto known = by_identity.find(r.identity);
    if (known != by_identity.end() && std::holds_alternative<net::msg::Hello>(r.message)) {
      drop_child(known->second, "it joined again (restarted or reconnected)");
      dropped.erase(r.identity);
      known = by_identity.end();
    }
    if (known == by_identity.end()) {
      auto* hello = std::get_if<net::msg::Hello>(&r.message);
      if (!hello) {
        drop_identity(r.identity, std::string("first message is ") + net::kind_name(net::kind_of(r.message)) + ", not Hello");
        return;
      }
      const core::ChildId id{next_child++};
      children[id.value] = Child{r.identity, hello->name, now()};
      by_identity[r.identity] = id;
      net::send(*down, welcome, &r.identity);
      spdlog::info("{}: child '{}' joined ({} cores)", opt.name, hello->name, hello->cores);
      node_joined(net::msg::NodeJoined{hello->name, opt.name, hello->cores, hello->memory});
      const auto bw = hint_bandwidth.find(hello->name);
      post(core::event::ChildJoined{id, core::ChildInfo{hello->name, hello->cores, bw == hint_bandwidth.end() ? 0.0 : bw->second}});
      if (calibrating) {
        if (!probe_big) {
          probe_small = std::make_shared<const std::vector<std::byte>>(1);
          probe_big = std::make_shared<const std::vector<std::byte>>(std::max<std::uint64_t>(welcome.probe_bytes, 2));
        }
        // One probe at a time: concurrent probes would share this node's output and each
        // measure a fraction of its link.
        probe_queue.push_back(id.value);
        if (probes.empty()) next_probe();
      }
      return;
    }
    const core::ChildId child = known->second;
    children[child.value].last_seen = now();
    std::visit(Overloaded{
        [&](net::msg::Request& q) { post(core::event::WorkRequested{core::Target::to_child(child), q.count}); },
        [&](net::msg::Result& s) {
          const core::TaskId id{s.task_id};
          if (id.app().value >= apps.size()) {
            drop_child(child, "result for an unknown application");
            return;
          }
          results[id] = std::move(s);
          post(core::event::ResultArrived{child, core::TaskRef{id}});
        },
        [&](net::msg::NodeJoined& j) { node_joined(j); },
        [&](net::msg::ProbeAck& a) { on_probe_ack(child.value, a); },
        [&](net::msg::Policy& p) { post(core::event::PolicyMessage{false, child, std::move(p.payload)}); },
        [&](net::msg::Measure& m) { report(m); },
        [&](net::msg::Heartbeat&) {},
        [&](net::msg::Bye&) { drop_child(child, "said goodbye"); },
        [&](auto& other) {
          drop_child(child, std::string("unexpected ") + net::kind_name(net::kind_of(net::Message{other})) + " from a child");
        }},
        r.message);
  }

  void set_transport_heartbeats(zmq::socket_t& s) const {
    s.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(opt.heartbeat_interval * 1000));
    s.set(zmq::sockopt::heartbeat_timeout, static_cast<int>(opt.heartbeat_timeout * 1000));
    s.set(zmq::sockopt::heartbeat_ttl, static_cast<int>(opt.heartbeat_timeout * 1000));
  }

  /// Throws ParentLost if the parent's connection closed.
  void check_parent_connection() {
    if (!up_monitor) return;
    zmq::message_t event;
    while (up_monitor->recv(event, zmq::recv_flags::dontwait)) {
      std::uint16_t id = 0;
      if (event.size() >= 2) std::memcpy(&id, event.data(), 2);
      while (event.more()) (void)up_monitor->recv(event, zmq::recv_flags::none);
      if (id == ZMQ_EVENT_DISCONNECTED) throw ParentLost("the connection to the parent closed");
    }
  }

  /// Heartbeats both ways (docs/fault-tolerance.md): every node sends one to its parent
  /// and to each child every interval; a peer silent for the timeout is dead.
  void heartbeats() {
    const double t = now();
    if (t >= next_heartbeat) {
      next_heartbeat = t + opt.heartbeat_interval;
      if (up) net::send(*up, net::msg::Heartbeat{});
      if (down)
        for (auto& [id, c] : children) net::send(*down, net::msg::Heartbeat{}, &c.identity);
    }
    std::vector<std::uint32_t> silent;
    for (auto& [id, c] : children)
      if (t - c.last_seen > opt.heartbeat_timeout) silent.push_back(id);
    for (auto id : silent)
      drop_child(core::ChildId{id}, "no message for " + std::to_string(opt.heartbeat_timeout) + " s: declared dead");
    check_parent_connection();
  }

  // ---- parent --------------------------------------------------------------------
  void on_parent_message(net::Received& r) {
    std::visit(Overloaded{
        [&](net::msg::Task& t) {
          const core::TaskId id{t.task_id};
          if (id.app().value >= apps.size()) throw ParentLost("task of an unknown application");
          if (!r.payload || r.payload->size() != apps[id.app().value].input_bytes())
            throw ParentLost("task payload of the wrong size");
          if (payloads.contains(id)) throw ParentLost("task " + std::to_string(t.task_id) + " sent twice");
          payloads.emplace(id, std::move(*r.payload));
          post(core::event::TaskArrived{core::TaskRef{id}});
        },
        [&](net::msg::Shutdown& s) {
          spdlog::info("{}: shutdown from parent ({})", opt.name, s.reason);
          shutdown_children(s.reason);
          finished = true;
        },
        [&](net::msg::Heartbeat&) {},
        [&](net::msg::Probe& p) { net::send(*up, net::msg::ProbeAck{p.seq}); },
        [&](net::msg::Policy& p) { post(core::event::PolicyMessage{true, core::ChildId{}, std::move(p.payload)}); },
        [&](net::msg::Welcome&) { spdlog::warn("{}: ignoring a second Welcome", opt.name); },
        [&](auto& other) {
          throw ParentLost(std::string("unexpected ") + net::kind_name(net::kind_of(net::Message{other})) + " from the parent");
        }},
        r.message);
  }

  void join_parent() {
    up.emplace(ctx, zmq::socket_type::dealer);
    net::configure_socket(*up, false);
    up->set(zmq::sockopt::routing_id, opt.name);
    set_transport_heartbeats(*up);
    net::apply_curve_client(*up, opt.curve);
    // The parent is lost when its connection closes: the peer process died (the kernel
    // closes it at once) or ZMTP heartbeats went unanswered for heartbeat_timeout. Any
    // message received counts as an answer, so a slow link busy with big tasks is not
    // mistaken for a dead parent (application heartbeats would queue behind the tasks).
    if (zmq_socket_monitor(static_cast<void*>(*up), "inproc://parent-monitor", ZMQ_EVENT_DISCONNECTED) != 0)
      throw std::runtime_error("cannot monitor the parent socket");
    up_monitor.emplace(ctx, zmq::socket_type::pair);
    up_monitor->connect("inproc://parent-monitor");
    up->connect(opt.parent);
    net::send(*up, net::msg::Hello{opt.name, static_cast<std::uint32_t>(opt.cores.size()), opt.memory});
    const double deadline = now() + opt.join_timeout;
    while (!stopping && now() < deadline) {
      zmq::pollitem_t item{static_cast<void*>(*up), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      auto got = net::try_receive(*up, false);
      if (!got) continue;
      if (auto* bad = std::get_if<net::BadMessage>(&*got)) throw ParentLost("bad message from the parent: " + bad->reason);
      auto& rec = std::get<net::Received>(*got);
      if (auto* w = std::get_if<net::msg::Welcome>(&rec.message)) {
        configure(*w);
        spdlog::info("{}: joined {} (policy {}, buffer {})", opt.name, opt.parent, w->policy, w->buffer);
        return;
      }
      if (std::holds_alternative<net::msg::Shutdown>(rec.message)) {
        finished = true;
        return;
      }
      throw ParentLost(std::string("expected Welcome, got ") + net::kind_name(net::kind_of(rec.message)));
    }
    throw ParentLost("no Welcome from " + opt.parent + " within " + std::to_string(opt.join_timeout) + " s");
  }

  int run() {
    try {
      if (is_root()) {
        configure(root->welcome);
        bind_children_socket();
        if (calibrating) {
          dispatching = true;  // nothing is dispatched; events go straight to the core
          calib_start_at = now() + calibrate_kernels_after;
        } else if (root->wait_for_nodes == 0) {
          start_dispatching();
        }
      } else {
        join_parent();
        if (finished) return 0;
        bind_children_socket();
        if (calibrating) {
          calib_start_at = now() + calibrate_kernels_after;
        } else {
          for (auto& a : sched->start(now())) carry_out(a);
          top_up_local();
          drain();
        }
      }
      next_tick = now() + (root ? root->tick_interval : 1.0);
      while (!stopping && !finished) {
        zmq::pollitem_t items[4];
        int n = 0;
        int i_down = -1, i_up = -1, i_exec = -1;
        if (down) { items[n] = {static_cast<void*>(*down), 0, ZMQ_POLLIN, 0}; i_down = n++; }
        if (up) { items[n] = {static_cast<void*>(*up), 0, ZMQ_POLLIN, 0}; i_up = n++; }
        if (exec) { items[n] = {nullptr, exec->notify_fd(), ZMQ_POLLIN, 0}; i_exec = n++; }
        if (up_monitor) items[n++] = {static_cast<void*>(*up_monitor), 0, ZMQ_POLLIN, 0};
        zmq::poll(items, n, std::chrono::milliseconds(50));
        if (i_exec >= 0 && (items[i_exec].revents & ZMQ_POLLIN)) collect_local();
        if (i_up >= 0 && (items[i_up].revents & ZMQ_POLLIN)) {
          for (int k = 0; k < 256 && !finished; ++k) {
            auto got = net::try_receive(*up, false);
            if (!got) break;
            if (auto* bad = std::get_if<net::BadMessage>(&*got)) throw ParentLost("bad message from the parent: " + bad->reason);
            on_parent_message(std::get<net::Received>(*got));
          }
        }
        if (i_down >= 0 && (items[i_down].revents & ZMQ_POLLIN)) {
          for (int k = 0; k < 256; ++k) {
            auto got = net::try_receive(*down, true);
            if (!got) break;
            if (auto* bad = std::get_if<net::BadMessage>(&*got)) {
              drop_identity(bad->identity, "malformed message: " + bad->reason);
              continue;
            }
            on_child_message(std::get<net::Received>(*got));
          }
        }
        heartbeats();
        if (calib_start_at >= 0 && now() >= calib_start_at) start_calibration();
        if (is_root() && dispatching && !calibrating) {
          if (!children.empty() || exec) orphan_since = now();
          else if (now() - orphan_since > opt.orphan_timeout)
            throw std::runtime_error("no node can compute: no worker for " + std::to_string(opt.orphan_timeout) + " s");
        }
        if (finish_requested && !finished) {
          shutdown_children("run complete");
          finished = true;
          break;
        }
        if (is_root() && !dispatching &&
            (joined_nodes >= root->wait_for_nodes || now() > root->wait_timeout)) {
          if (joined_nodes < root->wait_for_nodes)
            spdlog::warn("{}: only {} of {} nodes joined within {} s; starting anyway", opt.name, joined_nodes,
                         root->wait_for_nodes, root->wait_timeout);
          start_dispatching();
        }
        if (sched && !calibrating && (!is_root() || dispatching)) {
          if (auto due = sched->next_deadline(); due && now() >= *due) events.push_back(core::event::Tick{});
          drain();
        }
        if (root && root->on_tick && now() >= next_tick) {
          root->on_tick(now());
          next_tick = now() + root->tick_interval;
        }
      }
      if (stopping && !finished) {
        shutdown_children("interrupted");
        exit_code = 130;
      }
    } catch (const ParentLost& e) {
      spdlog::error("{}: lost the parent: {}", opt.name, e.what());
      // Children are not told: they see this node fall silent and rejoin it when it is
      // back (or give up after their own rejoin timeout).
      if (opt.rejoin_timeout <= 0) shutdown_children("parent lost");
      exit_code = 3;
    } catch (const zmq::error_t& e) {
      spdlog::error("{}: ZeroMQ error: {}", opt.name, e.what());
      exit_code = 2;
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", opt.name, e.what());
      exit_code = 1;
    }
    exec.reset();  // waits for running tasks
    return exit_code;
  }
};

NodeRuntime::NodeRuntime(NodeOptions options, std::optional<RootSetup> root) : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(options);
  impl_->root = std::move(root);
  if (!impl_->root && impl_->opt.parent.empty())
    throw std::invalid_argument("a worker needs a parent endpoint (--parent tcp://HOST:PORT)");
  const auto& o = impl_->opt;
  const bool exposed = (!o.listen.empty() && !net::is_loopback_endpoint(o.listen)) ||
                       (!o.parent.empty() && !net::is_loopback_endpoint(o.parent));
  if (exposed && !o.curve.enabled && !o.insecure)
    throw std::invalid_argument(
        "refusing unencrypted links on a non-loopback address: give CURVE keys (--curve-secret, --authorized-keys, "
        "--parent-key; see `treefarm keygen`) or --insecure");
  if (o.curve.enabled && !o.listen.empty() && o.curve.authorized.empty())
    throw std::invalid_argument("CURVE is on but no authorized keys are given (--authorized-keys): no child could join");
}

NodeRuntime::~NodeRuntime() = default;

int NodeRuntime::run() {
  const auto started = std::chrono::steady_clock::now();
  double backoff = 0.5;
  for (;;) {
    const int rc = impl_->run();
    const bool rejoin = rc == 3 && !impl_->root && impl_->opt.rejoin_timeout > 0 && !impl_->stopping;
    if (!rejoin) return rc;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (waited > impl_->opt.rejoin_timeout) {
      spdlog::error("{}: could not rejoin within {} s; giving up", impl_->opt.name, impl_->opt.rejoin_timeout);
      return rc;
    }
    // Start afresh (the parent re-queued everything sent to this subtree), listening on
    // the same endpoint so that this node's own children find it again.
    NodeOptions opt = impl_->opt;
    if (!impl_->bound.empty()) opt.listen = impl_->bound;
    opt.join_timeout = std::min(opt.join_timeout, 5.0);
    spdlog::info("{}: rejoining {} in {:.1f} s", opt.name, opt.parent, backoff);
    impl_.reset();
    for (double slept = 0; slept < backoff; slept += 0.05) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, 8.0);
    impl_ = std::make_unique<Impl>();
    impl_->opt = std::move(opt);
    if (stop_requested_) return 130;
  }
}
void NodeRuntime::stop() {
  stop_requested_ = true;
  if (impl_) impl_->stopping = true;
}
void NodeRuntime::finish() { impl_->finish_requested = true; }
std::string NodeRuntime::endpoint() const { return impl_->bound; }
double NodeRuntime::now() const { return impl_->now(); }

}  // namespace treefarm::worker
