// treefarm sweep (docs/commands.md).
#include <iostream>
#include <memory>

#include "runtime/model/Experiment.hpp"
#include "tools/Sweep.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/cli/Command.hpp"
#include "tools/emulate/Emulate.hpp"

namespace treefarm::cli {

namespace {
struct SweepCli {
  std::string experiment;
  std::vector<std::uint32_t> sizes;
  std::uint64_t tasks = 0;
  bool emulate = false;
  tools::SweepOptions so;
};

int run_sweep(SweepCli o) {
  o.so.sizes = o.sizes;
  if (o.tasks > 0) o.so.tasks = o.tasks;
  if (o.emulate) {
    // Each calibration and each run on a freshly built emulated LAN (treefarm emulate run:
    // namespaces, tbf-shaped links, CPU quotas); every node is a host of its own with its
    // quota (calibrate_emulated_hosts; docs/emulation.md).
    if (const auto why = emulate::emulation_unavailable(); !why.empty())
      throw emulate::EmulateError("treefarm sweep --emulate: " + why);
    o.so.host_record = false;
    return tools::sweep(
        o.experiment, o.so,
        [](const model::Experiment& ex, const tools::LaunchOptions& l) {
          emulate::EmulateOptions eo;
          eo.launch = l;
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
      ->required()->delimiter(',')->check(CLI::PositiveNumber);
  sw->add_option("--tasks", o->tasks, "Tasks of every application in each run (default: the file's)");
  sw->add_option("--out", o->so.out_dir, "Write DIR/sweep.json, DIR/sweep.png, DIR/n-N/ (default out/sweep-NAME)");
  sw->add_option("--policy", o->so.launch.policy, "Scheduling policy (overrides [run] policy)");
  sw->add_option("--timeout", o->so.launch.timeout, "seconds per run (0 = none)");
  sw->add_flag("--emulate", o->emulate,
               "Run every calibration and run on the experiment's emulated LAN (treefarm emulate run; root)");
  sw->add_flag("--quiet", o->so.launch.quiet, "No progress lines");
  out.push_back({sw, [o] { return run_sweep(*o); }});
}

}  // namespace treefarm::cli
