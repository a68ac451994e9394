// treefarm calibrate (docs/commands.md).
#include <filesystem>
#include <iostream>
#include <memory>

#include "runtime/model/Experiment.hpp"
#include "tools/HostCalibration.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct CalibrateOptions {
  std::string experiment, out = "calibration.json";
  std::uint32_t reps = 5;
};

int run_calibrate(const CalibrateOptions& o) {
  const auto ex = model::load_experiment(o.experiment);
  tools::LaunchOptions clo;
  const std::string file = std::filesystem::absolute(o.out).string();
  clo.master_args = {"--calibrate-out", file, "--calibrate-reps", std::to_string(o.reps)};
  const int rc = tools::launch_tree(ex, clo, interrupted());
  if (rc != 0) return rc;
  tools::calibrate_local_host(ex, file, false, std::cout);  // every node ran on this machine
  return 0;
}
}  // namespace

void add_calibrate_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cal = app.add_subcommand("calibrate", "Measure every node's task durations and links in place (the tree as `run` starts it)");
  cal->add_option("experiment", o->experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  cal->add_option("--out", o->out, "Calibration file to write")->capture_default_str();
  cal->add_option("--reps", o->reps, "Kernel runs per application and node")->capture_default_str();
  out.push_back({cal, [o] { return run_calibrate(*o); }});
}

}  // namespace treefarm::cli
