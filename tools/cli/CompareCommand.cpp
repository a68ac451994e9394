// treefarm compare (docs/commands.md).
#include <iostream>
#include <memory>

#include "runtime/model/Experiment.hpp"
#include "tools/Compare.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct CompareCli {
  std::string experiment, policies = "all";
  tools::CompareOptions co;
};

int run_compare(CompareCli o) {
  const auto ex = model::load_experiment(o.experiment);
  if (o.policies != "all") o.co.policies = CLI::detail::split(o.policies, ',');
  return tools::compare_policies(
      ex, o.co, [&](const tools::LaunchOptions& l) { return tools::launch_tree(ex, l, interrupted()); }, std::cout);
}
}  // namespace

void add_compare_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<CompareCli>();
  auto* cmp = app.add_subcommand("compare", "Run the experiment once per policy and set each beside the LP optimum");
  cmp->add_option("experiment", o->experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  cmp->add_option("--policies", o->policies, "all, or a comma-separated list (fcfs,cgbc,pbc,lp,data-centric,price)")->capture_default_str();
  cmp->add_option("--calibration", o->co.calibration, "Calibration file (default: calibrate in place first)")->check(CLI::ExistingFile);
  cmp->add_flag("--no-calibrate", o->co.no_calibrate, "No calibration: no LP prediction, policy lp skipped");
  cmp->add_option("--out", o->co.out_dir, "Write DIR/compare.json, DIR/compare.png and DIR/POLICY/ (default out/compare-NAME)");
  cmp->add_option("--repeat", o->co.repeat,
                  "Runs per policy; above 1 the table, compare.json and compare.png give the mean and spread (DIR/POLICY/run-R/)")
      ->check(CLI::Range(1u, 1000u))->capture_default_str();
  cmp->add_option("--timeout", o->co.launch.timeout, "seconds per run (0 = none)");
  cmp->add_flag("--quiet", o->co.launch.quiet, "No progress lines");
  out.push_back({cmp, [o] { return run_compare(*o); }});
}

}  // namespace treefarm::cli
