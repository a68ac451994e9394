#include "tools/simulate/Simulate.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "runtime/core/Policy.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/core/MigrationOptions.hpp"
#include "tools/simulate/PriceTrace.hpp"

namespace treefarm::simulate {

model::Experiment load_for_simulation(const std::string& experiment, const SimulateOptions& options) {
  auto ex = model::load_experiment(experiment);
  if (!options.policy.empty()) ex.run.policy = options.policy;
  if (options.buffer > 0) ex.run.buffer = options.buffer;
  core::apply_migration_options(ex.run.migration, ex.run.balance, options.migration, options.balance);
  const auto it = ex.run.policy_options.find(ex.run.policy);
  // Unknown name or option: std::invalid_argument listing the known ones.
  (void)core::make_policy(ex.run.policy, it == ex.run.policy_options.end() ? core::PolicyOptions{} : it->second);
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
  // Applications from several masters (bertin2008 §2.2): SimGrid runs one tree of drivers
  // per origin (sim::origin_trees); each tree has its own one-port, so the one-port model,
  // whose port is shared by every transfer of a node, is refused with origins.
  if ((options.trace.empty() || !options.trace_only) && ex.run.comm_model == model::CommModel::one_port)
    model::require_root_origins(ex, "treefarm simulate (SimGrid) with comm_model = \"one-port\"");
  std::optional<model::Calibration> calibration;
  if (!options.calibration.empty()) calibration = model::load_calibration_for(options.calibration, ex);
  const auto platform = sim::make_sim_platform(ex, calibration ? &*calibration : nullptr);

  if (!options.trace.empty()) {
    if (ex.run.policy != "price")
      throw std::invalid_argument("--trace records the agents of the price policy: give --policy price (the policy is '" +
                                  ex.run.policy + "')");
    const auto it = ex.run.policy_options.find("price");
    const auto trace = run_price_trace(platform.model, ex, it == ex.run.policy_options.end() ? core::PolicyOptions{} : it->second,
                                       options.trace_iterations, options.trace_cascade);
    {
      const auto parent = std::filesystem::path(options.trace).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent);
      std::ofstream f(options.trace);
      write_price_csv(f, trace);
      if (!f) throw std::runtime_error("cannot write " + options.trace);
    }
    const auto why = plot_price_trace(options.trace, trace);
    auto at = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : std::string("never"); };
    const auto& last = trace.rows.back();
    out << "price trace: " << trace.rows.size() << " iterations -> " << options.trace
        << (why.empty() ? " (+ .png)" : " (no plot: " + why + ")") << "\n"
        << "  optimum (ipopt, " << trace.optimum.objective.name() << ") " << trace.optimum.value << "; last iteration: utility "
        << last.utility << ", efficiency " << last.efficiency << ", overload " << last.overload << "\n"
        << "  efficiency stays >= 95% from iteration " << at(trace.settled_at(0.95)) << ", >= 99% from "
        << at(trace.settled_at(0.99)) << ", >= 99.5% from " << at(trace.settled_at(0.995)) << "\n";
    if (options.trace_only) return 0;
  }

  sim::SimulationOptions so;
  so.time_limit = options.time_limit;
  so.wall_limit = options.wall_limit;
  so.plan_from_estimates = options.plan_from_estimates;
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

}  // namespace treefarm::simulate
