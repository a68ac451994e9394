// treefarm calibrate (docs/commands.md).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <stdlib.h>

#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/process/ScratchDir.hpp"
#include "tools/HostCalibration.hpp"
#include "tools/ServeClient.hpp"
#include "tools/TreeLauncher.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
/// What a calibration file holds, one line per node, on stdout.
void print_calibration(const model::Calibration& cal, const std::string& path) {
  std::printf("calibration written to %s\n", path.c_str());
  for (const auto& [name, nc] : cal.nodes) {
    std::printf("  %-12s %-12s %3u cores", name.c_str(), nc.parent.empty() ? "(master)" : ("< " + nc.parent).c_str(), nc.cores);
    for (const auto& [app, seconds] : nc.task_seconds) {
      std::printf("  %s %.6f s/task", app.c_str(), seconds);
      if (const auto o = nc.output_bytes.find(app); o != nc.output_bytes.end())
        std::printf(" (%.0f bytes of output)", o->second);
    }
    if (nc.link_bandwidth) std::printf("  link %.3g bytes/s", *nc.link_bandwidth);
    if (nc.link_round_trip) std::printf("  rtt %.3g s", *nc.link_round_trip);
    std::printf("\n");
  }
}

struct CalibrateOptions {
  std::string experiment, out = "calibration.json";
  std::uint32_t reps = 5;
  tools::ServeEndpoint to;  ///< a served tree (docs/serve.md): calibrated where it runs
};

/// `calibrate --to`: one submission that only calibrates the served tree (its nodes as they
/// are if the experiment has no [[node]] tables); the file comes back into --out.
int calibrate_served(const CalibrateOptions& o) {
  tools::ServeClient client(o.to);
  tools::Submission s;
  s.experiment = o.experiment;
  s.calibrate = tools::Submission::Calibrate::only;
  s.calibration_out = o.out;
  s.on_message = [](const nlohmann::json& m) {
    if (m.value("type", "") == "queued")
      std::fprintf(stderr, "calibrate: queued on the served tree as experiment %llu\n",
                   static_cast<unsigned long long>(m.value("id", 0ull)));
    else if (m.value("type", "") == "started")
      std::fprintf(stderr, "calibrate: measuring the served tree\n");
  };
  const auto done = client.submit(s, &interrupted());
  const int rc = done.value("exit_code", 1);
  if (done.contains("error") && done["error"].is_string())
    std::fprintf(stderr, "calibrate: the served master says: %s\n", done["error"].get<std::string>().c_str());
  if (rc != 0 || !done.contains("calibration")) return rc != 0 ? rc : 1;
  print_calibration(model::load_calibration(o.out), o.out);
  return 0;
}

int run_calibrate(const CalibrateOptions& o) {
  if (!o.to.endpoint.empty()) return calibrate_served(o);
  const auto ex = model::load_experiment(o.experiment);
  // --out is checked before anything starts; the file is measured in a scratch directory
  // and moved over --out only once whole, so that an interrupted or failed calibration
  // leaves the previous file (or none) in place.
  const auto out = std::filesystem::absolute(o.out);
  cli_support::check_out_file("--out", out, true);
  const process::ScratchDir scratch("calibrate");
  const std::string file = (scratch / "calibration.json").string();
  tools::LaunchOptions clo;
  clo.master_args = {"--calibrate-out", file, "--calibrate-reps", std::to_string(o.reps), "--no-table"};
  std::fprintf(stderr, "calibration: every node measures its task durations and its link in place\n");
  const int rc = tools::launch_tree(ex, clo, interrupted());
  if (rc != 0) return rc;
  tools::calibrate_local_host(ex, file, false, std::cerr);  // every node ran on this machine
  const auto cal = model::load_calibration(file);
  model::save_calibration(cal, out.string());
  print_calibration(cal, o.out);
  return 0;
}
}  // namespace

void add_calibrate_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cal = app.add_subcommand("calibrate", "Measure every node's task durations and links in place (the tree as `run` starts it)");
  cal->add_option("experiment", o->experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  cal->add_option("--out", o->out, "Calibration file to write")->capture_default_str();
  cal->add_option("--reps", o->reps, "Kernel runs per application and node (with --to: the served master's setting)")->capture_default_str();
  // --to: the served tree's own nodes measure in place (docs/serve.md); --reps is the master's.
  add_serve_endpoint_options(*cal, o->to, false);
  out.push_back({cal, [o] { return run_calibrate(*o); }});
}

}  // namespace treefarm::cli
