// treefarm simulate (docs/commands.md).
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "tools/cli/Command.hpp"
#include "tools/simulate/Simulate.hpp"

namespace treefarm::cli {

namespace {
struct SimulateCli {
  std::string experiment;
  simulate::SimulateOptions so;
};
}  // namespace

void add_simulate_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<SimulateCli>();
  auto* simc = app.add_subcommand("simulate", "Simulate the experiment with SimGrid, running the same scheduler core");
  simc->add_option("experiment", o->experiment, "Experiment file (speed/bandwidth/latency per node)")->required()->check(CLI::ExistingFile);
  simc->add_option("--policy", o->so.policy, "Scheduling policy (overrides [run] policy)")->check(treefarm::cli_support::policy_check());
  simc->add_option("--migration", o->so.migration, "Task migration, off, pull or push (overrides [run] migration; docs/migration.md)")->check(CLI::IsMember({"off", "pull", "push"}));
  simc->add_option("--balance", o->so.balance, "Queue balancing over the migration, off, tll or mll (overrides [run] balance; needs --migration pull or push; docs/migration.md)")->check(CLI::IsMember({"off", "tll", "mll"}));
  simc->add_option("--buffer", o->so.buffer, "Buffer bound B in tasks (overrides [run] buffer)");
  simc->add_option("--out", o->so.out_dir, "Write DIR/results.json");
  simc->add_option("--calibration", o->so.calibration,
                   "Simulate the calibrated platform (treefarm calibrate, run --calibrate, emulate ... calibrate) "
                   "with the master's own model: nodes of one host share its CPUs; its LP is what "
                   "`treefarm predict --calibration FILE` prints")
      ->check(CLI::ExistingFile);
  simc->add_flag("--quiet", o->so.quiet, "No table");
  simc->add_flag("--plan-from-estimates", o->so.plan_from_estimates,
                 "Policy lp: start without the LP's plan (FCFS) and plan from the nodes' online estimates once they "
                 "are tight, as a run without a calibration does (docs/live-model.md)");
  simc->add_option("--trace", o->so.trace,
                   "Policy price: write the convergence trace of its agents (CSV: iteration, utility, rates, prices; "
                   "beside the Ipopt optimum) and a PNG plot next to it");
  simc->add_option("--iterations", o->so.trace_iterations, "Iterations of the --trace")->capture_default_str();
  simc->add_flag("--trace-only", o->so.trace_only, "Write the --trace and stop (no SimGrid run)");
  simc->add_flag("--trace-cascade", o->so.trace_cascade,
                 "In the --trace, deliver in the same iteration what a message makes a node send (prices reach the "
                 "leaves in one iteration, as in the paper's synchronous prototype); default: one hop per iteration");
  out.push_back({simc, [o] {
                   // Before the simulation (it can take minutes), as run does.
                   if (!o->so.out_dir.empty()) cli_support::prepare_out_folder("--out", o->so.out_dir);
                   try {
                     return simulate::simulate_command(o->experiment, o->so, std::cout);
                   } catch (const std::invalid_argument& e) {  // --migration/--balance: exit 2, as any bad option
                     const std::string_view what = e.what();
                     if (what.starts_with("--migration") || what.starts_with("--balance")) throw cli_support::UsageError(e.what());
                     throw;
                   }
                 }});
}

}  // namespace treefarm::cli
