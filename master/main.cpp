// treefarm-master: the root of a treefarm tree (docs/commands.md).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "runtime/node/ExitCode.hpp"
#include "runtime/process/Interrupt.hpp"
#include "tasks/BlasKernel.hpp"
#include "tasks/PayloadMemory.hpp"
#include "master/Master.hpp"
#include "master/Server.hpp"
#include "master/TemporaryStateDir.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/exec/CpuList.hpp"
#include "runtime/dashboard/DashboardServer.hpp"

namespace {
/// SIGINT/SIGTERM: the run or the served tree stops; the signal is kept (process::stop_signal()).
void on_signal(int sig) {
  treefarm::process::on_stop_signal(sig);
  treefarm::master::stop_master();
  treefarm::master::stop_serving();
}
}  // namespace

int main(int argc, char** argv) {
  treefarm::tasks::select_blas_kernel(argv);  // before anything loads BLAS kernels
  treefarm::tasks::keep_payload_memory();    // freed payloads reused, not unmapped (tasks/PayloadMemory.hpp)
  CLI::App app{"treefarm-master: the root of a treefarm tree. It holds the experiment's applications, waits for\n"
               "its workers (treefarm-worker --parent ENDPOINT), dispatches tasks, checks every result and\n"
               "writes results.json.\n"
               "Example: treefarm-master examples/quickstart.toml --listen tcp://*:5555 --out out/"};
  treefarm::master::MasterOptions opt;
  std::size_t wait = 0;
  std::string cpus, log_level = "info";
  bool quiet = false;
  std::uint32_t buffer = 0;
  auto* experiment_opt = app.add_option("experiment", opt.experiment, "Experiment file (TOML, docs/experiment-file.md); none with --serve")->check(CLI::ExistingFile);
  treefarm::master::ServeOptions serve;
  bool serving = false;
  app.add_flag("--serve", serving,
               "Serve a tree (docs/serve.md): workers stay connected across experiments, which `treefarm submit FILE "
               "--to ENDPOINT` sends to the --bind channel and which run one after another");
  // The options of a served master only: refused without --serve (below).
  std::vector<CLI::Option*> serve_only;
  serve_only.push_back(app.add_option("--bind", serve.bind, "--serve: the submit/status channel's endpoint (CURVE as the tree's)")
                           ->capture_default_str()
                           ->check(treefarm::cli_support::endpoint_check()));
  serve_only.push_back(app.add_option("--bind-file", serve.bind_file, "--serve: write the bound channel endpoint to this file"));
  serve_only.push_back(app.add_option("--name", serve.name, "--serve: the root's node name")->capture_default_str());
  serve_only.push_back(app.add_option("--state-dir", serve.state_dir, "--serve: each experiment's file, state and results go to DIR/job-N/ (mode 0700; default: a new temporary directory); started again with the same DIR, the master takes up the experiments that were queued or running"));
  serve_only.push_back(app.add_option("--live-wait", serve.live_wait, "--serve: seconds an experiment without [[node]] tables waits for the last run's nodes")
      ->capture_default_str()->check(treefarm::cli_support::non_negative_number()));
  app.add_flag("--allow-commands", serve.allow_commands,
               "--serve: accept command applications (submitted programs run on the workers), only from a CURVE "
               "client or admin key or over an ipc:// --bind from this user or root (docs/security.md); not with --cpus");
  app.add_option("--output-quota", opt.output_quota,
                 "bytes: the most one experiment's output files may take under OUT/outputs/; past it the run ends "
                 "with an error")
      ->capture_default_str();
  app.add_option("--origin", opt.origin, "Run only the applications whose `origin` is this node, as the master of the tree re-rooted there (bertin2008 §2.2; docs/experiment-file.md)");
  app.add_option("--listen", opt.listen, "Endpoint workers connect to")->capture_default_str()->check(treefarm::cli_support::endpoint_check());
  app.add_option("--out", opt.out_dir, "Write DIR/results.json (and the output files of command applications with output_file: DIR/outputs/APP/)");
  app.add_option("--policy", opt.policy, "Scheduling policy (overrides [run] policy)")->check(treefarm::cli_support::policy_check());
  app.add_option("--buffer", buffer, "Buffer bound B in tasks, >= 1 (overrides [run] buffer)")->check(CLI::Range(1u, 1000000u));
  auto* wait_opt = app.add_option("--wait-workers", wait, "Start dispatching once this many nodes joined (default: all nodes of the experiment)");
  app.add_option("--wait-timeout", opt.wait_timeout, "seconds to wait for them before starting anyway")->capture_default_str()->check(treefarm::cli_support::non_negative_seconds());
  app.add_option("--cpus", cpus, "CPUs the master computes on (default: the master node's `cores`)");
  app.add_option("--ready-file", opt.ready_file, "Write the bound endpoint to this file once listening");
  app.add_option("--calibration", opt.calibration, "Calibration file: print the LP prediction beside the measurements")->check(CLI::ExistingFile);
  app.add_option("--host-calibration", opt.host_calibration, "Without --calibration, policy lp: a calibration file of the machines the nodes share only (no task times), the host rows of the plan the run makes from its own estimates (docs/live-model.md)")->check(CLI::ExistingFile);
  app.add_option("--calibrate-out", opt.calibrate_out, "Calibration run: every node measures in place; write the file here, run no task");
  app.add_option("--calibrate-reps", opt.calibrate_reps, "Kernel runs per application and node in a calibration run")->capture_default_str()->check(treefarm::cli_support::positive_number());
  std::string curve_secret, authorized;
  app.add_option("--curve-secret", curve_secret, "The master's CURVE secret key file (treefarm keygen)")->check(CLI::ExistingFile);
  app.add_option("--authorized-keys", authorized, "Public keys of the workers admitted (authorized_keys file)")->check(CLI::ExistingFile);
  app.add_flag("--insecure", opt.insecure, "Allow unencrypted links on non-loopback addresses");
  app.add_option("--max-task-losses", opt.max_task_losses, "A task lost with this many dead workers is reported failed")->capture_default_str();
  app.add_option("--heartbeat-interval", opt.heartbeat_interval, "seconds between heartbeats")->capture_default_str()->check(treefarm::cli_support::positive_seconds());
  app.add_option("--heartbeat-timeout", opt.heartbeat_timeout, "seconds of silence after which a worker is declared dead")->capture_default_str()->check(treefarm::cli_support::positive_seconds());
  app.add_option("--spot-check", opt.spot_check, "Fraction of results recomputed by the master; a child caught forging is disconnected and its results redone (docs/security.md)")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  std::string inputs = "secret";
  app.add_option("--inputs", inputs, "Task inputs: secret = a fresh input per task from the run secret (default); pooled = two secret inputs per application reused by every task, for trusted workers only (docs/security.md)")
      ->check(CLI::IsMember({"secret", "pooled"}))->capture_default_str();
  app.add_flag("--resume", opt.resume, "Continue the run journaled in OUT/journal.tsv (needs --out): only tasks it lacks are done");
  treefarm::cli_support::add_one_port_window_option(app, opt.one_port_window);
  app.add_option("--migration", opt.migration, "Task migration (docs/migration.md): pull = an idle master takes waiting tasks back from the longest worker queue for the others; push = the master tells workers with long queues of its idle requesters and takes the tasks they push; off (default: the experiment's run.migration)")->check(CLI::IsMember({"off", "pull", "push"}));
  app.add_option("--balance", opt.balance, "Queue balancing over the migration (docs/migration.md, papers/lee2010 slide 17): tll = move waiting tasks while that lowers the total of the two ends' normalised loads, mll = the larger of them; off = the queue-length rule (default: the experiment's run.balance)")->check(CLI::IsMember({"off", "tll", "mll"}));
  app.add_option("--task-deadline-factor", opt.task_deadline_factor, "A task a worker holds past max(floor, FACTOR x expected seconds) is re-issued elsewhere (0 = never)")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  app.add_option("--task-deadline-floor", opt.task_deadline_floor, "seconds: the least time a worker is given for a task before it is re-issued")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  app.add_option("--ack-timeout", opt.ack_timeout, "seconds a worker may take to acknowledge a task transfer before it is dropped (0 = never)")->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  app.add_flag("--quiet", quiet, "No progress display");
  app.add_flag("--json-progress", opt.json_progress,
               "Progress as one JSON object per second on stdout, the results as a last JSON line (no table)");
  std::string dashboard_address, dashboard_file;
  bool dashboard_remote = false;
  auto* dashboard_opt = app.add_option("--dashboard", dashboard_address,
                                       "Serve the live dashboard at [HOST:]PORT (default 127.0.0.1:8787 when given without a value; "
                                       "port 0 = a free one; docs/dashboard.md)")
                            ->expected(0, 1);
  treefarm::cli_support::optional_value(*dashboard_opt, treefarm::dashboard::looks_like_address,
                                        treefarm::dashboard::default_address);
  app.add_option("--dashboard-file", dashboard_file, "Write the dashboard's address (http://HOST:PORT/) to this file once it listens");
  app.add_flag("--dashboard-remote", dashboard_remote,
               "Allow --dashboard on a non-loopback address: it is plain HTTP, read-only, and asks for a token printed once");
  bool no_table = false;
  app.add_flag("--no-table", no_table, "Print no result table on stdout (results.json only)");
  namespace cs = treefarm::cli_support;
  cs::add_log_level_option(app, log_level);
  cs::setup_app(app, "treefarm-master");
  if (const auto rc = cs::parse(app, argc, argv)) return *rc;
  cs::setup_logging(log_level);
  if (*wait_opt) opt.wait_for_nodes = wait;
  if (buffer > 0) opt.buffer = buffer;
  opt.pooled_inputs = inputs == "pooled";
  opt.progress = !quiet;
  opt.table = !no_table;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    // Every output path and served-only option before anything listens or waits.
    if (!opt.ready_file.empty()) cs::check_out_file("--ready-file", opt.ready_file);
    if (!opt.calibrate_out.empty()) cs::check_out_file("--calibrate-out", opt.calibrate_out);
    if (!serving)
      for (const auto* o : serve_only)
        if (o->count() > 0) throw cs::UsageError(o->get_name() + " is for a served master (--serve)");
    if (!cpus.empty()) opt.cores = treefarm::exec::parse_cpu_list(cpus);
    if (!curve_secret.empty()) {
      if (authorized.empty()) throw cs::UsageError("--curve-secret needs --authorized-keys");
      opt.curve.enabled = true;
      opt.curve.own = cs::load_input([&] { return treefarm::net::load_secret_key_file(curve_secret); });
      opt.curve.authorized = cs::load_input([&] { return treefarm::net::load_authorized_keys(authorized, &opt.curve.key_names, &opt.curve.key_roles); });
      opt.curve.authorized_file = authorized;
    }
    // The dashboard (docs/dashboard.md): the root publishes to `feed`, the server reads it.
    std::unique_ptr<treefarm::dashboard::Feed> feed;
    std::unique_ptr<treefarm::dashboard::DashboardServer> dashboard;
    if (*dashboard_opt || !dashboard_file.empty() || dashboard_remote) {
      treefarm::dashboard::ServerOptions so;
      try {
        so.address = treefarm::dashboard::parse_address(dashboard_address);
      } catch (const std::invalid_argument& e) {
        throw cs::UsageError(e.what());
      }
      if (!treefarm::dashboard::is_loopback_host(so.address.host) && !dashboard_remote)
        throw cs::UsageError("--dashboard " + dashboard_address +
                             ": not a loopback address; the dashboard is plain HTTP and would be readable from the "
                             "network: add --dashboard-remote to serve it there behind a token, or use 127.0.0.1");
      so.allow_remote = dashboard_remote;
      so.address_file = dashboard_file;
      treefarm::dashboard::FeedOptions fo;
      fo.heartbeat_interval = opt.heartbeat_interval;
      fo.heartbeat_timeout = opt.heartbeat_timeout;
      feed = std::make_unique<treefarm::dashboard::Feed>(fo);
      dashboard = std::make_unique<treefarm::dashboard::DashboardServer>(*feed, so);
      opt.dashboard = feed.get();
      std::fprintf(stderr, "treefarm-master: dashboard at %s\n", dashboard->url().c_str());
    }
    if (serving) {
      if (*experiment_opt) throw cs::UsageError("--serve takes no experiment file: submit them (treefarm submit FILE --to ENDPOINT)");
      if (!opt.out_dir.empty() || opt.resume || !opt.calibrate_out.empty() || !opt.calibration.empty())
        throw cs::UsageError("--serve: --out, --resume, --calibration and --calibrate-out belong to each submission");
      if (serve.allow_commands && opt.cores)
        throw cs::UsageError("--allow-commands with --cpus: a served master that computes would run submitted programs "
                             "itself; give one or the other (docs/security.md)");
      if (!serve.bind_file.empty()) cs::check_out_file("--bind-file", serve.bind_file);
      if (!serve.state_dir.empty()) cs::prepare_out_folder("--state-dir", serve.state_dir);
      // Without --state-dir: a temporary one, removed at the end unless experiments wait in it.
      std::optional<treefarm::master::TemporaryStateDir> temporary;
      if (serve.state_dir.empty()) serve.state_dir = temporary.emplace().path().string();
      serve.base = opt;
      const int rc = treefarm::master::serve(serve);
      // SIGTERM is a requested stop (0, as for treefarm-worker); SIGINT an interruption.
      if (rc == 0 && treefarm::process::stop_requested() && treefarm::process::stop_signal() == SIGINT) {
        std::cerr << cs::error_message("interrupted; the served tree stopped") << "\n";
        return treefarm::node::exit_interrupted;
      }
      return rc;
    }
    if (serve.allow_commands) throw cs::UsageError("--allow-commands is for a served master (--serve)");
    if (!*experiment_opt) throw cs::UsageError("an experiment file is needed (or --serve)");
    const int rc = treefarm::master::run_master(opt);
    // Ctrl-C: one line (SIGTERM is how treefarm run stops its master: its own line says why).
    if (rc == treefarm::node::exit_interrupted && treefarm::process::stop_signal() == SIGINT)
      std::cerr << cs::error_message(opt.calibrate_out.empty() ? "interrupted; no results written"
                                                               : "interrupted; no calibration written")
                << "\n";
    return rc;
  } catch (const std::exception& e) {
    return cs::report_error(e);
  }
}
