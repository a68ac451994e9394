// treefarm sweep (docs/commands.md).
#include <iostream>
#include <memory>
#include <optional>

#include "runtime/model/Experiment.hpp"
#include "tools/Sweep.hpp"
#include "tools/TreeLauncher.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "tools/cli/Command.hpp"
#include "tools/emulate/Emulate.hpp"

namespace treefarm::cli {

namespace {
struct SweepCli {
  std::string experiment;
  std::vector<std::uint32_t> sizes;
  std::uint64_t tasks = 0;
  std::optional<double> min_seconds;
  bool emulate = false;
  tools::SweepOptions so;
};

int run_sweep(SweepCli o) {
  o.so.sizes = o.sizes;
  if (o.tasks > 0) o.so.tasks = o.tasks;
  // Short runs mis-measure (a 2.5 s run of the quickstart's matadd at n = 128: 1.128 of the
  // prediction, the same at 10 s: 1.041; an emulated LAN at 10 s: 0.716, at 38 s: 0.956).
  o.so.min_seconds = o.min_seconds.value_or(o.emulate ? 30.0 : 10.0);
  if (o.emulate) {
    // Each calibration and each run on a freshly built emulated LAN (treefarm emulate run:
    // namespaces, tbf-shaped links, CPU quotas); every node is a host of its own with its
    // quota (calibrate_emulated_hosts; docs/emulation.md).
    if (const auto why = emulate::emulation_unavailable(); !why.empty())
      throw emulate::EmulateError("treefarm sweep --emulate: " + why);
    o.so.host_record = false;
    o.so.runner_records_hosts = true;
    return tools::sweep(
        o.experiment, o.so,
        [](const model::Experiment& ex, const tools::LaunchOptions& l) {
          emulate::EmulateOptions eo;
          eo.launch = l;
          // The calibration (the sweep passes --calibrate-out FILE to the master): `emulate
          // calibrate`, which also records every node as a host of its own and measures its
          // whole task on its own link and quota while the platform stands.
          auto& args = eo.launch.master_args;
          for (std::size_t i = 0; i + 1 < args.size(); ++i)
            if (args[i] == "--calibrate-out") {
              eo.calibration_out = args[i + 1];
              args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
              return emulate::emulate_command(ex.path, "calibrate", eo, interrupted());
            }
          return emulate::emulate_command(ex.path, "run", eo, interrupted());
        },
        std::cout);
  }
  return tools::sweep(
      o.experiment, o.so,
      [](const model::Experiment& ex, const tools::LaunchOptions& l) { return tools::launch_tree(ex, l, interrupted()); },
      std::cout);
}
}  // namespace

void add_sweep_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<SweepCli>();
  auto* sw = app.add_subcommand(
      "sweep", "Run the real tree once per matrix order of one application, calibrating each: measured and "
               "predicted fair throughput against CCR (sweep.json, sweep.png)");
  sw->add_option("experiment", o->experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  sw->add_option("--app", o->so.app, "Application whose matrix order n varies (matmul or matadd)")->required();
  sw->add_option("--n", o->sizes, "Matrix orders, comma-separated (e.g. 64,128,256,512)")
      ->required()->delimiter(',')->check(treefarm::cli_support::positive_number());
  sw->add_option("--tasks", o->tasks, "Tasks of every application in each run (default: the file's)");
  sw->add_option("--min-seconds", o->min_seconds,
                 "seconds: scale each run's tasks up, by the prediction from its calibration, so that it lasts about "
                 "this long (default 10, 30 with --emulate; 0 = the tasks as given)")
      ->check(treefarm::cli_support::non_negative_number());
  sw->add_option("--out", o->so.out_dir, "Write DIR/sweep.json, DIR/sweep.png, DIR/n-N/ (default out/sweep-NAME)");
  sw->add_option("--policy", o->so.launch.policy, "Scheduling policy (overrides [run] policy)")->check(treefarm::cli_support::policy_check());
  sw->add_option("--timeout", o->so.launch.timeout, "seconds per run (0 = none)")->check(cli_support::non_negative_seconds());
  cli_support::exits_on_timeout(*sw);  // --timeout expired: exit 124
  sw->add_flag("--emulate", o->emulate,
               "Run every calibration and run on the experiment's emulated LAN (treefarm emulate run; root)");
  sw->add_flag("--quiet", o->so.launch.quiet, "No progress lines");
  out.push_back({sw, [o] { return run_sweep(*o); }});
}

}  // namespace treefarm::cli
