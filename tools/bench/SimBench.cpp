#include "tools/bench/SimBench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "runtime/sim/Simulation.hpp"
#include "tools/bench/FittedExponent.hpp"
#include "tools/simulate/GenPlatform.hpp"
#include "tools/plot/ScalingPlot.hpp"

#include <spdlog/spdlog.h>

namespace treefarm::bench {

void bench_simulate(std::ostream& out) { bench_simulate(out, SimBenchOptions{}); }

void bench_simulate(std::ostream& out, const SimBenchOptions& options) {
  // The simulated nodes' info lines (two per node joining) are not the benchmark's: at
  // 100,000 nodes they were 200,000 lines on stderr. Warnings and errors still show.
  struct QuietNodes {
    spdlog::level::level_enum was = spdlog::get_level();
    QuietNodes() { spdlog::set_level(std::max(was, spdlog::level::warn)); }
    ~QuietNodes() { spdlog::set_level(was); }
    QuietNodes(const QuietNodes&) = delete;
    QuietNodes& operator=(const QuietNodes&) = delete;
  } quiet_nodes;
  char line[400];
  std::snprintf(line, sizeof line, "%7s %5s %7s %9s %8s %8s %8s %9s %14s %10s %10s  %s", "nodes", "apps", "tasks",
                "gen_s", "lp_s", "setup_s", "sim_s", "peak_MiB", "simulated_s", "events", "fair_ratio", "status");
  out << line << "\n";
  std::vector<double> sizes, walls, memories;
  for (const auto n : options.sizes) {
    simulate::GenOptions g;
    g.nodes = n;
    g.apps = options.apps;
    g.max_degree = options.max_degree;
    g.seed = options.seed;
    g.tasks = options.tasks;
    const auto t0 = std::chrono::steady_clock::now();
    const auto ex = model::parse_experiment(simulate::generate_platform(g), "generated-" + std::to_string(n) + ".toml");
    const auto platform = sim::make_sim_platform(ex);
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sim::SimulationOptions so;
    so.wall_limit = options.wall_limit;
    const auto o = sim::simulate(platform, so);
    const double ratio = o.results.predicted_fair_throughput && *o.results.predicted_fair_throughput > 0
                             ? o.results.fair_throughput / *o.results.predicted_fair_throughput
                             : 0.0;
    std::snprintf(line, sizeof line, "%7u %5zu %7llu %9.2f %8.2f %8.2f %8.2f %9.1f %14.6g %10llu %10.3f  %s", n,
                  ex.apps.size(), static_cast<unsigned long long>(ex.total_tasks()), build, o.lp_seconds,
                  o.setup_seconds, o.wall_seconds, static_cast<double>(o.max_rss_kib) / 1024.0, o.simulated_seconds,
                  static_cast<unsigned long long>(o.events), ratio,
                  o.completed ? "completed" : ("INCOMPLETE (" + std::to_string(o.results.tasks.size()) + " tasks): " + o.error).c_str());
    out << line << std::endl;
    sizes.push_back(n);
    walls.push_back(build + o.wall_seconds);
    memories.push_back(static_cast<double>(o.max_rss_kib));
  }
  if (sizes.size() >= 2) {
    std::snprintf(line, sizeof line, "fitted exponent against nodes: wall time (generation + simulation) %.3f, peak memory %.3f\n",
                  bench::fitted_exponent(sizes, walls), bench::fitted_exponent(sizes, memories));
    out << line << std::flush;
    if (!options.plot.empty()) {
      const std::vector<double> mib = [&] {
        std::vector<double> v;
        for (const double kib : memories) v.push_back(kib / 1024.0);
        return v;
      }();
      const std::string why_not = plot::write_scaling_plot(
          options.plot, {"treefarm bench simulate: " + std::to_string(options.apps) + " applications x " +
                             std::to_string(options.tasks) + " tasks, FCFS",
                         "nodes", "wall seconds (generation + simulation); peak MiB",
                         {{"wall seconds", sizes, walls, bench::fitted_exponent(sizes, walls)},
                          {"peak MiB", sizes, mib, bench::fitted_exponent(sizes, memories)}},
                         plot::this_command(), plot::machine_line()});
      out << (why_not.empty() ? "wrote " + options.plot : why_not) << "\n";
    }
  }
}

}  // namespace treefarm::bench
