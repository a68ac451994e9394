// treefarm submit (docs/serve.md, docs/commands.md).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "runtime/metrics/Results.hpp"
#include "tools/ServeClient.hpp"
#include "tools/cli/BagOptions.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct SubmitCli {
  tools::ServeEndpoint to;
  tools::Submission s;
  bool json = false;
  std::vector<std::string> args;  ///< the experiment file, or the program and its arguments after "--"
  tools::BagSpec bag;
};

/// The figures a user wants from results.json: tasks, throughput beside prediction.
void print_summary(const nlohmann::json& results) {
  std::printf("%-14s %8s %10s %14s %14s\n", "application", "tasks", "completed", "tasks/s", "predicted");
  for (const auto& a : results.value("apps", nlohmann::json::array())) {
    const auto predicted = a.contains("predicted") && a["predicted"].is_number() ? a["predicted"].get<double>() : -1.0;
    std::printf("%-14s %8llu %10llu %14.3f ", a.value("name", "?").c_str(),
                static_cast<unsigned long long>(a.value("tasks", 0ull)),
                static_cast<unsigned long long>(a.value("completed", 0ull)), a.value("throughput", 0.0));
    if (predicted >= 0) std::printf("%14.3f\n", predicted);
    else std::printf("%14s\n", "-");
  }
  std::printf("fair throughput %.3f tasks/s\n", results.value("fair_throughput", 0.0));
}

int run_submit(SubmitCli o) {
  split_positionals(o.args, o.bag, o.s.experiment);
  tools::Submission s = o.s;
  if (o.s.experiment.empty()) {  // no file: the experiment built from the command line
    try {
      s.experiment_text = tools::bag_experiment_text(o.bag, 0);
    } catch (const std::invalid_argument& e) {
      throw cli_support::UsageError(e.what());
    }
    // Named as if in the working folder, where its relative paths (--inputs, --each-line) are.
    s.experiment = (std::filesystem::current_path() / "experiment.toml").string();
    if (!s.out_dir.empty())
      std::fprintf(stderr, "submit: the experiment built: %s\n", write_bag_experiment(s.out_dir, s.experiment_text).c_str());
  }
  tools::ServeClient client(o.to);
  s.on_message = [&](const nlohmann::json& m) {
    if (o.json) {
      auto shown = m;
      if (shown.contains("results")) shown.erase("results");  // written to --out; too long for a line
      std::cout << shown.dump() << std::endl;
      return;
    }
    const auto type = m.value("type", "");
    if (type == "queued")
      std::fprintf(stderr, "submit: experiment %llu queued (position %llu)\n",
                   static_cast<unsigned long long>(m.value("id", 0ull)), static_cast<unsigned long long>(m.value("position", 0ull)));
    else if (type == "started")
      std::fprintf(stderr, "submit: experiment %llu started\n", static_cast<unsigned long long>(m.value("id", 0ull)));
    else if (type == "cancelling")
      std::fprintf(stderr, "submit: interrupted: cancelling experiment %llu and waiting for its end\n",
                   static_cast<unsigned long long>(m.value("id", 0ull)));
  };
  const auto done = client.submit(s, &interrupted());
  const int rc = done.value("exit_code", 1);
  if (done.value("cancelled", false))
    std::fprintf(stderr, "submit: experiment %llu was cancelled\n", static_cast<unsigned long long>(done.value("id", 0ull)));
  if (done.contains("error")) std::fprintf(stderr, "submit: the served master says: %s\n", done["error"].get<std::string>().c_str());
  if (!o.json && done.contains("results") && done["results"].is_string()) {
    print_summary(nlohmann::json::parse(done["results"].get<std::string>()));
    if (!s.out_dir.empty()) std::printf("results: %s/results.json\n", s.out_dir.c_str());
  }
  if (!o.json) std::fprintf(stderr, "submit: experiment %llu ended with exit code %d (files on the master: %s)\n",
                            static_cast<unsigned long long>(done.value("id", 0ull)), rc, done.value("directory", "?").c_str());
  return rc;
}
}  // namespace

/// --to, --curve-secret, --server-key, --insecure (submit, status, compare --to).
void add_serve_endpoint_options(CLI::App& cmd, tools::ServeEndpoint& to, bool required) {
  auto* opt = cmd.add_option("--to", to.endpoint,
                             required ? "The served master's channel, tcp://HOST:PORT or HOST:PORT (treefarm-master --serve --bind ENDPOINT)"
                                      : "Run on a served tree (treefarm-master --serve --bind ENDPOINT; tcp://HOST:PORT or HOST:PORT), restarting nothing");
  if (required) opt->required();
  // HOST:PORT gets tcp://; anything else but tcp://HOST:PORT or ipc://PATH is a usage error (2).
  opt->transform(CLI::Validator(
      [](std::string& endpoint) {
        try {
          endpoint = tools::normalized_endpoint(endpoint);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      },
      "ENDPOINT"));
  cmd.add_option("--curve-secret", to.curve_secret, "This client's CURVE secret key file (its public key in the master's authorized_keys)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--server-key", to.server_key, "The master's CURVE public key file (NAME.key)")->check(CLI::ExistingFile);
  cmd.add_flag("--insecure", to.insecure, "Allow an unencrypted channel to a non-loopback address");
}

void add_submit_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<SubmitCli>();
  auto* cmd = app.add_subcommand("submit",
                                 "Run an experiment on a served tree (treefarm-master --serve) and get its results.json back;\n"
                                 "queued if another one is running. An experiment without [[node]] tables runs on the tree as it is.\n"
                                 "Ctrl-C cancels this submission's experiment (queued: removed; running: ended, the tree stays)\n"
                                 "and still waits for its end and its results.json (\"cancelled\": true). Output files of\n"
                                 "command applications come back into DIR/outputs/APP/ with --out.\n"
                                 "Without a file, one command application: a task per line, file or number, e.g.\n"
                                 "  treefarm submit --to tcp://127.0.0.1:5600 --inputs 'logs/*.log' --output-file '{name}.gz' --out out/gz -- gzip -9 -n -c {input}\n"
                                 "Example: treefarm submit examples/served.toml --to tcp://127.0.0.1:5600 --out out/served");
  cmd->add_option("args", o->args,
                  "Experiment file (TOML); or, with --each-line, --inputs or --array, the program and its arguments after '--'");
  add_bag_options(*cmd, o->bag);
  add_serve_endpoint_options(*cmd, o->to, true);
  cmd->add_option("--out", o->s.out_dir, "Write DIR/results.json and the output files of command applications (DIR/outputs/APP/)");
  cmd->add_option("--policy", o->s.policy, "Scheduling policy (overrides [run] policy)")->check(cli_support::policy_check());
  auto* cal = cmd->add_option("--calibration", o->s.calibration, "Calibration file sent along: the LP prediction beside the measured")
      ->check(CLI::ExistingFile);
  cmd->add_flag_callback("--calibrate", [o] { o->s.calibrate = tools::Submission::Calibrate::first; },
                         "Calibrate the served tree in place first, then run with that calibration (the LP prediction\n"
                         "beside the measured; written to DIR/calibration.json with --out)")
      ->excludes(cal);
  cmd->add_option("--timeout", o->s.timeout, "seconds to wait for the end (0 = no limit); the run itself goes on")
      ->check(treefarm::cli_support::non_negative_number())->capture_default_str();
  cmd->add_flag("--json", o->json, "The server's messages as JSON lines on stdout (results.json only in --out)");
  out.push_back({cmd, [o] { return run_submit(*o); }});
}

}  // namespace treefarm::cli
