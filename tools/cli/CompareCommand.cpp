// treefarm compare (docs/commands.md).
#include <algorithm>
#include <iostream>
#include <memory>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/ExperimentFile.hpp"
#include "tools/Compare.hpp"
#include "tools/ServeClient.hpp"
#include "tools/TreeLauncher.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct CompareCli {
  std::string experiment, policies = "all";
  tools::CompareOptions co;
  tools::ServeEndpoint to;  ///< a served tree (docs/serve.md): every policy runs on it
};

int run_compare(CompareCli o) {
  // On a served tree an experiment without [[node]] tables runs on the tree as it is.
  auto ex = o.to.endpoint.empty() ? model::load_experiment(o.experiment)
                                  : model::load_experiment_nodes_optional(o.experiment);
  if (o.policies != "all") o.co.policies = CLI::detail::split(o.policies, ',');
  if (!o.to.endpoint.empty()) {
    // A served tree: each policy is one submission; no process starts or stops. Without
    // --calibration the tree is calibrated in place first, by one submission that only
    // calibrates (docs/serve.md); every policy's submission then carries that calibration.
    o.co.served = true;
    tools::ServeClient client(o.to);
    return tools::compare_policies(
        ex, o.co,
        [&](const tools::LaunchOptions& l) {
          tools::Submission s;
          s.experiment = o.experiment;
          s.policy = l.policy;
          s.calibration = l.calibration;
          s.out_dir = l.out_dir;
          s.timeout = l.timeout;
          const auto a = std::find(l.master_args.begin(), l.master_args.end(), "--calibrate-out");
          const bool calibrating = a != l.master_args.end() && a + 1 != l.master_args.end();
          if (calibrating) {
            s.calibrate = tools::Submission::Calibrate::only;
            s.calibration_out = *(a + 1);
            s.policy.clear();
          }
          const std::string what = calibrating ? "the calibration" : "policy " + l.policy;
          if (!l.quiet)
            s.on_message = [&](const nlohmann::json& m) {
              if (m.value("type", "") == "started") std::cout << "compare: " << what << " started on the served tree\n";
            };
          const auto done = client.submit(s, &interrupted());
          // The submission's own error, not only its exit code (a failed run has no results).
          if (done.contains("error") && done["error"].is_string())
            std::cout << "compare: " << what << ": the served master says: " << done["error"].get<std::string>() << "\n";
          return done.value("exit_code", 1);
        },
        std::cout);
  }
  return tools::compare_policies(
      ex, o.co, [&](const tools::LaunchOptions& l) { return tools::launch_tree(ex, l, interrupted()); }, std::cout);
}
}  // namespace

void add_compare_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<CompareCli>();
  auto* cmp = app.add_subcommand("compare", "Run the experiment once per policy and set each beside the LP optimum");
  cmp->add_option("experiment", o->experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  cmp->add_option("--policies", o->policies, "all, or a comma-separated list (fcfs,cgbc,pbc,lp,data-centric,price)")->capture_default_str()->check(cli_support::policies_check());
  cmp->add_option("--calibration", o->co.calibration,
                  "Calibration file (default: calibrate in place first; with --to, on the served tree)")->check(CLI::ExistingFile);
  cmp->add_flag("--no-calibrate", o->co.no_calibrate, "No calibration: no LP prediction, policy lp skipped");
  cmp->add_option("--out", o->co.out_dir, "Write DIR/compare.json, DIR/compare.png and DIR/POLICY/ (default out/compare-NAME)");
  cmp->add_option("--repeat", o->co.repeat,
                  "Runs per policy; above 1 the table, compare.json and compare.png give the mean and spread (DIR/POLICY/run-R/)")
      ->check(CLI::Range(1u, 1000u))->capture_default_str();
  cmp->add_option("--timeout", o->co.launch.timeout, "seconds per run (0 = none)")->check(cli_support::non_negative_seconds());
  cli_support::exits_on_timeout(*cmp);  // --timeout expired: exit 124
  cmp->add_flag("--quiet", o->co.launch.quiet, "No progress lines");
  // --to, --curve-secret, --server-key, --insecure: written once for submit, status, cancel and compare.
  add_serve_endpoint_options(*cmp, o->to, false);
  out.push_back({cmp, [o] { return run_compare(*o); }});
}

}  // namespace treefarm::cli
