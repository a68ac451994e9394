#include "tools/HostCalibration.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>
#include <utility>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "runtime/exec/CpuList.hpp"
#include "runtime/exec/Topology.hpp"
#include "runtime/model/ExperimentFile.hpp"
#include "tasks/Payload.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "runtime/metrics/Journal.hpp"
#include "runtime/process/ScratchDir.hpp"
#include "tools/CpuPlacement.hpp"
#include "tools/SteadyRate.hpp"
#include "tools/TreeBusyShare.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

std::vector<double> cpu_shares(const std::vector<std::uint32_t>& cores, const std::vector<std::vector<int>>& cpus) {
  std::map<int, double> load;  // busy threads per CPU
  for (std::size_t u = 0; u < cpus.size(); ++u) {
    if (cpus[u].empty() || cores[u] == 0) continue;
    for (int c : cpus[u]) load[c] += static_cast<double>(cores[u]) / static_cast<double>(cpus[u].size());
  }
  std::vector<double> out(cpus.size(), 1.0);
  for (std::size_t u = 0; u < cpus.size(); ++u) {
    if (cpus[u].empty() || cores[u] == 0) continue;
    double sum = 0;
    for (int c : cpus[u]) sum += std::min(1.0, 1.0 / std::max(load[c], 1e-9));
    out[u] = std::clamp(sum / static_cast<double>(cpus[u].size()), 1e-6, 1.0);
  }
  return out;
}

void add_local_host(model::Calibration& calibration, const model::Experiment& experiment,
                    const std::vector<std::string>& node_cpus, double host_cores, const std::string& host_name,
                    const CommCost& cost, const TaskEndCost& ends) {
  std::vector<std::uint32_t> cores;
  std::vector<std::vector<int>> cpus;
  for (std::size_t i = 0; i < experiment.nodes.size(); ++i) {
    const auto& name = experiment.nodes[i].name;
    const auto it = calibration.nodes.find(name);
    cores.push_back(it != calibration.nodes.end() && it->second.cores > 0 ? it->second.cores : experiment.nodes[i].cores);
    cpus.push_back(i < node_cpus.size() && !node_cpus[i].empty() ? exec::parse_cpu_list(node_cpus[i]) : std::vector<int>{});
  }
  const auto shares = cpu_shares(cores, cpus);
  auto& host = calibration.hosts[host_name];
  host.cores = host_cores;
  host.comm_cpu_seconds_per_byte = cost.cpu_seconds_per_byte;
  host.comm_cpu_spread = cost.spread;
  host.input_cpu_seconds_per_byte = ends.input_cpu_seconds_per_byte;
  host.receive_cpu_seconds_per_byte = ends.receive_cpu_seconds_per_byte;
  for (std::size_t i = 0; i < experiment.nodes.size(); ++i) {
    auto& nc = calibration.nodes[experiment.nodes[i].name];
    nc.host = host_name;
    nc.cpus = cpus[i];
    nc.cpu_share = shares[i];
  }
}

namespace {
/// The experiment's application with the largest input (whose size the costs are measured with).
const model::AppSpec* largest_app(const model::Experiment& experiment) {
  const model::AppSpec* out = nullptr;
  for (const auto& app : experiment.apps)
    if (app.kernel != model::Kernel::abstract && app.kernel != model::Kernel::command &&
        (!out || app.input_bytes() > out->input_bytes()))
      out = &app;
  return out;
}

/// The experiment's largest task input, bytes (at least 1).
std::uint64_t largest_input_bytes(const model::Experiment& experiment) {
  std::uint64_t bytes = 1;
  for (const auto& app : experiment.apps) bytes = std::max<std::uint64_t>(bytes, app.input_bytes());
  return bytes;
}

/// The CPU cost of a byte on this machine, with messages of the experiment's largest input.
CommCost tree_comm_cost(const model::Experiment& experiment, bool encrypt) {
  return measure_comm_cost(largest_input_bytes(experiment), encrypt);
}

/// How the calibration starts its measuring trees: quiet, warnings only, no table.
LaunchOptions measuring_launch(bool encrypt, double timeout, const std::string& bin_dir, std::string out_dir) {
  LaunchOptions lo;
  lo.quiet = true;
  lo.encrypt = encrypt;
  lo.timeout = timeout;
  lo.log_level = "warn";
  lo.master_args = {"--no-table"};
  lo.bin_dir = bin_dir;
  lo.out_dir = std::move(out_dir);
  return lo;
}

/// A measuring tree that Ctrl-C stops (cli_support::interrupted()): cli_support::Interrupted
/// then, so that no calibration file is written from a measurement cut short.
int measuring_tree(const model::Experiment& ex, const LaunchOptions& lo) {
  const int rc = launch_tree(ex, lo, cli_support::interrupted());
  if (cli_support::interrupted()) throw cli_support::Interrupted("interrupted while calibrating this host; no calibration written");
  return rc;
}

/// One progress line on stderr per phase of the host calibration (the phases take seconds).
void phase(const std::string& what) { std::fprintf(stderr, "calibration: %s\n", what.c_str()); }

double cpu_seconds(const rusage& r) {
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

/// CPU seconds of this process's finished children (all their threads) so far.
double children_cpu_seconds() {
  rusage r{};
  ::getrusage(RUSAGE_CHILDREN, &r);
  return cpu_seconds(r);
}

/// CPU seconds per byte of generating inputs as the master does: a fresh buffer per task,
/// filled, released; for about `seconds`.
double input_generation_cost(const model::AppSpec& app, double seconds) {
  const auto cpu_now = [] {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  const double t0 = cpu_now();
  double bytes = 0, t = t0;
  for (std::uint64_t i = 0; t - t0 < seconds || bytes == 0; ++i) {
    auto buffer = std::make_shared<std::vector<std::byte>>();
    tasks::fill_input(app, 0x5eed + i, 0, 0, *buffer);
    bytes += static_cast<double>(buffer->size());
    t = cpu_now();
  }
  return bytes > 0 ? (t - t0) / bytes : 0.0;
}
}  // namespace

TaskEndCost measure_task_end_cost(const model::AppSpec& app, double gamma, bool encrypt, const std::string& bin_dir) {
  TaskEndCost out;
  const std::uint64_t bytes = app.input_bytes();
  if (bytes < (64u << 10)) return out;
  out.input_cpu_seconds_per_byte = input_generation_cost(app, 0.3);
  // A master and one worker of this machine move no-op tasks of the same size: two runs,
  // ~0.6 and ~2.4 GB, whose difference leaves out the start-up and the end.
  const process::ScratchDir scratch("endcost");
  const auto& dir = scratch.path();
  const std::uint64_t short_run = std::clamp<std::uint64_t>(600'000'000 / bytes, 20, 20'000);
  double cpu[2] = {0, 0};
  std::uint64_t tasks[2] = {short_run, 4 * short_run};
  for (int r = 0; r < 2; ++r) {
    const auto file = dir / ("noop-" + std::to_string(r) + ".toml");
    model::Experiment noop;
    model::add_node(noop, "master", "", 0);
    model::add_node(noop, "w1", "master", 1);
    noop.apps.push_back(model::noop_app("nop", bytes, tasks[r]));
    noop.run.buffer = 4;
    const auto ex = model::save_experiment(noop, file.string(), "generated by the host calibration (end cost)");
    const auto lo = measuring_launch(encrypt, 120, bin_dir, (dir / ("out-" + std::to_string(r))).string());
    const double before = children_cpu_seconds();
    const int rc = measuring_tree(ex, lo);
    cpu[r] = children_cpu_seconds() - before;
    if (rc != 0)
      throw std::runtime_error("measuring the runtime's cost per byte: a no-op tree of " + std::to_string(tasks[r]) +
                               " tasks of " + std::to_string(bytes) + " bytes ended with exit code " + std::to_string(rc));
  }
  out.tree_cpu_seconds_per_byte =
      std::max(0.0, (cpu[1] - cpu[0]) / (static_cast<double>(tasks[1] - tasks[0]) * static_cast<double>(bytes)));
  out.receive_cpu_seconds_per_byte = std::max(0.0, out.tree_cpu_seconds_per_byte - gamma - out.input_cpu_seconds_per_byte);
  return out;
}

namespace {
/// The experiment's file with only the applications of `tasks` (name -> its number of
/// tasks; weight 1 each unless `keep_weights`), FCFS, no migration, no events, on a
/// master and `workers` one-core workers one hop below it.
/// The experiment's file as a TOML table (std::invalid_argument naming the file if it
/// no longer parses).
toml::table experiment_document(const model::Experiment& experiment) {
  try {
    return toml::parse_file(experiment.path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(experiment.path + ": " + std::string(e.description()));
  }
}

/// The text of `doc` (an experiment file's table, its nodes already replaced) as a
/// measuring run: only the applications of `tasks`, with those task counts (weights 1
/// unless `keep_weights`, every origin the master), no events, FCFS, no migration.
std::string measuring_document(toml::table& doc, const std::map<std::string, std::uint64_t>& tasks, bool keep_weights) {
  toml::array apps;
  if (const auto* all = doc["app"].as_array())
    for (const auto& a : *all) {
      const auto* t = a.as_table();
      if (!t) continue;
      const auto it = tasks.find((*t)["name"].value<std::string>().value_or(""));
      if (it == tasks.end()) continue;
      toml::table copy = *t;
      copy.insert_or_assign("tasks", static_cast<std::int64_t>(it->second));
      if (!keep_weights) copy.insert_or_assign("weight", 1);
      copy.erase("origin");
      apps.push_back(std::move(copy));
    }
  doc.insert_or_assign("app", std::move(apps));
  doc.erase("event");
  if (auto* run = doc["run"].as_table()) {
    run->insert_or_assign("policy", "fcfs");
    run->insert_or_assign("migration", "off");
    run->insert_or_assign("balance", "off");
    run->erase("policy_options");
  }
  std::ostringstream out;
  out << doc << "\n";
  return out.str();
}

std::string one_hop_experiment(const model::Experiment& experiment, const std::map<std::string, std::uint64_t>& tasks,
                               bool keep_weights, std::uint32_t workers, std::uint32_t worker_cores) {
  toml::table doc = experiment_document(experiment);
  toml::array nodes;
  nodes.push_back(toml::table{{"name", "master"}, {"cores", 0}});
  for (std::uint32_t w = 0; w < workers; ++w)
    nodes.push_back(toml::table{{"name", "w" + std::to_string(w + 1)}, {"parent", "master"}, {"cores", worker_cores}});
  doc.insert_or_assign("node", std::move(nodes));
  return measuring_document(doc, tasks, keep_weights);
}


/// One run of a one-hop tree (one_hop_experiment) in `dir`; its fair throughput (tasks/s
/// per unit of weight in the master's steady window) and the CPU and wall seconds it took.
struct OneHopRun {
  double fair_throughput = 0, cpu = 0, wall = 0;
  std::vector<Completion> completions;  ///< every task the master journaled (application index, when)
  std::vector<std::string> apps;        ///< the applications' names, in the journal's order
  std::vector<std::uint64_t> tasks;     ///< their task counts
  bool stopped = false;                 ///< ended by its `enough` test before its last task
};

OneHopRun run_one_hop(const model::Experiment& experiment, const std::map<std::string, std::uint64_t>& tasks,
                      bool keep_weights, std::uint32_t workers, std::uint32_t worker_cores, bool encrypt,
                      const std::string& bin_dir, const std::filesystem::path& dir, const std::string& tag,
                      const std::function<bool(const std::vector<Completion>&)>& enough = nullptr) {
  const auto file = dir / (tag + ".toml");
  std::ofstream(file) << one_hop_experiment(experiment, tasks, keep_weights, workers, worker_cores);
  const auto ex = model::load_experiment(file.string());
  auto lo = measuring_launch(encrypt, 300, bin_dir, (dir / ("out-" + tag)).string());
  // Placed as the measured tree will be: when its nodes share the machine's CPUs unpinned
  // (docs/commands/run.md, "Placement"), so do the one-hop tree's workers, or the whole-task
  // costs measured pinned would not be those of the run.
  if (const auto usable = exec::discover_topology().cores; !usable.empty()) {
    const auto placed = assign_cpus(experiment, usable);
    if (std::any_of(placed.begin(), placed.end(), [](const NodeCpus& c) { return c.shared; }))
      lo.cpus = [all = exec::format_cpu_list(usable), worker_cores](std::size_t node) {
        return node == 0 ? NodeCpus{} : NodeCpus{all, worker_cores, true};
      };
  }
  OneHopRun out;
  std::vector<std::string> kernels;
  for (const auto& a : ex.apps) {
    out.apps.push_back(a.name);
    kernels.emplace_back(model::to_string(a.kernel));
    out.tasks.push_back(a.tasks);
  }
  const auto journal = std::filesystem::path(lo.out_dir) / "journal.tsv";
  const auto fingerprint = metrics::journal_fingerprint(ex.run.seed, out.apps, kernels, out.tasks);
  // Read as it grows: each look parses only the lines appended since the last one.
  metrics::JournalReader reader(journal, fingerprint, out.tasks);
  const auto read_journal = [&] {
    std::vector<Completion> c;
    for (const auto& e : reader.read()) c.push_back({e.app, e.completed_at});
    return c;
  };
  // Stopped early (`enough`, twice a second over what the journal holds so far): the tree
  // is ended and its journal is the measurement.
  bool stopped = false;
  auto last_look = std::chrono::steady_clock::now();
  if (enough)
    lo.stop_when = [&] {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_look < std::chrono::milliseconds(500)) return false;
      last_look = now;
      try {
        stopped = enough(read_journal());
      } catch (const std::exception&) {
        stopped = false;  // no journal yet, or a line being written
      }
      return stopped;
    };
  const double before = children_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = measuring_tree(ex, lo);
  out.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.cpu = children_cpu_seconds() - before;
  if (rc == 0) {
    try {
      if (!stopped)
        out.fair_throughput = nlohmann::json::parse(std::ifstream(std::filesystem::path(lo.out_dir) / "results.json"))
                                  .at("fair_throughput")
                                  .get<double>();
      out.completions = read_journal();
    } catch (const std::exception&) {
      out.fair_throughput = 0;
      out.completions.clear();
    }
  }
  if (rc != 0 || !(out.fair_throughput > 0 || (stopped && !out.completions.empty()))) {
    std::string names;
    for (const auto& [name, n] : tasks) names += (names.empty() ? "" : ", ") + name;
    throw std::runtime_error("measuring the CPU per task of " + names + " through a one-hop tree: the run ended with exit code " +
                             std::to_string(rc) + (rc == 0 ? " and no fair throughput in its results.json" : ""));
  }
  out.stopped = stopped;
  return out;
}
}  // namespace

MixReading read_mix_run(const std::vector<Completion>& done, const std::vector<double>& weight,
                        const std::vector<double>& cost, const std::vector<std::uint64_t>& tasks, bool ended) {
  if (weight.size() != cost.size() || weight.size() != tasks.size())
    throw std::invalid_argument("read_mix_run: " + std::to_string(weight.size()) + " weights, " + std::to_string(cost.size()) +
                                " costs and " + std::to_string(tasks.size()) + " task counts (expected as many of each)");
  for (std::size_t k = 0; k < weight.size(); ++k)
    if (!(weight[k] > 0) || !(cost[k] > 0))
      throw std::invalid_argument("read_mix_run: application " + std::to_string(k) + " needs a weight > 0 and a cost > 0");
  MixReading out;
  double last = 0;
  for (const auto& e : done) last = std::max(last, e.at);
  try {
    out.steady = steady_rate(done, weight, cost, tasks, 0.1, std::clamp(last / 40, 1e-3, 0.25), kMixWindows);
    out.has_steady = true;
  } catch (const std::invalid_argument&) {
    out.has_steady = false;  // too few completions for its windows yet
  }
  if (out.has_steady && out.steady.end - out.steady.start >= kMixMinSpan && out.steady.band + out.steady.dip_band <= kMixTightBand)
    out.stop = MixStop::tight;
  else if (last >= kMixCapSeconds)
    out.stop = MixStop::capped;
  else if (ended)
    out.stop = MixStop::ended;
  return out;
}

double alone_seconds_per_task(const std::vector<Completion>& done, double fair_throughput, double host_cores) {
  if (done.size() >= 20) {
    const auto [first, last] = std::minmax_element(done.begin(), done.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
    if (last->at > first->at) return host_cores * (last->at - first->at) / static_cast<double>(done.size() - 1);
  }
  if (!(fair_throughput > 0))
    throw std::invalid_argument("alone_seconds_per_task: " + std::to_string(done.size()) +
                                " completions and no fair throughput: nothing to measure the cost by");
  return host_cores / fair_throughput;
}

double mix_spread(MixStop stop, double band) { return stop == MixStop::tight ? std::max(band, kMixTightBand) : band; }

TaskCpuCosts measure_task_cpu(const model::Experiment& experiment, const std::map<std::string, double>& estimates,
                              std::uint32_t workers, double host_cores, bool encrypt, const std::string& bin_dir,
                              const std::function<void()>& between) {
  TaskCpuCosts out;
  if (estimates.empty()) return out;
  // Workers with as many cores as the widest task needs (a multi-core task must fit),
  // as many of them as the CPUs hold.
  std::uint32_t worker_cores = 1;
  for (const auto& a : experiment.apps)
    if (estimates.count(a.name)) worker_cores = std::max(worker_cores, a.cores_per_task);
  workers = std::clamp<std::uint32_t>(workers / worker_cores, 1, 8);
  out.workers = workers;
  out.worker_cores = worker_cores;
  const process::ScratchDir scratch("taskcpu");
  const auto& dir = scratch.path();
  double cpu = 0, wall = 0;
  auto tasks_for = [&](double host_seconds, double run_seconds) {
    return static_cast<std::uint64_t>(std::clamp(run_seconds * host_cores / std::max(host_seconds, 1e-5), 40.0, 50'000.0));
  };
  // Alone, when there are several: each application in turn, ~kAloneSeconds of the host's
  // CPUs by the estimate; host seconds per task = CPUs / tasks per second. Only their
  // ratios are kept. Two rounds, one before the run together and one after it (in the
  // other order), and each application's lower figure: a copy stall of the VM lasting
  // seconds (docs/calibration.md, "Hosts") slows the run it falls on 1.5-2.5x, and one
  // ~1 s run each put a matadd of 4 MiB at 5.2-6.6 CPU-ms against 2.2-3.5 in the other
  // calibrations, which predicted the quickstart 18-23 % low.
  std::map<std::string, std::vector<double>> alone_rounds;
  const auto alone_round = [&](bool reversed) {
    std::vector<std::pair<std::string, double>> order(estimates.begin(), estimates.end());
    if (reversed) std::reverse(order.begin(), order.end());
    for (const auto& [app, estimate] : order) {
      const int round = static_cast<int>(alone_rounds[app].size()) + 1;
      phase("this host: whole tasks through a one-hop tree, " + app + " alone (round " + std::to_string(round) + " of 2)");
      const auto run = run_one_hop(experiment, {{app, tasks_for(estimate, kAloneSeconds)}}, false, workers, worker_cores,
                                   encrypt, bin_dir, dir, app + "-alone-" + std::to_string(round));
      cpu += run.cpu;
      wall += run.wall;
      alone_rounds[app].push_back(alone_seconds_per_task(run.completions, run.fair_throughput, host_cores));
      if (between) between();
    }
    for (const auto& [app, costs] : alone_rounds) out.alone[app] = *std::min_element(costs.begin(), costs.end());
    out.alone_rounds = alone_rounds;
  };
  std::map<std::string, double> weight;
  double unit_alone = 0;
  if (estimates.size() > 1)
    alone_round(false);
  else
    out.alone = estimates;  // one application: only the level below counts
  for (const auto& a : experiment.apps)
    if (estimates.count(a.name)) {
      weight[a.name] = estimates.size() > 1 ? a.weight : 1.0;
      unit_alone += weight[a.name] * out.alone.at(a.name);
    }
  // Together in the experiment's weights (or the one application), ONE run of at most
  // kMixCapSeconds: what a unit of weight costs when the applications share the CPUs as in
  // a run (a kernel-bound one fills the gaps a transfer-bound one leaves), read from the
  // run's journal over its steady span (steady_rate: the warm-up left out by the MSER rule,
  // the end at (1 - ε)·T), in kMixWindows windows whose band is the estimate's spread. The
  // costs alone are scaled to it, keeping their ratios. Several short trees instead
  // measured mostly start-ups: a tree's first seconds run a few % slower than its steady
  // state, which a run's window of 10-20 s hardly sees, and every run was a new tree to
  // start. Its tasks are enough for twice the cap by the estimate (a first guess off by
  // half still reaches it): the clock ends it, not the count (sized by the guess, runs
  // lasted 4-9 s, and four windows of a 4 s run agreed by chance: an interval of ±2.5 %
  // that the run then left).
  const double units = static_cast<double>(tasks_for(unit_alone, 2 * kMixCapSeconds));
  std::map<std::string, std::uint64_t> tasks;
  for (const auto& [app, w] : weight) tasks[app] = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(units * w)));
  phase(std::string("this host: whole tasks through a one-hop tree, ") +
        (estimates.size() > 1 ? "the applications together" : estimates.begin()->first) + " (at most " +
        std::to_string(static_cast<int>(kMixCapSeconds)) + " s, its steady part in " + std::to_string(kMixWindows) +
        " windows)");
  // The applications in the measuring file's (and its journal's) order: the experiment's.
  std::vector<double> w, c;
  std::vector<std::uint64_t> counts;
  for (const auto& a : experiment.apps)
    if (tasks.count(a.name)) {
      w.push_back(weight.at(a.name));
      c.push_back(out.alone.at(a.name));
      counts.push_back(tasks.at(a.name));
    }
  // Read twice a second (run_one_hop): stopped as soon as its estimate is tight, or at the cap.
  MixStop stop = MixStop::ended;
  const auto enough = [&](const std::vector<Completion>& done) {
    const auto r = read_mix_run(done, w, c, counts, false);
    if (r.stop != MixStop::running) stop = r.stop;
    return r.stop != MixStop::running;
  };
  TreeCpuSampler sampler;  // the tree's CPU and the machine's idle time over the run (busy_share)
  const auto run = run_one_hop(experiment, tasks, true, workers, worker_cores, encrypt, bin_dir, dir, "mix", enough);
  const auto cpu_samples = sampler.stop();
  cpu += run.cpu;
  wall += run.wall;
  if (!run.stopped) stop = MixStop::ended;
  out.stop = stop;
  out.stopped_early = stop == MixStop::tight;
  if (between) between();
  if (estimates.size() > 1) {  // the second round alone, and the mix's costs and unit again
    alone_round(true);
    unit_alone = 0;
    c.clear();
    for (const auto& a : experiment.apps)
      if (tasks.count(a.name)) {
        unit_alone += weight.at(a.name) * out.alone.at(a.name);
        c.push_back(out.alone.at(a.name));
      }
  }
  double span = 0;
  for (const auto& e : run.completions) span = std::max(span, e.at);
  out.run_seconds = span;
  double level = 0;  // host seconds per unit of weight
  try {
    const auto steady = steady_rate(run.completions, w, c, run.tasks, 0.1, std::clamp(span / 40, 1e-3, 0.25), kMixWindows);
    // The median window: a window another process stalled (one of four, measured: 10.8
    // CPU-ms against 6.3-6.8) moved the mean 9 % and the level run to run 7.5 % (sd/mean,
    // five calibrations on a quiet machine; 4.3 % from the median).
    level = host_cores / steady.median;
    out.spread = mix_spread(stop, steady.band);
    out.dip = steady.dip_band;
    out.dips = steady.dips.size();
    out.window_spread = steady.spread;
    for (const double r : steady.windows) out.repeats.push_back(host_cores / r);
    out.steady_start = steady.start;
    out.steady_end = steady.end;
    out.busy_share = run_busy_share(cpu_samples, steady, span);
  } catch (const std::invalid_argument&) {
    // Too few completions for windows (a run of a few tasks): the master's steady window.
    level = host_cores / run.fair_throughput;
    out.repeats = {level};
  }
  out.mix_scale = unit_alone > 0 ? level / unit_alone : 1.0;
  out.seconds = out.alone;
  for (auto& [app, seconds] : out.seconds) seconds *= out.mix_scale;
  if (estimates.size() == 1) {  // nothing measured alone: the run is the application alone
    out.alone = out.seconds;
    out.mix_scale = 1.0;
  }
  out.busy = wall > 0 ? cpu / (wall * host_cores) : 0.0;
  return out;
}

namespace {
/// A host's per-byte figures from the byte's cost over all its samples: γ and its spread,
/// and the receiving end's share of the one-hop tree's per-byte CPU beyond γ and the
/// generation (`ends` updated with it). `shared_inputs`: the tree's inputs go through
/// shared input segments (one machine, ipc://), not the socket the probe measured, so a
/// move costs at most what the one-hop tree spent per byte beyond the generation.
void settle_byte_costs(model::HostCalibration& host, const CommCost& cost, TaskEndCost& ends, bool shared_inputs) {
  host.comm_cpu_seconds_per_byte = cost.cpu_seconds_per_byte;
  host.comm_cpu_spread = cost.spread;
  if (ends.tree_cpu_seconds_per_byte > 0) {
    const double beyond_generation = std::max(0.0, ends.tree_cpu_seconds_per_byte - ends.input_cpu_seconds_per_byte);
    if (shared_inputs) host.comm_cpu_seconds_per_byte = std::min(host.comm_cpu_seconds_per_byte, beyond_generation);
    host.shared_inputs = shared_inputs;
    ends.receive_cpu_seconds_per_byte = std::max(0.0, beyond_generation - host.comm_cpu_seconds_per_byte);
    host.receive_cpu_seconds_per_byte = ends.receive_cpu_seconds_per_byte;
  }
}
}  // namespace

void calibrate_local_host(const model::Experiment& experiment, const std::string& file, bool encrypt,
                          std::ostream& log, const std::string& bin_dir) {
  auto calibration = model::load_calibration(file);
  phase("this host: the CPU cost of moving a byte between two of its processes (sampled again between the phases below)");
  // Sampled between the phases (CommCostSeries): a first figure sizes the runs below,
  // the median over all the samples is recorded.
  CommCostSeries gamma(largest_input_bytes(experiment), encrypt);
  gamma.sample(2);
  auto cost = gamma.summary();
  if (cli_support::interrupted()) throw cli_support::Interrupted("interrupted while calibrating this host; no calibration written");
  const auto* app = largest_app(experiment);
  if (app && app->input_bytes() >= (64u << 10))
    phase("this host: what a task's input costs at its two ends (two no-op trees of " + app->name + "-sized tasks)");
  TaskEndCost ends = app ? measure_task_end_cost(*app, cost.cpu_seconds_per_byte, encrypt, bin_dir) : TaskEndCost{};
  gamma.sample(1);
  cost = gamma.summary();
  const auto topo = exec::discover_topology();
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, sizeof name, "localhost");
  add_local_host(calibration, experiment, cpu_lists(assign_cpus(experiment, topo.cores)), static_cast<double>(topo.cores.size()),
                 name, cost, ends);
  // Each application's whole CPU per task, through the runtime: the tree's
  // own applications on a master and one one-core worker per CPU of this machine.
  auto& host = calibration.hosts[name];
  std::map<std::string, double> estimates;
  for (const auto& a : experiment.apps) {
    if (a.kernel == model::Kernel::abstract || a.kernel == model::Kernel::command || experiment.path.empty()) continue;
    // A first guess of its CPU per task, from what was just measured (the kernel at the
    // nodes' mean share, the per-byte costs of its input), to size the runs.
    double kernel = 0;
    int measured = 0;
    for (const auto& [node, nc] : calibration.nodes)
      if (const auto it = nc.task_seconds.find(a.name); it != nc.task_seconds.end()) {
        kernel += it->second * nc.cpu_share;
        ++measured;
      }
    if (measured > 0) kernel /= measured;
    estimates[a.name] = kernel + 50e-6 + static_cast<double>(a.input_bytes()) *
                                             (cost.cpu_seconds_per_byte * 2 + ends.input_cpu_seconds_per_byte +
                                              ends.receive_cpu_seconds_per_byte);
  }
  const auto tc = measure_task_cpu(experiment, estimates, static_cast<std::uint32_t>(topo.cores.size()),
                                   static_cast<double>(topo.cores.size()), encrypt, bin_dir, [&] { gamma.sample(1); });
  // The byte's cost over every sample, and the receiving end's share beyond it again.
  cost = gamma.summary();
  settle_byte_costs(host, cost, ends, true);
  std::ostringstream task_log;
  if (!tc.seconds.empty()) host.busy_share = tc.busy_share && *tc.busy_share > 0 ? std::min(1.0, *tc.busy_share) : 1.0;
  for (const auto& [app_name, seconds] : tc.seconds) {
    host.task_cpu_seconds[app_name] = seconds;
    host.task_cpu_spread[app_name] = tc.spread;
    if (tc.dip > 0) host.task_cpu_dip[app_name] = std::min(tc.dip, 0.99);
    task_log << "; " << app_name << " " << seconds * 1e3 << " CPU-ms per task";
    if (tc.seconds.size() > 1) {
      task_log << " (alone " << tc.alone.at(app_name) * 1e3 << ", the lower of";
      for (const double r : tc.alone_rounds.at(app_name)) task_log << " " << r * 1e3;
      task_log << ")";
    }
  }
  if (!tc.seconds.empty())
    task_log << " (" << tc.workers << " workers of " << tc.worker_cores << " core" << (tc.worker_cores > 1 ? "s" : "") << "; "
             << (tc.seconds.size() > 1 ? "the applications together in their weights" : "one run")
             << (tc.stop == MixStop::tight    ? ", stopped once its estimate was tight (a 95 % band within +-5 %) at "
                 : tc.stop == MixStop::capped ? ", stopped at its cap of " + std::to_string(static_cast<int>(kMixCapSeconds)) +
                                                    " s (its estimate not tight earlier) at "
                                              : std::string(", ran to its end (its estimate not tight earlier) at "))
             << tc.run_seconds << " s, steady from " << tc.steady_start << " s to " << tc.steady_end << " s, its windows "
             << tc.window_spread * 100 << " % apart, 95 % prediction band " << tc.spread * 100 << " % wide"
             << (tc.stopped_early ? " (the stopping rule's bound)" : "") << ", "
             << (tc.dips > 0 ? std::to_string(tc.dips) + " window(s) dipped below its jitter: a next span may lose " +
                                   std::to_string(tc.dip * 100) + " % of its work"
                             : std::string("no window dipped below its jitter"))
             << "; CPUs busy "
             << tc.busy * 100 << " %; the tree's share of the CPU it could have had "
             << (tc.busy_share ? std::to_string(*tc.busy_share * 100) + " %" : std::string("not measured"))
             << "; each window";
  for (const double r : tc.repeats) task_log << " " << r * 1e3;
  if (!tc.seconds.empty()) task_log << " CPU-ms)";
  model::save_calibration(calibration, file);
  log << "host " << name << ": " << topo.cores.size() << " CPUs shared by the tree's " << experiment.nodes.size()
      << " nodes; moving a byte between two of its processes" << (encrypt ? " (CURVE)" : "") << " costs "
      << cost.cpu_seconds_per_byte * 1e9 << " CPU-ns (spread " << cost.spread * 100 << " % over "
      << cost.repetitions << " repetitions, " << cost.bytes_per_second / 1e9 << " GB/s)";
  if (host.comm_cpu_seconds_per_byte < cost.cpu_seconds_per_byte)
    log << "; a move through the tree's shared input segments " << host.comm_cpu_seconds_per_byte * 1e9 << " CPU-ns";
  if (ends.tree_cpu_seconds_per_byte > 0)
    log << "; through the runtime (master -> worker, no-op tasks of " << app->input_bytes() << " bytes) "
        << ends.tree_cpu_seconds_per_byte * 1e9 << " CPU-ns per byte: generating the input "
        << ends.input_cpu_seconds_per_byte * 1e9 << ", receiving and releasing it " << ends.receive_cpu_seconds_per_byte * 1e9;
  if (!task_log.str().empty()) log << "; whole tasks through the runtime (one hop)" << task_log.str();
  log << "\n";
}

model::Calibration local_host_only(const model::Experiment& experiment, bool encrypt, std::ostream& log) {
  model::Calibration calibration;
  calibration.experiment = experiment.path;
  calibration.measured_at = static_cast<double>(std::time(nullptr));
  for (const auto& n : experiment.nodes) {
    auto& nc = calibration.nodes[n.name];
    nc.cores = n.cores;
    nc.parent = n.parent.value_or("");
  }
  const auto cost = tree_comm_cost(experiment, encrypt);
  const auto topo = exec::discover_topology();
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, sizeof name, "localhost");
  add_local_host(calibration, experiment, cpu_lists(assign_cpus(experiment, topo.cores)), static_cast<double>(topo.cores.size()),
                 name, cost);
  log << "host " << name << ": " << topo.cores.size() << " CPUs shared by the tree's " << experiment.nodes.size()
      << " nodes; moving a byte between two of its processes" << (encrypt ? " (CURVE)" : "") << " costs "
      << cost.cpu_seconds_per_byte * 1e9 << " CPU-ns (spread " << cost.spread * 100 << " %)\n";
  return calibration;
}

namespace {
/// `experiment` cut down to node `node` alone below a master in its parent's place, with
/// one application `app` of `tasks` tasks (FCFS, no migration): what
/// measure_node_task_cpu runs on the emulated platform, the node on its own link.
std::string node_alone_experiment(const model::Experiment& experiment, std::size_t parent, std::size_t node,
                                  const std::string& app, std::uint64_t tasks) {
  toml::table doc = experiment_document(experiment);
  toml::array nodes;
  if (const auto* all = doc["node"].as_array())
    for (const auto& n : *all) {
      const auto* t = n.as_table();
      if (!t) continue;
      const auto name = (*t)["name"].value<std::string>().value_or("");
      if (name == experiment.nodes[parent].name) {
        toml::table master{{"name", name}, {"cores", 0}};
        if (const auto q = (*t)["cpu_quota"].value<double>()) master.insert_or_assign("cpu_quota", *q);
        nodes.push_back(std::move(master));
      } else if (name == experiment.nodes[node].name) {
        toml::table copy = *t;
        copy.insert_or_assign("parent", experiment.nodes[parent].name);
        nodes.push_back(std::move(copy));
      }
    }
  doc.insert_or_assign("node", std::move(nodes));
  return measuring_document(doc, {{app, tasks}}, false);
}

/// The CPU seconds one task of `app` costs node `node` of an emulated LAN as a whole —
/// receiving its input over the node's own shaped link, the kernel under the node's CPU
/// quota, the result's way back, the runtime's wake-ups around them — counted by the
/// node's accounting group (lo.node_cpu_seconds) over two runs of the node alone below a
/// master in its parent's namespace, n and 3n tasks: the difference over the 2n tasks
/// cancels the start-up. n from the calibrated task time and the link, for about 3 s.
/// nullopt when the two counts do not give a positive cost.
std::optional<double> measure_node_task_cpu(const model::Experiment& experiment, const model::Calibration& calibration,
                                            std::size_t node, const model::AppSpec& app, const LaunchOptions& lo,
                                            const std::filesystem::path& dir) {
  const auto& spec = experiment.nodes[node];
  std::size_t parent = 0;
  for (std::size_t i = 0; i < experiment.nodes.size(); ++i)
    if (spec.parent && experiment.nodes[i].name == *spec.parent) parent = i;
  // Seconds a task holds the node: its kernel (one slot), its link, or the CPU its
  // reception takes under the node's quota (~3 γ per byte: measured ~2×(γ + ρ) under a quota),
  // whichever is longest; from those, n for a first run of ~3 s (the difference of the two
  // runs' counts, over 2n tasks, must stand well above the start-ups' spread of some
  // 10–30 CPU-ms).
  const auto host = calibration.hosts.find(spec.name);
  const double gamma = host != calibration.hosts.end() ? host->second.comm_cpu_seconds_per_byte : 0.5e-9;
  const double cpu = host != calibration.hosts.end() && host->second.cores > 0 ? host->second.cores : 1.0;
  double wall = std::max(0.01, 3 * gamma * static_cast<double>(app.input_bytes()) / std::min(cpu, 1.0));
  if (const auto it = calibration.nodes.find(spec.name); it != calibration.nodes.end()) {
    if (const auto t = it->second.task_seconds.find(app.name); t != it->second.task_seconds.end())
      wall = std::max(wall, t->second / std::max<std::uint32_t>(1, spec.cores / std::max<std::uint32_t>(1, app.cores_per_task)));
    const double bw = it->second.link_bandwidth ? *it->second.link_bandwidth : spec.bandwidth.value_or(0.0);
    if (bw > 0) wall = std::max(wall, static_cast<double>(app.input_bytes()) / bw);
  }
  const auto n = static_cast<std::uint64_t>(std::clamp(std::ceil(3.0 / wall), 2.0, 400.0));
  const auto sub_index = [parent, node](std::size_t i) { return i == 0 ? parent : node; };
  double used[2] = {0, 0};
  const std::uint64_t counts[2] = {n, 3 * n};
  for (int r = 0; r < 2; ++r) {
    const std::string tag = spec.name + "-" + app.name + "-" + std::to_string(counts[r]);
    const auto file = dir / (tag + ".toml");
    std::ofstream(file) << node_alone_experiment(experiment, parent, node, app.name, counts[r]);
    const auto ex = model::load_experiment(file.string());
    auto run = measuring_launch(lo.encrypt, 600, lo.bin_dir, (dir / ("out-" + tag)).string());
    run.master_args.insert(run.master_args.end(), lo.master_args.begin(), lo.master_args.end());
    run.worker_args = lo.worker_args;
    run.wrap = [&lo, sub_index](std::size_t i) { return lo.wrap(sub_index(i)); };
    if (lo.listen) run.listen = [&lo, sub_index](std::size_t i) { return lo.listen(sub_index(i)); };
    if (lo.parent_endpoint)
      run.parent_endpoint = [&lo, sub_index](std::size_t i, const std::string& bound) {
        return lo.parent_endpoint(sub_index(i), bound);
      };
    const auto before = lo.node_cpu_seconds(node);
    const int rc = measuring_tree(ex, run);
    const auto after = lo.node_cpu_seconds(node);
    if (rc != 0)
      throw std::runtime_error("measuring the CPU per task of " + app.name + " on node '" + spec.name +
                               "' (the node alone below its parent): the run ended with exit code " + std::to_string(rc));
    if (!before || !after) return std::nullopt;
    used[r] = *after - *before;
  }
  const double per_task = (used[1] - used[0]) / static_cast<double>(counts[1] - counts[0]);
  if (!(per_task > 0)) return std::nullopt;
  return per_task;
}
}  // namespace

void calibrate_emulated_hosts(const model::Experiment& experiment, const std::string& file, const LaunchOptions& lo,
                              std::ostream& log) {
  const bool encrypt = lo.encrypt;
  const std::string& bin_dir = lo.bin_dir;
  auto calibration = model::load_calibration(file);
  // As on a host of its own (calibrate_local_host): the byte's cost sampled between the
  // phases, the median of all the samples kept; one short probe lands in a VM's copy stall
  // at times (docs/calibration.md, "Hosts").
  CommCostSeries gamma(largest_input_bytes(experiment), encrypt);
  gamma.sample(2);
  auto cost = gamma.summary();
  const auto* app = largest_app(experiment);
  TaskEndCost ends = app ? measure_task_end_cost(*app, cost.cpu_seconds_per_byte, encrypt, bin_dir) : TaskEndCost{};
  gamma.sample(1);
  cost = gamma.summary();
  const double machine = static_cast<double>(exec::discover_topology().cores.size());
  for (const auto& spec : experiment.nodes) {
    auto& nc = calibration.nodes[spec.name];
    const std::uint32_t cores = nc.cores > 0 ? nc.cores : spec.cores;
    double cpu = machine;
    if (!spec.cpuset.empty()) cpu = static_cast<double>(exec::parse_cpu_list(spec.cpuset).size());
    if (spec.cpu_quota) cpu = std::min(cpu, *spec.cpu_quota);
    auto& host = calibration.hosts[spec.name];
    host.cores = std::max(cpu, 1e-6);
    host.comm_cpu_seconds_per_byte = cost.cpu_seconds_per_byte;
    host.comm_cpu_spread = cost.spread;
    host.input_cpu_seconds_per_byte = ends.input_cpu_seconds_per_byte;
    host.receive_cpu_seconds_per_byte = ends.receive_cpu_seconds_per_byte;
    nc.host = spec.name;
    nc.cpus.clear();
    nc.cpu_share = cores > 0 ? std::clamp(cpu / static_cast<double>(cores), 1e-6, 1.0) : 1.0;
  }
  // Each computing node's whole CPU per task of each application, where it runs (its
  // namespace, link and quota: lan-slices' 0.05-core node spent ~2x the per-byte
  // CPU measured on loopback). The LP charges it in place of the term-by-term costs.
  std::ostringstream whole;
  if (lo.node_cpu_seconds && lo.wrap && lo.node_cpu_seconds(0)) {
    const process::ScratchDir scratch("nodecpu");
    const auto& dir = scratch.path();
    for (std::size_t i = 1; i < experiment.nodes.size(); ++i) {
      const auto& spec = experiment.nodes[i];
      if (spec.cores == 0) continue;
      for (const auto& a : experiment.apps) {
        if (a.kernel == model::Kernel::abstract || a.kernel == model::Kernel::command) continue;
        if (a.cores_per_task > spec.cores) continue;
        const auto t0 = std::chrono::steady_clock::now();
        std::optional<double> c;
        try {
          c = measure_node_task_cpu(experiment, calibration, i, a, lo, dir);
        } catch (const std::exception& e) {
          // A node that cannot run it alone (requirements, a failed run): its per-byte
          // terms stay; the calibration itself is not lost.
          whole << "; " << spec.name << "/" << a.name << " not measured (" << e.what() << ")";
          continue;
        }
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!c) {
          whole << "; " << spec.name << "/" << a.name << " not counted";
          continue;
        }
        calibration.hosts[spec.name].task_cpu_seconds[a.name] = *c;
        whole << "; " << spec.name << "/" << a.name << " " << *c * 1e3 << " CPU-ms (" << took << " s)";
        gamma.sample(1);
      }
    }
  }
  cost = gamma.summary();
  for (const auto& spec : experiment.nodes) {
    TaskEndCost mine = ends;
    settle_byte_costs(calibration.hosts[spec.name], cost, mine, false);
  }
  model::save_calibration(calibration, file);
  log << "emulated LAN: each of the " << experiment.nodes.size()
      << " nodes is a host of its own (its CPU quota as its cores); moving a byte costs "
      << cost.cpu_seconds_per_byte * 1e9 << " CPU-ns on this machine (spread " << cost.spread * 100 << " % over "
      << cost.repetitions << " repetitions)";
  if (!whole.str().empty()) log << "; whole task at each node, on its own link and quota" << whole.str();
  log << "\n";
}

}  // namespace treefarm::tools
