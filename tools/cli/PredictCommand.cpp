// treefarm predict (docs/commands.md).
#include <iostream>
#include <memory>

#include "runtime/cli/CliSupport.hpp"
#include "tools/Predict.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct PredictCli {
  std::string experiment;
  tools::PredictOptions po;
};
}  // namespace

void add_predict_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<PredictCli>();
  auto* pred = app.add_subcommand("predict", "Solve the steady-state LP: the optimal throughput of the platform");
  pred->add_option("experiment", o->experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  pred->add_option("--calibration", o->po.calibration, "Calibration file (default: the model values speed/bandwidth)")->check(CLI::ExistingFile);
  pred->add_flag("--json", o->po.json, "JSON output");
  pred->add_flag("--schedule", o->po.schedule, "Also print the periodic schedule (section 3.2)");
  pred->add_option("--objective", o->po.objective,
                   "maxmin (steady-state LP) | proportional (max sum w*log rate) | alpha:A "
                   "(max sum w*rate^(1-A)/(1-A)), bertin2008 section 2.4, solved with Ipopt")
      ->capture_default_str();
  cli_support::add_one_port_window_option(*pred, o->po.one_port_window);
  out.push_back({pred, [o] { return tools::predict_command(o->experiment, o->po, std::cout); }});
}

}  // namespace treefarm::cli
