// treefarm run (docs/commands.md).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>
#include <stdexcept>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/dashboard/Address.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"
#include "tools/HostCalibration.hpp"
#include "tools/OriginLauncher.hpp"
#include "tools/TreeLauncher.hpp"
#include "runtime/model/Origins.hpp"
#include "tools/cli/BagOptions.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct RunOptions {
  std::string experiment;
  tools::LaunchOptions lo;
  std::string calibration;
  bool calibrate = false;
  bool plan_from_estimates = false;
  bool resume = false;
  std::string spot_check;
  std::string inputs;  ///< secret or pooled, passed to the master
  double hb_interval = 0, hb_timeout = 0;
  std::uint64_t one_port_window = 0;  ///< bytes, passed to the master and every worker
  bool dashboard = false;             ///< --dashboard given (with or without a value)
  std::string dashboard_address;      ///< its [HOST:]PORT ("" = the default)
  std::string dashboard_file;
  bool dashboard_remote = false;
  std::vector<std::string> args;  ///< the experiment file, or the program and its arguments after "--"
  bool local = false;             ///< --local: a tree of this machine's cores
  tools::BagSpec bag;
};

/// run --local: the experiment built from the command line, on one node with this
/// machine's cores, written as OUT/experiment.toml (OUT: --out, else out/NAME).
void build_local_experiment(RunOptions& o) {
  if (!o.inputs.empty() && o.inputs != "secret" && o.inputs != "pooled") {  // --inputs GLOB
    if (!o.bag.each_line.empty() || !o.bag.array.empty())
      throw cli_support::UsageError("give one of --each-line FILE, --inputs GLOB or --array RANGE");
    o.bag.inputs = std::exchange(o.inputs, "");
  }
  split_positionals(o.args, o.bag, o.experiment);
  if (!o.experiment.empty()) {
    if (o.local) throw cli_support::UsageError("--local runs a program given after '--' with --each-line, --inputs or --array, not an experiment file");
    return;
  }
  auto bag = o.bag;
  // The experiment lives in OUT: its files are named from the working folder.
  for (auto* path : {&bag.each_line, &bag.inputs})
    if (!path->empty() && std::filesystem::path(*path).is_relative()) *path = (std::filesystem::current_path() / *path).string();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string text;
  try {
    text = tools::bag_experiment_text(bag, cores);
  } catch (const std::invalid_argument& e) {
    throw cli_support::UsageError(e.what());
  }
  if (o.lo.out_dir.empty()) o.lo.out_dir = "out/" + bag.name;
  o.experiment = write_bag_experiment(o.lo.out_dir, text);
  std::cerr << "treefarm run: the experiment built: " << o.experiment << " (" << cores << " cores of this machine)\n";
}

// The live dashboard (docs/dashboard.md): the master serves it.
void add_dashboard_args(const RunOptions& o, std::vector<std::string>& args) {
  if (!o.dashboard && o.dashboard_file.empty()) return;
  try {
    const auto address = dashboard::parse_address(o.dashboard_address);
    if (!dashboard::is_loopback_host(address.host) && !o.dashboard_remote)
      throw std::invalid_argument("--dashboard " + o.dashboard_address +
                                  ": not a loopback address; the dashboard is plain HTTP and would be readable from the "
                                  "network: add --dashboard-remote to serve it there behind a token, or use 127.0.0.1");
    args.insert(args.end(), {"--dashboard", dashboard::to_string(address)});
  } catch (const std::invalid_argument& e) {
    throw cli_support::UsageError(e.what());
  }
  if (!o.dashboard_file.empty()) args.insert(args.end(), {"--dashboard-file", o.dashboard_file});
  if (o.dashboard_remote) args.push_back("--dashboard-remote");
}

// The run's spot-check and heartbeat settings, for the master and every worker.
void add_run_args(RunOptions& o) {
  auto& lo = o.lo;
  if (!o.spot_check.empty()) lo.master_args.insert(lo.master_args.end(), {"--spot-check", o.spot_check});
  if (!o.inputs.empty()) lo.master_args.insert(lo.master_args.end(), {"--inputs", o.inputs});
  for (auto* args : {&lo.master_args, &lo.worker_args}) {
    if (o.hb_interval > 0) args->insert(args->end(), {"--heartbeat-interval", std::to_string(o.hb_interval)});
    if (o.hb_timeout > 0) args->insert(args->end(), {"--heartbeat-timeout", std::to_string(o.hb_timeout)});
    args->insert(args->end(), {"--one-port-window", std::to_string(o.one_port_window)});
  }
}

/// A file under the system's temporary directory (`prefix`-PID.json), removed with it.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& prefix)
      : path((std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()) + ".json")).string()) {}
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

/// Where the output files of command applications are (docs/command-tasks.md).
void print_outputs(const model::Experiment& ex, const std::string& out_dir, std::ostream& os) {
  for (const auto& app : ex.apps) {
    if (app.output_file.empty() || out_dir.empty()) continue;
    const auto dir = std::filesystem::path(out_dir) / "outputs" / app.name;
    std::error_code ec;
    std::uint64_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() != ".part") ++files;
    os << "treefarm run: outputs of '" << app.name << "': " << files << " files in " << dir.string() << "/\n";
  }
}

int run_run(RunOptions o) {
  build_local_experiment(o);
  const auto ex = model::load_experiment(o.experiment);
  auto& lo = o.lo;
  // Refuse what cannot work before anything starts (journal, out folder, memory).
  if (o.resume && lo.out_dir.empty()) throw cli_support::UsageError("--resume continues the journal in OUT: give --out DIR");
  if (!lo.out_dir.empty()) cli_support::prepare_out_folder("--out", lo.out_dir);
  if (!o.dashboard_file.empty()) {  // before anything starts, as --out
    const auto dir = std::filesystem::absolute(o.dashboard_file).parent_path();
    if (!std::filesystem::is_directory(dir))
      throw std::runtime_error("--dashboard-file " + o.dashboard_file + ": its folder " + dir.string() + " does not exist");
  }
  tools::check_fits_this_machine(ex, lo.buffer);
  const std::string policy = lo.policy.empty() ? ex.run.policy : lo.policy;
  std::vector<std::string> dashboard_args;
  add_dashboard_args(o, dashboard_args);  // a bad address is refused before anything starts
  if (model::has_origins_below_root(ex)) {
    if (!dashboard_args.empty())
      throw cli_support::UsageError("--dashboard: this experiment runs one master per origin; give it to one "
                                    "treefarm-master instead (docs/dashboard.md)");
    // Applications from several masters (bertin2008 §2.2): one tree of processes per origin.
    if (o.calibrate || !o.calibration.empty() || o.resume || core::policy_needs_calibration(policy))
      model::require_root_origins(ex, "treefarm run with --calibrate, --calibration, --resume or policy '" + policy + "'");
    add_run_args(o);
    return tools::launch_origins(ex, lo, interrupted());
  }
  // A policy that follows the LP's plan needs the platform measured: with no calibration
  // given, measure it first and say so; with --plan-from-estimates it calibrates as it goes
  // (docs/live-model.md): the run starts at once with FCFS and switches to the LP's plan
  // once its own estimates are tight. Only this machine's hosts are measured first (~1 s).
  std::optional<TempFile> hosts;
  if (o.plan_from_estimates && (o.calibrate || !o.calibration.empty()))
    throw cli_support::UsageError("--plan-from-estimates: the plan comes from the run's own estimates; leave out "
                                  "--calibrate and --calibration");
  if (o.plan_from_estimates && !core::policy_needs_calibration(policy))
    throw cli_support::UsageError("--plan-from-estimates: policy '" + policy + "' follows no LP plan (give --policy lp)");
  if (!o.plan_from_estimates && !o.calibrate && o.calibration.empty() && core::policy_needs_calibration(policy)) {
    std::cerr << "treefarm run: policy '" << policy << "' follows the LP over a measured platform and no "
              << "--calibration was given: calibrating first (--plan-from-estimates: plan from the run's own estimates)\n";
    o.calibrate = true;
  }
  if (o.plan_from_estimates) {
    std::cerr << "treefarm run: policy '" << policy << "' without --calibration: starting with FCFS; the LP's plan "
              << "follows once the run's own estimates are tight (--calibrate measures the platform first)\n";
    hosts.emplace("treefarm-hosts");
    model::save_calibration(tools::local_host_only(ex, lo.encrypt, std::cerr), hosts->path);
    lo.master_args.insert(lo.master_args.end(), {"--host-calibration", hosts->path});
  }
  if (o.calibrate) {
    if (lo.out_dir.empty()) lo.out_dir = "out/" + std::filesystem::path(o.experiment).stem().string();
    const std::string file = lo.out_dir + "/calibration.json";
    auto clo = lo;
    clo.master_args = {"--calibrate-out", file};
    std::cerr << "treefarm run: calibrating first (" << file << ")\n";
    const int rc = tools::launch_tree(ex, clo, interrupted());
    if (rc != 0) return rc;
    tools::calibrate_local_host(ex, file, lo.encrypt, std::cerr);  // the tree shares this machine
    o.calibration = file;
  }
  // Refuse a calibration of another experiment before starting anything.
  if (!o.calibration.empty()) (void)model::load_calibration_for(o.calibration, ex);
  lo.calibration = o.calibration;
  if (o.resume) lo.master_args.push_back("--resume");
  lo.master_args.insert(lo.master_args.end(), dashboard_args.begin(), dashboard_args.end());
  add_run_args(o);
  const int rc = tools::launch_tree(ex, lo, interrupted());
  print_outputs(ex, lo.out_dir, std::cerr);
  return rc;
}
}  // namespace

int rerun_missing(const std::string& experiment, const std::string& out_dir, bool quiet, double timeout) {
  RunOptions o;
  o.args = {experiment};
  o.lo.out_dir = out_dir;
  o.lo.quiet = quiet;
  o.lo.timeout = timeout;
  o.resume = true;
  return run_run(std::move(o));
}

void add_run_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<RunOptions>();
  auto* run = app.add_subcommand("run", "Run an experiment: master and workers as local processes on loopback");
  run->add_option("args", o->args,
                  "Experiment file (TOML, docs/experiment-file.md); or, with --each-line, --inputs or --array, the "
                  "program and its arguments after '--' (docs/command-tasks.md)");
  run->add_flag("--local", o->local, "Run the program given after '--' on a tree of this machine's cores (the default without a file)");
  add_bag_options(*run, o->bag, false);
  run->add_option("--out", o->lo.out_dir, "Write DIR/results.json, DIR/logs/ and command output files in DIR/outputs/APP/ (default: a temporary directory)");
  run->add_option("--policy", o->lo.policy, "Scheduling policy (overrides [run] policy)")->check(treefarm::cli_support::policy_check());
  run->add_option("--migration", o->lo.migration, "Task migration, off, pull or push (overrides [run] migration; docs/migration.md)")->check(CLI::IsMember({"off", "pull", "push"}));
  run->add_option("--balance", o->lo.balance, "Queue balancing over the migration, off, tll or mll (overrides [run] balance; needs --migration pull or push; docs/migration.md)")->check(CLI::IsMember({"off", "tll", "mll"}));
  run->add_option("--buffer", o->lo.buffer, "Buffer bound B in tasks, >= 1 (overrides [run] buffer)")->check(CLI::Range(1u, 1000000u));
  run->add_flag("--resume", o->resume, "Continue the run journaled in OUT/journal.tsv (needs --out): only tasks it lacks are done");
  run->add_option("--spot-check", o->spot_check, "Fraction of results the master recomputes (default 0.01; docs/security.md)")
      ->check(CLI::Range(0.0, 1.0));
  run->add_option("--inputs", o->inputs, "Task inputs: secret = a fresh input per task (default); pooled = two per application reused by every task, for trusted workers only (docs/security.md); any other value is a GLOB: without an experiment file, a task per file ({input} {name} {stem}; quote it)");
  run->add_option("--timeout", o->lo.timeout, "Give up after this many seconds (0 = never; exit code 124)")->capture_default_str()->check(cli_support::non_negative_seconds());
  cli_support::exits_on_timeout(*run);  // --timeout expired: exit 124
  auto* calibration = run->add_option("--calibration", o->calibration, "Calibration file: print the LP prediction beside the measurements")->check(CLI::ExistingFile);
  run->add_flag("--calibrate", o->calibrate, "Calibrate in place first (OUT/calibration.json), then run and compare with the LP")
      ->excludes(calibration);
  run->add_flag("--plan-from-estimates", o->plan_from_estimates,
                "Policy lp without a calibration: start with FCFS and follow the LP over the run's own estimates once they are tight");
  run->add_flag("--quiet", o->lo.quiet, "No progress display (the table and results.json remain)");
  run->add_flag("--json-progress", o->lo.json_progress,
                "stdout: one JSON object per second ({\"type\":\"progress\",...}), then the results as a last JSON line "
                "({\"type\":\"results\",...}) instead of the table");
  run->add_option("--heartbeat-interval", o->hb_interval, "seconds between heartbeats (default 1)")->check(cli_support::positive_seconds());
  run->add_option("--heartbeat-timeout", o->hb_timeout, "seconds of silence after which a node is declared dead (default 6)")->check(cli_support::positive_seconds());
  cli_support::add_one_port_window_option(*run, o->one_port_window);
  run->add_flag("--encrypt", o->lo.encrypt, "CURVE-encrypt and authenticate every link, loopback included (keys made for the run)");
  auto* dashboard = run->add_option("--dashboard", o->dashboard_address,
                  "Serve the live dashboard at [HOST:]PORT (default 127.0.0.1:8787 when given without a value; "
                  "port 0 = a free one, printed; docs/dashboard.md)")
      ->expected(0, 1);
  cli_support::optional_value(*dashboard, dashboard::looks_like_address, dashboard::default_address);
  run->add_option("--dashboard-file", o->dashboard_file, "Write the dashboard's address (http://HOST:PORT/) to this file once it listens");
  run->add_flag("--dashboard-remote", o->dashboard_remote,
                "Allow --dashboard on a non-loopback address: plain HTTP, read-only, behind a token printed once");
  cli_support::add_log_level_option(*run, o->lo.log_level);
  out.push_back({run, [o, dashboard] {
                   o->dashboard = dashboard->count() > 0;
                   return run_run(*o);
                 }});
}

}  // namespace treefarm::cli
