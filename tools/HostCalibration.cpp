#include "tools/HostCalibration.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "runtime/exec/CpuList.hpp"
#include "runtime/exec/Topology.hpp"
#include "tasks/Payload.hpp"
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

/// The CPU cost of a byte on this machine, with messages of the experiment's largest input.
CommCost tree_comm_cost(const model::Experiment& experiment, bool encrypt) {
  std::uint64_t bytes = 1;
  for (const auto& app : experiment.apps) bytes = std::max<std::uint64_t>(bytes, app.input_bytes());
  return measure_comm_cost(bytes, encrypt);
}

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
  const auto dir = std::filesystem::temp_directory_path() / ("treefarm-endcost-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::uint64_t short_run = std::clamp<std::uint64_t>(600'000'000 / bytes, 20, 20'000);
  double cpu[2] = {0, 0};
  std::uint64_t tasks[2] = {short_run, 4 * short_run};
  for (int r = 0; r < 2; ++r) {
    const auto file = dir / ("noop-" + std::to_string(r) + ".toml");
    std::ofstream(file) << "[[node]]\nname = \"master\"\ncores = 0\n[[node]]\nname = \"w1\"\nparent = \"master\"\n"
                           "cores = 1\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = "
                        << bytes << "\ntasks = " << tasks[r] << "\n[run]\nbuffer = 4\n";
    const auto ex = model::load_experiment(file.string());
    LaunchOptions lo;
    lo.quiet = true;
    lo.encrypt = encrypt;
    lo.timeout = 120;
    lo.log_level = "warn";
    lo.master_args = {"--no-table"};
    lo.bin_dir = bin_dir;
    lo.out_dir = (dir / ("out-" + std::to_string(r))).string();
    const std::atomic<bool> never{false};
    const double before = children_cpu_seconds();
    const int rc = launch_tree(ex, lo, never);
    cpu[r] = children_cpu_seconds() - before;
    if (rc != 0) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      throw std::runtime_error("measuring the runtime's cost per byte: a no-op tree of " + std::to_string(tasks[r]) +
                               " tasks of " + std::to_string(bytes) + " bytes ended with exit code " + std::to_string(rc));
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  out.tree_cpu_seconds_per_byte =
      std::max(0.0, (cpu[1] - cpu[0]) / (static_cast<double>(tasks[1] - tasks[0]) * static_cast<double>(bytes)));
  out.receive_cpu_seconds_per_byte = std::max(0.0, out.tree_cpu_seconds_per_byte - gamma - out.input_cpu_seconds_per_byte);
  return out;
}

namespace {
/// The experiment's file with only application `app` (`tasks` tasks, weight 1, FCFS, no
/// migration, no events) on a master and `workers` one-core workers one hop below it.
std::string one_hop_experiment(const model::Experiment& experiment, const std::string& app, std::uint64_t tasks,
                               std::uint32_t workers) {
  toml::table doc;
  try {
    doc = toml::parse_file(experiment.path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(experiment.path + ": " + std::string(e.description()));
  }
  toml::array nodes;
  nodes.push_back(toml::table{{"name", "master"}, {"cores", 0}});
  for (std::uint32_t w = 0; w < workers; ++w)
    nodes.push_back(toml::table{{"name", "w" + std::to_string(w + 1)}, {"parent", "master"}, {"cores", 1}});
  doc.insert_or_assign("node", std::move(nodes));
  toml::array apps;
  if (const auto* all = doc["app"].as_array())
    for (const auto& a : *all)
      if (const auto* t = a.as_table(); t && (*t)["name"].value<std::string>() == app) {
        toml::table copy = *t;
        copy.insert_or_assign("tasks", static_cast<std::int64_t>(tasks));
        copy.insert_or_assign("weight", 1);
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

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}
}  // namespace

TaskCpuCost measure_task_cpu(const model::Experiment& experiment, const model::AppSpec& app, double estimate_seconds,
                             std::uint32_t workers, double host_cores, bool encrypt, const std::string& bin_dir) {
  TaskCpuCost out;
  workers = std::clamp<std::uint32_t>(workers, 1, 8);
  // Each run holds the workers' CPUs ~2 s (by the estimate; at least 60 tasks).
  const double estimate = std::max(estimate_seconds, 1e-5);
  const auto tasks = static_cast<std::uint64_t>(std::clamp(2.0 * workers / estimate, 60.0, 50'000.0));
  const auto dir = std::filesystem::temp_directory_path() /
                   ("treefarm-taskcpu-" + std::to_string(::getpid()) + "-" + app.name);
  std::filesystem::create_directories(dir);
  std::vector<double> per_task;
  double cpu_sum = 0, wall_sum = 0;
  for (int r = 0; r < 3; ++r) {
    const auto file = dir / ("run-" + std::to_string(r) + ".toml");
    std::ofstream(file) << one_hop_experiment(experiment, app.name, tasks, workers);
    const auto ex = model::load_experiment(file.string());
    LaunchOptions lo;
    lo.quiet = true;
    lo.encrypt = encrypt;
    lo.timeout = 300;
    lo.log_level = "warn";
    lo.master_args = {"--no-table"};
    lo.bin_dir = bin_dir;
    lo.out_dir = (dir / ("out-" + std::to_string(r))).string();
    const std::atomic<bool> never{false};
    const double before = children_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = launch_tree(ex, lo, never);
    wall_sum += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cpu_sum += children_cpu_seconds() - before;
    double throughput = 0;
    if (rc == 0) {
      try {
        const auto results = nlohmann::json::parse(std::ifstream(std::filesystem::path(lo.out_dir) / "results.json"));
        throughput = results.at("apps").at(0).at("throughput").get<double>();
      } catch (const std::exception&) {
        throughput = 0;
      }
    }
    if (rc != 0 || !(throughput > 0)) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      throw std::runtime_error("measuring the CPU of application '" + app.name + "' per task: a tree of " +
                               std::to_string(tasks) + " tasks ended with exit code " + std::to_string(rc) +
                               (rc == 0 ? " and no throughput in its results.json" : ""));
    }
    // The host's CPUs over the tasks per second of the run's steady window (the master's
    // measurement: start-up and end left out), so a CPU the runtime leaves idle counts.
    per_task.push_back(host_cores / throughput);
  }
  out.busy = wall_sum > 0 ? cpu_sum / (wall_sum * host_cores) : 0.0;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  out.seconds = median_of(per_task);
  const auto [lo, hi] = std::minmax_element(per_task.begin(), per_task.end());
  out.spread = out.seconds > 0 ? (*hi - *lo) / out.seconds : 0.0;
  out.tasks = tasks;
  out.workers = workers;
  return out;
}

void calibrate_local_host(const model::Experiment& experiment, const std::string& file, bool encrypt,
                          std::ostream& log, const std::string& bin_dir) {
  auto calibration = model::load_calibration(file);
  const auto cost = tree_comm_cost(experiment, encrypt);
  const auto* app = largest_app(experiment);
  const TaskEndCost ends = app ? measure_task_end_cost(*app, cost.cpu_seconds_per_byte, encrypt, bin_dir) : TaskEndCost{};
  const auto topo = exec::discover_topology();
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, sizeof name, "localhost");
  add_local_host(calibration, experiment, assign_cpus(experiment, topo.cores), static_cast<double>(topo.cores.size()),
                 name, cost, ends);
  // Each application's whole CPU per task, through the runtime (issue 21): the tree's
  // own applications on a master and one one-core worker per CPU of this machine.
  auto& host = calibration.hosts[name];
  std::ostringstream task_log;
  for (const auto& a : experiment.apps) {
    if (a.kernel == model::Kernel::abstract || a.kernel == model::Kernel::command) continue;
    if (experiment.path.empty()) break;
    // A first guess of its CPU per task, from what was just measured: the kernel at the
    // nodes' mean share, and the per-byte costs of its input and output.
    double kernel = 0;
    int measured = 0;
    for (const auto& [node, nc] : calibration.nodes)
      if (const auto it = nc.task_seconds.find(a.name); it != nc.task_seconds.end()) {
        kernel += it->second * nc.cpu_share;
        ++measured;
      }
    if (measured > 0) kernel /= measured;
    const double bytes = static_cast<double>(a.input_bytes());
    const double estimate = kernel + (cost.cpu_seconds_per_byte * 2 + ends.input_cpu_seconds_per_byte +
                                      ends.receive_cpu_seconds_per_byte) * bytes + 50e-6;
    const auto c = measure_task_cpu(experiment, a, estimate, static_cast<std::uint32_t>(topo.cores.size()),
                                    static_cast<double>(topo.cores.size()), encrypt, bin_dir);
    if (!(c.seconds > 0)) continue;
    host.task_cpu_seconds[a.name] = c.seconds;
    host.task_cpu_spread[a.name] = c.spread;
    task_log << "; " << a.name << " " << c.seconds * 1e3 << " CPU-ms per task (median of 3, spread " << c.spread * 100
             << " %, " << c.tasks << " tasks on " << c.workers << " workers, CPUs busy " << c.busy * 100 << " %)";
  }
  model::save_calibration(calibration, file);
  log << "host " << name << ": " << topo.cores.size() << " CPUs shared by the tree's " << experiment.nodes.size()
      << " nodes; moving a byte between two of its processes" << (encrypt ? " (CURVE)" : "") << " costs "
      << cost.cpu_seconds_per_byte * 1e9 << " CPU-ns (spread " << cost.spread * 100 << " % over "
      << cost.repetitions << " repetitions, " << cost.bytes_per_second / 1e9 << " GB/s)";
  if (ends.tree_cpu_seconds_per_byte > 0)
    log << "; through the runtime (master -> worker, no-op tasks of " << app->input_bytes() << " bytes) "
        << ends.tree_cpu_seconds_per_byte * 1e9 << " CPU-ns per byte: generating the input "
        << ends.input_cpu_seconds_per_byte * 1e9 << ", receiving and releasing it " << ends.receive_cpu_seconds_per_byte * 1e9;
  if (!task_log.str().empty()) log << "; whole tasks through the runtime (one hop)" << task_log.str();
  log << "\n";
}

void calibrate_emulated_hosts(const model::Experiment& experiment, const std::string& file, bool encrypt,
                              std::ostream& log, const std::string& bin_dir) {
  auto calibration = model::load_calibration(file);
  const auto cost = tree_comm_cost(experiment, encrypt);
  const auto* app = largest_app(experiment);
  const TaskEndCost ends = app ? measure_task_end_cost(*app, cost.cpu_seconds_per_byte, encrypt, bin_dir) : TaskEndCost{};
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
  model::save_calibration(calibration, file);
  log << "emulated LAN: each of the " << experiment.nodes.size()
      << " nodes is a host of its own (its CPU quota as its cores); moving a byte costs "
      << cost.cpu_seconds_per_byte * 1e9 << " CPU-ns on this machine (spread " << cost.spread * 100 << " % over "
      << cost.repetitions << " repetitions)\n";
}

}  // namespace treefarm::tools
