// treefarm run (docs/commands.md).
#include <filesystem>
#include <iostream>
#include <memory>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/model/Experiment.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct RunOptions {
  std::string experiment;
  tools::LaunchOptions lo;
  std::string calibration;
  bool calibrate = false;
  double hb_interval = 0, hb_timeout = 0;
};

int run_run(RunOptions o) {
  const auto ex = model::load_experiment(o.experiment);
  auto& lo = o.lo;
  if (o.calibrate) {
    if (lo.out_dir.empty()) lo.out_dir = "out/" + std::filesystem::path(o.experiment).stem().string();
    const std::string file = lo.out_dir + "/calibration.json";
    auto clo = lo;
    clo.master_args = {"--calibrate-out", file};
    std::cerr << "treefarm run: calibrating first (" << file << ")\n";
    const int rc = tools::launch_tree(ex, clo, interrupted());
    if (rc != 0) return rc;
    o.calibration = file;
  }
  lo.calibration = o.calibration;
  for (auto* args : {&lo.master_args, &lo.worker_args}) {
    if (o.hb_interval > 0) args->insert(args->end(), {"--heartbeat-interval", std::to_string(o.hb_interval)});
    if (o.hb_timeout > 0) args->insert(args->end(), {"--heartbeat-timeout", std::to_string(o.hb_timeout)});
  }
  return tools::launch_tree(ex, lo, interrupted());
}
}  // namespace

void add_run_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<RunOptions>();
  auto* run = app.add_subcommand("run", "Run an experiment: master and workers as local processes on loopback");
  run->add_option("experiment", o->experiment, "Experiment file (TOML, docs/experiment-file.md)")->required()->check(CLI::ExistingFile);
  run->add_option("--out", o->lo.out_dir, "Write DIR/results.json and DIR/logs/ (default: a temporary directory)");
  run->add_option("--policy", o->lo.policy, "Scheduling policy (overrides [run] policy)");
  run->add_option("--buffer", o->lo.buffer, "Buffer bound B in tasks, >= 1 (overrides [run] buffer)")->check(CLI::Range(1u, 1000000u));
  run->add_option("--timeout", o->lo.timeout, "Give up after this many seconds (0 = never; exit code 124)")->capture_default_str()->check(cli_support::non_negative_seconds());
  run->add_option("--calibration", o->calibration, "Calibration file: print the LP prediction beside the measurements")->check(CLI::ExistingFile);
  run->add_flag("--calibrate", o->calibrate, "Calibrate in place first (OUT/calibration.json), then run and compare with the LP");
  run->add_flag("--quiet", o->lo.quiet, "No progress display (the table and results.json remain)");
  run->add_flag("--json-progress", o->lo.json_progress,
                "stdout: one JSON object per second ({\"type\":\"progress\",...}), then the results as a last JSON line "
                "({\"type\":\"results\",...}) instead of the table");
  run->add_option("--heartbeat-interval", o->hb_interval, "seconds between heartbeats (default 1)")->check(cli_support::positive_seconds());
  run->add_option("--heartbeat-timeout", o->hb_timeout, "seconds of silence after which a node is declared dead (default 6)")->check(cli_support::positive_seconds());
  run->add_flag("--encrypt", o->lo.encrypt, "CURVE-encrypt and authenticate every link, loopback included (keys made for the run)");
  cli_support::add_log_level_option(*run, o->lo.log_level);
  out.push_back({run, [o] { return run_run(*o); }});
}

}  // namespace treefarm::cli
