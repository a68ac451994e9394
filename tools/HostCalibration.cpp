#include "tools/HostCalibration.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <unistd.h>

#include "runtime/exec/CpuList.hpp"
#include "runtime/exec/Topology.hpp"
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
                    const CommCost& cost) {
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
  for (std::size_t i = 0; i < experiment.nodes.size(); ++i) {
    auto& nc = calibration.nodes[experiment.nodes[i].name];
    nc.host = host_name;
    nc.cpus = cpus[i];
    nc.cpu_share = shares[i];
  }
}

namespace {
/// The CPU cost of a byte on this machine, with messages of the experiment's largest input.
CommCost tree_comm_cost(const model::Experiment& experiment, bool encrypt) {
  std::uint64_t bytes = 1;
  for (const auto& app : experiment.apps) bytes = std::max<std::uint64_t>(bytes, app.input_bytes());
  return measure_comm_cost(bytes, encrypt);
}
}  // namespace

void calibrate_local_host(const model::Experiment& experiment, const std::string& file, bool encrypt,
                          std::ostream& log) {
  auto calibration = model::load_calibration(file);
  const auto cost = tree_comm_cost(experiment, encrypt);
  const auto topo = exec::discover_topology();
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, sizeof name, "localhost");
  add_local_host(calibration, experiment, assign_cpus(experiment, topo.cores), static_cast<double>(topo.cores.size()),
                 name, cost);
  model::save_calibration(calibration, file);
  log << "host " << name << ": " << topo.cores.size() << " CPUs shared by the tree's " << experiment.nodes.size()
      << " nodes; moving a byte between two of its processes" << (encrypt ? " (CURVE)" : "") << " costs "
      << cost.cpu_seconds_per_byte * 1e9 << " CPU-ns (spread " << cost.spread * 100 << " % over "
      << cost.repetitions << " repetitions, " << cost.bytes_per_second / 1e9 << " GB/s)\n";
}

void calibrate_emulated_hosts(const model::Experiment& experiment, const std::string& file, bool encrypt,
                              std::ostream& log) {
  auto calibration = model::load_calibration(file);
  const auto cost = tree_comm_cost(experiment, encrypt);
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
