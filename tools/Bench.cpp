#include "tools/Bench.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "runtime/dashboard/EventsClient.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/model/ExperimentFile.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

namespace {

/// Raw one-way rate: a DEALER in one thread sends `count` messages of `bytes` bytes to a
/// ROUTER in another over TCP loopback. messages/s.
double zmq_one_way_rate(std::uint64_t count, std::size_t bytes) {
  zmq::context_t ctx(1);
  zmq::socket_t rx(ctx, zmq::socket_type::pull);
  rx.set(zmq::sockopt::rcvhwm, 0);
  rx.bind("tcp://127.0.0.1:*");
  const std::string ep = rx.get(zmq::sockopt::last_endpoint);
  std::thread sender([&] {
    zmq::socket_t tx(ctx, zmq::socket_type::push);
    tx.set(zmq::sockopt::sndhwm, 0);
    tx.connect(ep);
    std::vector<char> buf(bytes, 'x');
    for (std::uint64_t i = 0; i < count; ++i) tx.send(zmq::buffer(buf), zmq::send_flags::none);
  });
  zmq::message_t m;
  (void)rx.recv(m);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 1; i < count; ++i) (void)rx.recv(m);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sender.join();
  return static_cast<double>(count - 1) / s;
}

}  // namespace

namespace {

struct RunFigures {
  int rc = 0;
  double duration = 0;         ///< seconds
  std::uint64_t tasks = 0, completed = 0, lost = 0, duplicates = 0, wrong = 0;
  double rate() const { return duration > 0 ? static_cast<double>(completed) / duration : 0; }
  std::uint64_t dashboard_events = 0;  ///< events a client of the dashboard received during the run
};

RunFigures run_once(const std::filesystem::path& exp, const std::filesystem::path& out, LaunchOptions lo) {
  const auto ex = model::load_experiment(exp.string());
  lo.out_dir = out.string();
  lo.quiet = true;
  lo.log_level = "warn";
  lo.master_args.push_back("--no-table");  // stdout is the benchmark's own (JSON with --json)
  std::atomic<bool> never{false}, ended{false};
  RunFigures f;
  // With the dashboard on (--dashboard-file among the master's arguments), a client follows
  // its event stream for the whole run, as a browser would.
  std::string address_file;
  for (std::size_t i = 0; i + 1 < lo.master_args.size(); ++i)
    if (lo.master_args[i] == "--dashboard-file") address_file = lo.master_args[i + 1];
  std::thread client;
  if (!address_file.empty())
    client = std::thread([&] {
      while (!ended && !std::filesystem::exists(address_file)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (ended) return;
      std::string url;
      std::getline(std::ifstream(address_file) >> std::ws, url);
      dashboard::EventsClient events(url);
      while (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      f.dashboard_events = events.events();
    });
  f.rc = launch_tree(ex, lo, never);
  ended = true;
  if (client.joinable()) client.join();
  std::ifstream rf(out / "results.json");
  if (!rf) return f;
  const auto j = nlohmann::json::parse(rf);
  f.duration = j.at("duration").get<double>();
  f.lost = j.value("lost", std::uint64_t{0});
  f.duplicates = j.value("duplicates", std::uint64_t{0});
  for (const auto& a : j.at("apps")) {
    f.tasks += a.at("tasks").get<std::uint64_t>();
    f.completed += a.at("completed").get<std::uint64_t>();
    f.wrong += a.at("wrong").get<std::uint64_t>() + a.value("failed", std::uint64_t{0});
  }
  return f;
}

std::filesystem::path temp_dir(const char* what) {
  std::string tmpl = std::string("/tmp/treefarm-") + what + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory");
  return tmpl;
}

}  // namespace

int bench_dispatch(std::ostream& out, std::uint64_t tasks, std::uint64_t payload_bytes, std::uint32_t buffer, bool json,
                   bool encryption, const std::string& comm_model, int depth, bool dashboard, int rounds_asked) {
  if (comm_model != "one-port" && comm_model != "multi-port")
    throw std::invalid_argument("--comm-model must be one-port or multi-port, not '" + comm_model + "'");
  if (depth != 1 && depth != 2) throw std::invalid_argument("--depth must be 1 or 2, not " + std::to_string(depth));
  if (encryption && dashboard) throw std::invalid_argument("--encryption and --dashboard: one comparison at a time");
  const auto dir = temp_dir("bench");
  const auto exp_path = dir / "dispatch.toml";
  {
    model::Experiment ex;
    model::add_node(ex, "master", "", 0);
    if (depth == 2) model::add_node(ex, "f1", "master", 0);  // forwards only
    model::add_node(ex, "w1", depth == 2 ? "f1" : "master", 1);
    ex.apps.push_back(model::noop_app("noop", payload_bytes, tasks));
    ex.run.buffer = buffer;
    ex.run.comm_model = comm_model == "one-port" ? model::CommModel::one_port : model::CommModel::multi_port;
    model::save_experiment(ex, exp_path.string(), "generated by treefarm bench dispatch");
  }
  const double raw_before = zmq_one_way_rate(1000000, 16);
  LaunchOptions plain, curve;
  curve.encrypt = true;
  std::vector<double> plain_rates, curve_rates, dashboard_rates;
  std::uint64_t events = 0;
  const int rounds = rounds_asked > 0 ? rounds_asked : encryption || dashboard ? 2 : 1;
  for (int r = 0; r < rounds; ++r) {
    const auto p = run_once(exp_path, dir / ("plain" + std::to_string(r)), plain);
    if (p.rc != 0) {
      std::cerr << "bench dispatch: the run failed with code " << p.rc << "\n";
      return p.rc;
    }
    plain_rates.push_back(p.rate());
    if (dashboard) {
      LaunchOptions with = plain;
      const auto file = (dir / ("dashboard" + std::to_string(r) + ".url")).string();
      with.master_args = {"--dashboard", "127.0.0.1:0", "--dashboard-file", file};
      const auto d = run_once(exp_path, dir / ("dashboard" + std::to_string(r)), with);
      if (d.rc != 0) {
        std::cerr << "bench dispatch: the run with the dashboard failed with code " << d.rc << "\n";
        return d.rc;
      }
      dashboard_rates.push_back(d.rate());
      events += d.dashboard_events;
    }
    if (!encryption) continue;
    const auto c = run_once(exp_path, dir / ("curve" + std::to_string(r)), curve);
    if (c.rc != 0) {
      std::cerr << "bench dispatch: the CURVE run failed with code " << c.rc << "\n";
      return c.rc;
    }
    curve_rates.push_back(c.rate());
  }
  const double raw_after = zmq_one_way_rate(1000000, 16);
  const double raw = (raw_before + raw_after) / 2;
  const auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / static_cast<double>(v.size());
  };
  const double rate = mean(plain_rates), curve_rate = mean(curve_rates), dashboard_rate = mean(dashboard_rates);
  if (json) {
    nlohmann::json j{{"tasks", tasks}, {"payload_bytes", payload_bytes}, {"buffer", buffer}, {"comm_model", comm_model}, {"depth", depth},
                     {"dispatch_tasks_per_s", rate}, {"zmq_one_way_msgs_per_s", raw}, {"ratio", rate / raw}};
    if (encryption) {
      j["curve_dispatch_tasks_per_s"] = curve_rate;
      j["curve_over_plain"] = rate > 0 ? curve_rate / rate : 0.0;
    }
    if (dashboard) {
      j["rounds"] = rounds;
      j["plain_runs_tasks_per_s"] = plain_rates;
      j["dashboard_runs_tasks_per_s"] = dashboard_rates;
      j["dashboard_dispatch_tasks_per_s"] = dashboard_rate;
      j["dashboard_over_plain"] = rate > 0 ? dashboard_rate / rate : 0.0;
      j["dashboard_events_received"] = events;
    }
    out << j.dump(1) << "\n";
  } else {
    char line[512];
    std::snprintf(line, sizeof line,
                  "no-op dispatch, master -> %s1 worker, %llu tasks of %llu bytes, buffer %u, %s:  %.0f tasks/s\n"
                  "raw ZeroMQ one-way, 16-byte messages, TCP loopback (mean before/after): %.0f msgs/s\n"
                  "ratio dispatch / raw: %.4f\n",
                  depth == 2 ? "0-core forwarder -> " : "", static_cast<unsigned long long>(tasks),
                  static_cast<unsigned long long>(payload_bytes), buffer, comm_model.c_str(), rate,
                  raw, rate / raw);
    out << line;
    if (encryption) {
      std::snprintf(line, sizeof line, "with CURVE on every link: %.0f tasks/s; CURVE / plain: %.3f (runs alternated)\n",
                    curve_rate, rate > 0 ? curve_rate / rate : 0.0);
      out << line;
    }
    if (dashboard) {
      std::snprintf(line, sizeof line,
                    "with the dashboard served and a client following /api/events (%llu events): %.0f tasks/s; "
                    "dashboard / plain: %.3f (%d runs each, alternated)\n",
                    static_cast<unsigned long long>(events), dashboard_rate, rate > 0 ? dashboard_rate / rate : 0.0, rounds);
      out << line;
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}

int bench_chaos(std::ostream& out, double minutes, double kill_interval, std::uint64_t seed, bool json) {
  const auto dir = temp_dir("chaos");
  const auto write_exp = [&](std::uint64_t mm_tasks) {
    const auto path = dir / ("chaos-" + std::to_string(mm_tasks) + ".toml");
    model::Experiment ex;
    model::add_node(ex, "master", "", 0);
    for (const auto& [name, parent] : std::vector<std::pair<std::string, std::string>>{
             {"w1", "master"}, {"w2", "master"}, {"w1a", "w1"}, {"w1b", "w1"}, {"w2a", "w2"}})
      model::add_node(ex, name, parent, 1);
    for (const auto& [name, kernel, weight, count] :
         {std::tuple{"mm", model::Kernel::matmul, 1.0, mm_tasks}, std::tuple{"ma", model::Kernel::matadd, 2.0, 2 * mm_tasks}}) {
      model::AppSpec a;
      a.name = name;
      a.kernel = kernel;
      a.n = 256;
      a.weight = weight;
      a.tasks = count;
      ex.apps.push_back(a);
    }
    ex.run.buffer = 10;
    model::save_experiment(ex, path.string(), "generated by treefarm bench chaos");
    return path;
  };
  LaunchOptions lo;
  for (auto* args : {&lo.master_args, &lo.worker_args})
    args->insert(args->end(), {"--heartbeat-interval", "0.3", "--heartbeat-timeout", "2"});
  lo.worker_args.insert(lo.worker_args.end(), {"--rejoin-timeout", "600"});
  // Pilot run: how many tasks make `minutes` minutes here.
  const auto pilot = run_once(write_exp(1000), dir / "pilot", lo);
  if (pilot.rc != 0) {
    out << "bench chaos: the pilot run failed with code " << pilot.rc << "\n";
    return pilot.rc;
  }
  const auto mm_tasks = static_cast<std::uint64_t>(std::max(1000.0, pilot.rate() * minutes * 60 / 3));
  const auto exp = write_exp(mm_tasks);
  const auto calm = run_once(exp, dir / "calm", lo);
  LaunchOptions::ChaosStats stats;
  auto chaotic_lo = lo;
  chaotic_lo.chaos_interval = kill_interval;
  chaotic_lo.chaos_seed = seed;
  chaotic_lo.chaos_stats = &stats;
  const auto chaos = run_once(exp, dir / "chaos", chaotic_lo);
  const double ratio = calm.rate() > 0 ? chaos.rate() / calm.rate() : 0;
  if (json) {
    out << nlohmann::json{{"tasks", chaos.tasks}, {"kills", stats.kills}, {"restarts", stats.restarts},
                          {"lost", chaos.lost}, {"duplicates_dropped", chaos.duplicates}, {"wrong", chaos.wrong},
                          {"chaos_tasks_per_s", chaos.rate()}, {"calm_tasks_per_s", calm.rate()},
                          {"throughput_ratio", ratio}, {"exit_code", chaos.rc}}
               .dump(1)
        << "\n";
  } else {
    char line[512];
    std::snprintf(line, sizeof line,
                  "chaos: %llu tasks on 6 nodes, a worker killed (SIGKILL) every %.1f s on average and restarted 1 s later\n"
                  "  kills %llu, restarts %llu\n"
                  "  tasks lost %llu (must be 0), duplicates dropped %llu, wrong or failed %llu (must be 0), exit code %d\n"
                  "  throughput %.1f tasks/s with chaos, %.1f tasks/s without (same run, same machine): ratio %.3f\n",
                  static_cast<unsigned long long>(chaos.tasks), kill_interval,
                  static_cast<unsigned long long>(stats.kills), static_cast<unsigned long long>(stats.restarts),
                  static_cast<unsigned long long>(chaos.lost), static_cast<unsigned long long>(chaos.duplicates),
                  static_cast<unsigned long long>(chaos.wrong), chaos.rc, chaos.rate(), calm.rate(), ratio);
    out << line;
  }
  std::filesystem::remove_all(dir);
  return chaos.lost == 0 && chaos.wrong == 0 && chaos.completed == chaos.tasks ? 0 : 4;
}

}  // namespace treefarm::tools
