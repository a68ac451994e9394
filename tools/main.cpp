// treefarm: the user's command (docs/commands.md).
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "runtime/metrics/AtomicFile.hpp"

#include "runtime/model/Experiment.hpp"
#include "runtime/lp/LpBench.hpp"
#include "runtime/net/Curve.hpp"
#include "tools/Bench.hpp"
#include "tools/Compare.hpp"
#include "tools/bench/ExecutorBench.hpp"
#include "tools/emulate/Emulate.hpp"
#include "tools/sim/Campaign.hpp"
#include "tools/sim/GenPlatform.hpp"
#include "tools/sim/SimBench.hpp"
#include "tools/sim/SimulateCommand.hpp"
#include "tools/Predict.hpp"
#include "tools/plan/PlanCommands.hpp"
#include "tools/TreeLauncher.hpp"
#include "runtime/exec/Topology.hpp"

namespace {
std::atomic<bool> interrupted{false};
void on_signal(int) { interrupted = true; }
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"treefarm: a task farm for multicore workstations on a LAN. A master and workers form a tree\n"
               "over ZeroMQ; bags of real matrix tasks flow down it; treefarm measures the throughput it\n"
               "achieves. See README.md and docs/commands.md."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "treefarm 0.1.0");

  // run
  auto* run = app.add_subcommand("run", "Run an experiment: master and workers as local processes on loopback");
  std::string experiment;
  treefarm::tools::LaunchOptions lo;
  run->add_option("experiment", experiment, "Experiment file (TOML, docs/experiment-file.md)")->required()->check(CLI::ExistingFile);
  run->add_option("--out", lo.out_dir, "Write DIR/results.json and DIR/logs/ (default: a temporary directory)");
  run->add_option("--policy", lo.policy, "Scheduling policy (overrides [run] policy)");
  run->add_option("--buffer", lo.buffer, "Buffer bound B in tasks (overrides [run] buffer)")->check(CLI::Range(1u, 1'000'000u));
  bool run_resume = false;
  run->add_flag("--resume", run_resume, "Continue the run journaled in OUT/journal.tsv (needs --out): only tasks it lacks are done");
  run->add_option("--timeout", lo.timeout, "Give up after this many seconds (0 = never)")->capture_default_str();
  std::string run_calibration;
  bool run_calibrate = false;
  run->add_option("--calibration", run_calibration, "Calibration file: print the LP prediction beside the measurements")->check(CLI::ExistingFile);
  run->add_flag("--calibrate", run_calibrate, "Calibrate in place first (OUT/calibration.json), then run and compare with the LP");
  run->add_flag("--quiet", lo.quiet, "No progress lines");
  double hb_interval = 0, hb_timeout = 0;
  run->add_option("--heartbeat-interval", hb_interval, "seconds between heartbeats (default 1)");
  run->add_option("--heartbeat-timeout", hb_timeout, "seconds of silence after which a node is declared dead (default 6)");
  run->add_flag("--encrypt", lo.encrypt, "CURVE-encrypt and authenticate every link, loopback included (keys made for the run)");

  // keygen
  auto* keygen = app.add_subcommand("keygen", "Write CURVE key pairs (NAME.key, NAME.key_secret) and an authorized_keys file");
  std::string key_dir = "keys";
  std::vector<std::string> key_names;
  keygen->add_option("names", key_names, "Node names, one key pair each")->required();
  keygen->add_option("--out", key_dir, "Directory to write the keys to")->capture_default_str();

  // calibrate
  auto* cal = app.add_subcommand("calibrate", "Measure every node's task durations and links in place (the tree as `run` starts it)");
  std::string cal_experiment, cal_out = "calibration.json";
  std::uint32_t cal_reps = 5;
  cal->add_option("experiment", cal_experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  cal->add_option("--out", cal_out, "Calibration file to write")->capture_default_str();
  cal->add_option("--reps", cal_reps, "Kernel runs per application and node")->capture_default_str();

  // predict
  auto* pred = app.add_subcommand("predict", "Solve the steady-state LP: the optimal throughput of the platform");
  std::string pred_experiment;
  treefarm::tools::PredictOptions po;
  pred->add_option("experiment", pred_experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  pred->add_option("--calibration", po.calibration, "Calibration file (default: the model values speed/bandwidth)")->check(CLI::ExistingFile);
  pred->add_flag("--json", po.json, "JSON output");
  pred->add_flag("--schedule", po.schedule, "Also print the periodic schedule (section 3.2)");
  run->add_option("--log-level", lo.log_level, "trace|debug|info|warn|error|off")->capture_default_str();

  // compare
  auto* cmp = app.add_subcommand("compare", "Run the experiment once per policy and set each beside the LP optimum");
  std::string cmp_experiment, cmp_policies = "all";
  treefarm::tools::CompareOptions co;
  cmp->add_option("experiment", cmp_experiment, "Experiment file")->required()->check(CLI::ExistingFile);
  cmp->add_option("--policies", cmp_policies, "all, or a comma-separated list (fcfs,cgbc,pbc,lp,data-centric)")->capture_default_str();
  cmp->add_option("--calibration", co.calibration, "Calibration file (default: calibrate in place first)")->check(CLI::ExistingFile);
  cmp->add_flag("--no-calibrate", co.no_calibrate, "No calibration: no LP prediction, policy lp skipped");
  cmp->add_option("--out", co.out_dir, "Write DIR/compare.json, DIR/compare.png and DIR/POLICY/ (default out/compare-NAME)");
  cmp->add_option("--timeout", co.launch.timeout, "seconds per run (0 = none)");
  cmp->add_flag("--quiet", co.launch.quiet, "No progress lines");

  // simulate
  auto* simc = app.add_subcommand("simulate", "Simulate the experiment with SimGrid, running the same scheduler core");
  std::string sim_experiment;
  treefarm::tools::SimulateOptions so;
  simc->add_option("experiment", sim_experiment, "Experiment file (speed/bandwidth/latency per node)")->required()->check(CLI::ExistingFile);
  simc->add_option("--policy", so.policy, "Scheduling policy (overrides [run] policy)");
  simc->add_option("--buffer", so.buffer, "Buffer bound B in tasks (overrides [run] buffer)");
  simc->add_option("--out", so.out_dir, "Write DIR/results.json");
  simc->add_option("--calibration", so.calibration, "Simulate the calibrated platform")->check(CLI::ExistingFile);
  simc->add_flag("--quiet", so.quiet, "No table");

  // gen-platform
  auto* gen = app.add_subcommand("gen-platform", "Print a random tree platform (papers/beaumont2006 section 5.1) as an experiment file");
  treefarm::tools::GenOptions go;
  gen->add_option("--nodes", go.nodes, "Nodes, master included")->required();
  gen->add_option("--max-degree", go.max_degree, "Most children per node")->required();
  gen->add_option("--apps", go.apps, "Abstract applications")->required();
  gen->add_option("--seed", go.seed, "Random seed")->required();
  gen->add_option("--ccr-max", go.ccr_max, "Largest CCR (bytes/flop); CCRs evenly spaced from 0.001")->capture_default_str();
  gen->add_option("--tasks", go.tasks, "Tasks per application")->capture_default_str();

  // emulate
  auto* emu = app.add_subcommand("emulate", "Run on an emulated heterogeneous LAN: namespaces, tbf-shaped links, CPU quotas (root)");
  std::string emu_experiment, emu_mode, emu_policies = "all";
  bool emu_cleanup = false;
  treefarm::emulate::EmulateOptions eo;
  emu->add_option("experiment", emu_experiment, "Experiment file (bandwidth, cpu_quota, cpuset per node)");
  emu->add_option("mode", emu_mode, "run | calibrate | compare");
  emu->add_flag("--cleanup", emu_cleanup, "Remove what a crashed emulation left behind, and exit");
  emu->add_option("--out", eo.launch.out_dir, "Output directory (results, logs, compare.json)");
  emu->add_option("--policy", eo.launch.policy, "run: scheduling policy");
  emu->add_option("--policies", emu_policies, "compare: all, or a comma-separated list")->capture_default_str();
  emu->add_option("--calibration", eo.launch.calibration, "run/compare: calibration file")->check(CLI::ExistingFile);
  emu->add_option("--calibration-out", eo.calibration_out, "calibrate: file to write")->capture_default_str();
  emu->add_option("--buffer", eo.launch.buffer, "Buffer bound B in tasks");
  emu->add_option("--timeout", eo.launch.timeout, "seconds per run (0 = none)");
  emu->add_option("--prefix", eo.prefix, "Name prefix of what is created (default tf + 4 random hex digits)");
  emu->add_flag("--probe-links", eo.probe_links, "Measure every shaped link before the run");
  emu->add_flag("--encrypt", eo.launch.encrypt, "CURVE on every link");
  emu->add_flag("--quiet", eo.launch.quiet, "No progress lines");

  // experiment paper
  auto* experiment_cmd = app.add_subcommand("experiment", "Reproduce a published experiment in simulation");
  experiment_cmd->require_subcommand(1);
  auto* paper = experiment_cmd->add_subcommand("paper", "papers/beaumont2006 section 5: 150 random trees x 5 policies, histograms and report");
  treefarm::tools::CampaignOptions camp;
  paper->add_option("--out", camp.out_dir, "Output directory (paper-campaign.md, campaign.json, PNGs)")->capture_default_str();
  paper->add_option("--jobs", camp.jobs, "Simulations in parallel (0 = number of cores)")->capture_default_str();
  paper->add_flag("--quick", camp.quick, "A small subset, for a smoke run");
  paper->add_option("--seed", camp.seed, "Seed of the platforms")->capture_default_str();

  // plan, gen-machines, experiment plan (tools/plan/)
  treefarm::tools::PlanCommands plan_commands(app, *experiment_cmd);

  // hwdetect
  auto* hw = app.add_subcommand("hwdetect", "Print the cores, caches and memory a worker here would use");
  bool hw_json = false;
  hw->add_flag("--json", hw_json, "JSON output");

  // bench
  auto* bench = app.add_subcommand("bench", "Benchmarks (figures measured side by side in one run)");
  bench->require_subcommand(1);
  auto* dispatch = bench->add_subcommand("dispatch", "No-op tasks master -> one worker on loopback, beside raw ZeroMQ");
  std::uint64_t bench_tasks = 200000, bench_bytes = 16;
  std::uint32_t bench_buffer = 100;
  bool bench_json = false;
  dispatch->add_option("--tasks", bench_tasks, "Number of no-op tasks")->capture_default_str();
  dispatch->add_option("--bytes", bench_bytes, "Payload bytes per task")->capture_default_str();
  dispatch->add_option("--buffer", bench_buffer, "Buffer bound B")->capture_default_str();
  dispatch->add_flag("--json", bench_json, "JSON output");
  std::string bench_comm_model = "multi-port";
  dispatch->add_option("--comm-model", bench_comm_model,
                       "multi-port (the runtime's own cost per task) or one-port (each transfer also waits for the worker's acknowledgement: one loopback round trip per task)")
      ->capture_default_str();
  bool bench_encryption = false;
  dispatch->add_flag("--encryption", bench_encryption, "Also measure with CURVE on every link, side by side");
  auto* chaos = bench->add_subcommand("chaos", "Random kills and restarts of workers during a run, beside the same run without");
  double chaos_minutes = 1, chaos_interval = 3;
  std::uint64_t chaos_seed = 1;
  chaos->add_option("--minutes", chaos_minutes, "Approximate length of each run")->capture_default_str();
  chaos->add_option("--kill-interval", chaos_interval, "Mean seconds between kills")->capture_default_str();
  chaos->add_option("--seed", chaos_seed, "Seed of the kills")->capture_default_str();
  chaos->add_flag("--json", bench_json, "JSON output");
  auto* bench_sim = bench->add_subcommand("simulate", "Wall time and peak memory of simulating 1,000- and 10,000-node trees");
  auto* bench_bf = bench->add_subcommand("backfill", "Mixed 1-core/2-core workload on one 2-core executor: backfilling against strict FIFO");
  treefarm::tools::BackfillBenchOptions bfo;
  bench_bf->add_option("--rounds", bfo.rounds, "Repetitions of the task pattern")->capture_default_str();
  bench_bf->add_option("--matmul-n", bfo.matmul_n, "Order of the 2-core matmul tasks")->capture_default_str();
  bench_bf->add_option("--matadd-n", bfo.matadd_n, "Order of the 1-core matadd tasks")->capture_default_str();
  bench_bf->add_flag("--json", bfo.json, "JSON output");
  auto* bench_k = bench->add_subcommand("kernel", "Kernel efficiency in the executor against standalone dgemm; 2-core speed-up");
  treefarm::tools::KernelBenchOptions kbo;
  bench_k->add_option("--n", kbo.n, "Matrix order")->capture_default_str();
  bench_k->add_option("--tasks", kbo.tasks, "Tasks per measurement")->capture_default_str();
  bench_k->add_flag("--json", kbo.json, "JSON output");
  auto* bench_lp = bench->add_subcommand("lp", "LP build + solve time for random trees of 100, 1,000 and 10,000 nodes, 10 applications");

  CLI11_PARSE(app, argc, argv);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  try {
    if (auto rc = plan_commands.run(std::cout, std::cerr)) return *rc;
    if (*run) {
      const auto ex = treefarm::model::load_experiment(experiment);
      if (run_resume && lo.out_dir.empty()) throw std::invalid_argument("--resume continues the journal in OUT: give --out DIR");
      if (!lo.out_dir.empty()) treefarm::metrics::check_writable_directory(lo.out_dir);
      treefarm::tools::check_fits_this_machine(ex, lo.buffer);
      if (run_calibrate) {
        if (lo.out_dir.empty()) lo.out_dir = "out/" + std::filesystem::path(experiment).stem().string();
        const std::string file = lo.out_dir + "/calibration.json";
        auto clo = lo;
        clo.master_args = {"--calibrate-out", file};
        std::cerr << "treefarm run: calibrating first (" << file << ")\n";
        const int rc = treefarm::tools::launch_tree(ex, clo, interrupted);
        if (rc != 0) return rc;
        run_calibration = file;
      }
      lo.calibration = run_calibration;
      if (run_resume) lo.master_args.push_back("--resume");
      for (auto* args : {&lo.master_args, &lo.worker_args}) {
        if (hb_interval > 0) args->insert(args->end(), {"--heartbeat-interval", std::to_string(hb_interval)});
        if (hb_timeout > 0) args->insert(args->end(), {"--heartbeat-timeout", std::to_string(hb_timeout)});
      }
      return treefarm::tools::launch_tree(ex, lo, interrupted);
    }
    if (*cal) {
      const auto ex = treefarm::model::load_experiment(cal_experiment);
      treefarm::tools::LaunchOptions clo;
      clo.master_args = {"--calibrate-out", std::filesystem::absolute(cal_out).string(), "--calibrate-reps", std::to_string(cal_reps)};
      return treefarm::tools::launch_tree(ex, clo, interrupted);
    }
    if (*keygen) {
      std::filesystem::create_directories(key_dir);
      std::ofstream authorized(std::filesystem::path(key_dir) / "authorized_keys", std::ios::app);
      for (const auto& name : key_names) {
        const auto pair = treefarm::net::generate_keypair();
        treefarm::net::write_keypair(key_dir, name, pair);
        authorized << pair.public_key << "  # " << name << "\n";
        std::cout << "wrote " << key_dir << "/" << name << ".key and " << name << ".key_secret (keep it private)\n";
      }
      std::cout << "public keys appended to " << key_dir << "/authorized_keys\n";
      return 0;
    }
    if (*pred) return treefarm::tools::predict_command(pred_experiment, po, std::cout);
    if (*bench_lp) {
      treefarm::lp::bench_lp(std::cout);
      return 0;
    }
    if (*cmp) {
      const auto ex = treefarm::model::load_experiment(cmp_experiment);
      if (cmp_policies != "all") co.policies = CLI::detail::split(cmp_policies, ',');
      return treefarm::tools::compare_policies(
          ex, co, [&](const treefarm::tools::LaunchOptions& l) { return treefarm::tools::launch_tree(ex, l, interrupted); },
          std::cout);
    }
    if (*simc) return treefarm::tools::simulate_command(sim_experiment, so, std::cout);
    if (*gen) {
      std::cout << treefarm::tools::generate_platform(go);
      return 0;
    }
    if (*emu) {
      if (emu_cleanup) return treefarm::emulate::emulate_cleanup(std::cout);
      if (emu_experiment.empty() || emu_mode.empty())
        throw std::invalid_argument("usage: treefarm emulate EXPERIMENT.toml run|calibrate|compare [options], or --cleanup");
      if (emu_policies != "all") eo.policies = CLI::detail::split(emu_policies, ',');
      return treefarm::emulate::emulate_command(emu_experiment, emu_mode, eo, interrupted);
    }
    if (*paper) {
      camp.command = "treefarm experiment paper --out " + camp.out_dir + " --jobs " + std::to_string(camp.jobs) +
                     (camp.quick ? " --quick" : "");
      return treefarm::tools::paper_campaign(camp.quick ? treefarm::tools::quick_subset(camp) : camp, std::cout);
    }
    if (*bench_sim) {
      treefarm::tools::bench_simulate(std::cout);
      return 0;
    }
    if (*bench_bf) return treefarm::tools::bench_backfill(std::cout, bfo);
    if (*bench_k) return treefarm::tools::bench_kernel(std::cout, kbo);
    if (*hw) {
      const auto topo = treefarm::exec::discover_topology();
      if (hw_json) std::cout << treefarm::exec::to_json(topo).dump(1) << "\n";
      else std::cout << treefarm::exec::to_text(topo);
      return 0;
    }
    if (*dispatch)
      return treefarm::tools::bench_dispatch(std::cout, bench_tasks, bench_bytes, bench_buffer, bench_json, bench_encryption,
                                                 bench_comm_model);
    if (*chaos) return treefarm::tools::bench_chaos(std::cout, chaos_minutes, chaos_interval, chaos_seed, bench_json);
  } catch (const std::exception& e) {
    std::cerr << "treefarm: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
