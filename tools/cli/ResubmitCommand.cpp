// treefarm resubmit (docs/commands/resubmit.md): the failed tasks of a finished run again.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/cli/CliSupport.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct ResubmitOptions {
  std::string out_dir;
  bool failed = false;
  bool quiet = false;
  double timeout = 0;
};

int run_resubmit(const ResubmitOptions& o) {
  if (!o.failed) throw cli_support::UsageError("say what to run again: --failed (the tasks that failed)");
  const auto results_path = std::filesystem::path(o.out_dir) / "results.json";
  std::ifstream in(results_path);
  if (!in) throw cli_support::BadInput("cannot read " + results_path.string() + ": resubmit takes the OUT of a finished run");
  const auto results = nlohmann::json::parse(in, nullptr, false);
  if (results.is_discarded() || !results.is_object()) throw cli_support::BadInput(results_path.string() + ": not a results.json");
  // A submission to a served tree leaves results.json (and outputs) in its --out, and its
  // journal on the master, in the job's folder: nothing here to resume from, and the tree
  // that ran it is not this machine's to start. Refused with what to do instead.
  if (!std::filesystem::exists(std::filesystem::path(o.out_dir) / "journal.tsv"))
    throw cli_support::BadInput(
        "no " + (std::filesystem::path(o.out_dir) / "journal.tsv").string() +
        ": resubmit runs again what a `treefarm run` into OUT did not complete, as the journal it leaves there says. "
        "The results of a `treefarm submit` to a served tree have no journal in OUT (the served master keeps it in "
        "its job folder), so they cannot be resubmitted: submit the experiment again with `treefarm submit`");
  std::string experiment = results.value(nlohmann::json::json_pointer("/settings/experiment_file"), std::string());
  if (experiment.empty() || !std::filesystem::exists(experiment))
    throw cli_support::BadInput(results_path.string() + " names no experiment file that exists here (settings.experiment_file '" +
                                experiment + "')");
  const auto failures = results.value("failures", nlohmann::json::array());
  std::cerr << "treefarm resubmit: " << failures.size() << " failed tasks of " << experiment << " again into " << o.out_dir
            << "\n";
  return rerun_missing(experiment, o.out_dir, o.quiet, o.timeout);
}
}  // namespace

void add_resubmit_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<ResubmitOptions>();
  auto* cmd = app.add_subcommand(
      "resubmit",
      "Run the tasks that failed in a finished run again, into the same output folder (results.json, outputs/):\n"
      "the tasks its journal (OUT/journal.tsv) has not recorded as done, with the experiment file the run used\n"
      "(as it is now: a program fixed since runs fixed).\n"
      "Example: treefarm resubmit out/bag --failed");
  cmd->add_option("out", o->out_dir, "The run's output folder (its --out)")->required()->check(CLI::ExistingDirectory);
  cmd->add_flag("--failed", o->failed, "Run the failed tasks again (required: what to run again)");
  cmd->add_flag("--quiet", o->quiet, "No progress display (the table and results.json remain)");
  cmd->add_option("--timeout", o->timeout, "Give up after this many seconds (0 = never; exit code 124)")
      ->capture_default_str()->check(cli_support::non_negative_seconds());
  out.push_back({cmd, [o] { return run_resubmit(*o); }});
}

}  // namespace treefarm::cli
