#include "tools/sim/SimulateCommand.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "runtime/core/Policy.hpp"
#include "runtime/model/Calibration.hpp"

namespace treefarm::tools {

model::Experiment load_for_simulation(const std::string& experiment, const SimulateOptions& options) {
  auto ex = model::load_experiment(experiment);
  if (!options.policy.empty()) ex.run.policy = options.policy;
  if (options.buffer > 0) ex.run.buffer = options.buffer;
  (void)core::make_policy(ex.run.policy);  // unknown name: std::invalid_argument listing the known ones
  return ex;
}

void print_simulation_summary(std::ostream& out, const sim::SimulationOutcome& o, std::size_t nodes) {
  char line[320];
  std::snprintf(line, sizeof line,
                "simulated %zu nodes, %zu tasks: %.4g simulated s in %.3f s wall (LP %.3f s), peak memory %.1f MiB, "
                "%llu scheduler events",
                nodes, o.results.tasks.size(), o.simulated_seconds, o.wall_seconds, o.lp_seconds,
                static_cast<double>(o.max_rss_kib) / 1024.0, static_cast<unsigned long long>(o.events));
  out << line << "\n";
}

int simulate_command(const std::string& experiment, const SimulateOptions& options, std::ostream& out) {
  const auto ex = load_for_simulation(experiment, options);
  std::optional<model::Calibration> calibration;
  if (!options.calibration.empty()) calibration = model::load_calibration_for(options.calibration, ex);
  const auto platform = sim::make_sim_platform(ex, calibration ? &*calibration : nullptr);

  sim::SimulationOptions so;
  so.time_limit = options.time_limit;
  so.wall_limit = options.wall_limit;
  const auto outcome = sim::simulate(platform, so);

  if (!options.out_dir.empty()) {
    std::filesystem::create_directories(options.out_dir);
    const auto path = std::filesystem::path(options.out_dir) / "results.json";
    std::ofstream f(path);
    f << metrics::to_json(outcome.results).dump(1) << "\n";
    if (!f) throw std::runtime_error("cannot write " + path.string());
  }
  if (!options.quiet) metrics::print_table(out, outcome.results);
  print_simulation_summary(out, outcome, platform.nodes.size());
  if (!outcome.error.empty()) out << "simulation stopped early: " << outcome.error << "\n";
  return outcome.results.ok() && outcome.completed ? 0 : 4;
}

}  // namespace treefarm::tools
