// treefarm bench dispatch|tasks|workers|chaos|simulate|backfill|kernel|lp|codec|inputs|memory|drift|peers (docs/commands.md, docs/benchmarks.md).
#include <filesystem>
#include <iostream>
#include <memory>

#include "runtime/cli/CliSupport.hpp"
#include "tools/bench/LpBench.hpp"
#include "tools/Bench.hpp"
#include "tools/cli/Command.hpp"
#include "tools/emulate/ChaosSoak.hpp"
#include "tools/emulate/Emulate.hpp"
#include "tools/bench/BackfillBench.hpp"
#include "tools/bench/CodecBench.hpp"
#include "tools/bench/InputBench.hpp"
#include "tools/bench/KernelBench.hpp"
#include "tools/bench/DriftBench.hpp"
#include "tools/bench/MemoryBench.hpp"
#include "tools/bench/TasksBench.hpp"
#include "tools/bench/WorkersBench.hpp"
#include "tools/cli/Command.hpp"
#include "tools/bench/SimBench.hpp"

namespace treefarm::cli {

namespace {

/// A PNG to write (--plot): the name ends in .png and its folder exists (help type FILE.png).
const CLI::Validator& png_path() {
  static const CLI::Validator check(
      [](std::string& value) -> std::string {
        const std::filesystem::path p(value);
        if (p.extension() != ".png") return "'" + value + "': the file name must end in .png";
        const auto dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) return "'" + value + "': its folder " + dir.string() + " does not exist";
        return {};
      },
      "FILE.png", "png_path");
  return check;
}

struct BenchCli {
  std::uint64_t tasks = 200000, bytes = 16;
  std::uint32_t buffer = 100;
  bool json = false, encryption = false, dashboard = false;
  int rounds = 0;
  std::string comm_model = "multi-port";
  int depth = 1;
  double chaos_minutes = 1, chaos_interval = 3;
  std::uint64_t chaos_seed = 1;
  bench::BackfillBenchOptions bfo;
  bench::KernelBenchOptions kbo;
};
}  // namespace

void add_bench_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<BenchCli>();
  auto* bench = app.add_subcommand("bench", "Benchmarks (figures measured side by side in one run)");
  bench->require_subcommand(1);

  auto* dispatch = bench->add_subcommand("dispatch", "No-op tasks master -> one worker on loopback, beside raw ZeroMQ");
  dispatch->add_option("--tasks", o->tasks, "Number of no-op tasks")->capture_default_str()->check(cli_support::positive_number());
  dispatch->add_option("--bytes", o->bytes, "Payload bytes per task")->capture_default_str();
  dispatch->add_option("--buffer", o->buffer, "Buffer bound B")->capture_default_str()->check(cli_support::positive_number());
  dispatch->add_flag("--json", o->json, "JSON output");
  dispatch->add_option("--comm-model", o->comm_model,
                       "multi-port (the runtime's own cost per task) or one-port (each transfer also waits for the worker's acknowledgement: one loopback round trip per task)")
      ->capture_default_str()
      ->check(CLI::IsMember({"multi-port", "one-port"}));
  auto* encryption = dispatch->add_flag("--encryption", o->encryption, "Also measure with CURVE on every link, side by side");
  dispatch->add_flag("--dashboard", o->dashboard,
                     "Also measure with the master serving its live dashboard and a client following /api/events, side by side")
      ->excludes(encryption);
  dispatch->add_option("--rounds", o->rounds, "Runs of each variant, alternated (0: 1 alone, 2 when comparing)")
      ->capture_default_str()->check(CLI::Range(0, 100));
  dispatch->add_option("--depth", o->depth, "1: master -> worker; 2: master -> 0-core forwarder -> worker")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  out.push_back({dispatch, [o] {
                   return tools::bench_dispatch(std::cout, o->tasks, o->bytes, o->buffer, o->json, o->encryption,
                                                 o->comm_model, o->depth, o->dashboard, o->rounds);
                 }});

  auto* chaos = bench->add_subcommand("chaos", "Faults during a run beside the same run without: as root, worker and master kills (then --resume), network faults and a full --out on an emulated platform; otherwise worker kills");
  chaos->add_option("--minutes", o->chaos_minutes, "minutes: approximate length of each run")->capture_default_str()->check(cli_support::positive_number());
  chaos->add_option("--kill-interval", o->chaos_interval, "Mean seconds between kills")->capture_default_str()->check(cli_support::positive_seconds());
  chaos->add_option("--seed", o->chaos_seed, "Seed of the kills")->capture_default_str();
  chaos->add_flag("--json", o->json, "JSON output");
  out.push_back({chaos, [o] {
                   // As root, on an emulated platform with every fault (tools/emulate/ChaosSoak.hpp);
                   // otherwise worker kills on loopback only.
                   if (emulate::emulation_unavailable().empty()) {
                     emulate::SoakOptions so;
                     so.minutes = o->chaos_minutes;
                     so.kill_interval = o->chaos_interval;
                     so.seed = o->chaos_seed;
                     return emulate::chaos_soak(std::cout, so, o->json, interrupted());
                   }
                   std::cerr << "bench chaos: not root (or no network namespaces): worker kills only, on loopback\n";
                   return tools::bench_chaos(std::cout, o->chaos_minutes, o->chaos_interval, o->chaos_seed, o->json);
                 }});

  auto* bench_sim = bench->add_subcommand("simulate", "Wall time and peak memory of simulating generated trees of growing size");
  auto sbo = std::make_shared<bench::SimBenchOptions>();
  bench_sim->add_option("--sizes", sbo->sizes, "Nodes of the generated trees, comma-separated")
      ->capture_default_str()->delimiter(',')->check(CLI::Range(2u, 10000000u));
  bench_sim->add_option("--apps", sbo->apps, "Applications")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_sim->add_option("--tasks", sbo->tasks, "Tasks per application")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_sim->add_option("--plot", sbo->plot, "Write the curves (wall seconds, peak MiB against nodes, log-log) to this PNG")
      ->check(png_path());
  bench_sim->add_option("--wall-limit", sbo->wall_limit, "seconds per simulation; beyond it, what was reached is reported")
      ->capture_default_str()->check(treefarm::cli_support::positive_number());
  out.push_back({bench_sim, [sbo] {
                   bench::bench_simulate(std::cout, *sbo);
                   return 0;
                 }});

  auto* bench_bf = bench->add_subcommand("backfill", "Mixed 1-core/2-core workload on one 2-core executor: backfilling against strict FIFO");
  bench_bf->add_option("--rounds", o->bfo.rounds, "Repetitions of the task pattern")->capture_default_str();
  bench_bf->add_option("--matmul-n", o->bfo.matmul_n, "Order of the 2-core matmul tasks")->capture_default_str();
  bench_bf->add_option("--matadd-n", o->bfo.matadd_n, "Order of the 1-core matadd tasks")->capture_default_str();
  bench_bf->add_flag("--json", o->bfo.json, "JSON output");
  out.push_back({bench_bf, [o] { return bench::bench_backfill(std::cout, o->bfo); }});

  auto* bench_k = bench->add_subcommand("kernel", "Kernel efficiency in the executor against standalone dgemm; 2-core speed-up");
  bench_k->add_option("--n", o->kbo.n, "Matrix order")->capture_default_str();
  bench_k->add_option("--tasks", o->kbo.tasks, "Tasks per measurement")->capture_default_str();
  bench_k->add_flag("--json", o->kbo.json, "JSON output");
  out.push_back({bench_k, [o] { return bench::bench_kernel(std::cout, o->kbo); }});

  auto* bench_codec = bench->add_subcommand(
      "codec", "Wire codec: Task and Result header frames encoded and decoded by ours and by MessagePack, side by side");
  auto cbo = std::make_shared<bench::CodecBenchOptions>();
  bench_codec->add_option("--messages", cbo->messages, "Encodes and decodes per measurement")
      ->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_codec->add_option("--rounds", cbo->rounds, "Measurements per figure (the median is printed)")
      ->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_codec->add_flag("--json", cbo->json, "JSON output");
  out.push_back({bench_codec, [cbo] { return bench::bench_codec(std::cout, *cbo); }});

  auto* bench_mem = bench->add_subcommand(
      "memory", "The master's memory per task (peak RSS minus RSS at start) on a bag of no-op tasks, beside an empty run");
  auto mbo = std::make_shared<bench::MemoryBenchOptions>();
  bench_mem->add_option("--tasks", mbo->tasks, "No-op tasks in the measured run")
      ->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_mem->add_option("--workers", mbo->workers, "1-core workers under the master (0: the master computes the tasks itself)")
      ->capture_default_str();
  bench_mem->add_option("--buffer", mbo->buffer, "Buffer bound B")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_mem->add_option("--dom-tasks", mbo->dom_tasks,
                        "Records of the results.json write comparison, streamed vs one nlohmann DOM (0: skip)")
      ->capture_default_str();
  bench_mem->add_option("--timeout", mbo->timeout, "seconds per run (0: none)")->capture_default_str()->check(cli_support::non_negative_seconds());
  bench_mem->add_flag("--array", mbo->array,
                      "A command bag array = \"1-TASKS\" running true (workers without cgroups) instead of no-op tasks; "
                      "prints the master's peak beside the 200 MB target and exits 1 above it");
  bench_mem->add_flag("--json", mbo->json, "JSON output (bytes_per_task, net_bytes_per_task, run, reference, results_json; "
                                           "with --array peak_mb, limit_mb, within_limit)");
  out.push_back({bench_mem, [mbo] { return bench::bench_memory(std::cout, *mbo); }});

  auto* bench_drift = bench->add_subcommand(
      "drift", "How steady this machine's speed is: a matmul loop on every core (or copies through its kernel, --probe), "
               "sampled, its stalls, and the best ratio a prediction checked on it can show");
  auto dbo = std::make_shared<bench::DriftBenchOptions>();
  auto probe = std::make_shared<std::string>("compute");
  bench_drift->add_option("--probe", *probe,
                          "compute: a matmul loop on every core (GFLOP/s); copy: 4 MiB messages through a Unix socket pair "
                          "between two threads (bytes/s), as task inputs move between a tree's processes on one machine; "
                          "both: one after the other")
      ->capture_default_str()
      ->check(CLI::IsMember({"compute", "copy", "both"}));
  bench_drift->add_option("--seconds", dbo->seconds, "Measuring time per probe, seconds")->capture_default_str()->check(cli_support::positive_seconds());
  bench_drift->add_option("--chunk", dbo->chunk, "Seconds per sample (default: compute 1, copy 0.2)")->check(cli_support::positive_seconds());
  bench_drift->add_option("--n", dbo->n, "matmul order (the quickstart's mm: 384)")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_drift->add_option("--calibration-window", dbo->calibration_window,
                          "Seconds an ideal calibration averages before a run (the quickstart's whole-task run: ~8)")
      ->capture_default_str()->check(cli_support::positive_seconds());
  bench_drift->add_option("--gap", dbo->gap, "Seconds from the calibration's end to the run's steady window")
      ->capture_default_str()->check(treefarm::cli_support::non_negative_number());
  bench_drift->add_option("--run-window", dbo->run_window, "Seconds of the run's steady window (the quickstart's: ~10)")
      ->capture_default_str()->check(cli_support::positive_seconds());
  bench_drift->add_option("--tolerance", dbo->tolerance, "A check's band: |measured / predicted - 1| <= tolerance")
      ->capture_default_str()->check(CLI::Range(1e-6, 1.0));
  bench_drift->add_option("--runs", dbo->runs, "Consecutive checks that must all land inside")
      ->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_drift->add_flag("--json", dbo->json, "JSON output (samples_gflops, analysis, stalls; copy: the same under \"copy\")");
  out.push_back({bench_drift, [dbo, probe] {
                   dbo->probe = *probe == "copy"   ? bench::DriftProbe::copy
                                : *probe == "both" ? bench::DriftProbe::both
                                                   : bench::DriftProbe::compute;
                   dbo->stop = &interrupted();
                   return bench::bench_drift(std::cout, *dbo);
                 }});

  auto* bench_inputs = bench->add_subcommand(
      "inputs", "The master's secret task inputs: fill time per input beside a memcpy of the same bytes, and the prefetcher");
  auto ibo = std::make_shared<bench::InputBenchOptions>();
  bench_inputs->add_option("--n", ibo->n, "Matrix order (2 n^2 doubles per input)")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_inputs->add_option("--inputs", ibo->inputs, "Inputs per measurement")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_inputs->add_option("--rounds", ibo->rounds, "Measurements per figure (the median is printed)")
      ->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_inputs->add_flag("--json", ibo->json, "JSON output");
  out.push_back({bench_inputs, [ibo] { return bench::bench_inputs(std::cout, *ibo); }});

  auto* bench_tasks = bench->add_subcommand(
      "tasks", "Tiny real tasks (matmul or matadd) through a master and two one-core workers, beside no-op tasks of the same tree");
  auto tbo = std::make_shared<bench::TasksBenchOptions>();
  bench_tasks->add_option("--kernel", tbo->kernel, "matmul or matadd")->capture_default_str()->check(CLI::IsMember({"matmul", "matadd"}));
  bench_tasks->add_option("--n", tbo->n, "Matrix order")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_tasks->add_option("--tasks", tbo->tasks, "Tasks per run; several (comma-separated) give the fitted exponent of run time against tasks")
      ->capture_default_str()->delimiter(',')->check(treefarm::cli_support::positive_number());
  bench_tasks->add_option("--buffer", tbo->buffer, "Buffer bound B (tasks)")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_tasks->add_option("--rounds", tbo->rounds, "Runs of each side per size, alternated")->capture_default_str()->check(CLI::Range(1, 100));
  bench_tasks->add_option("--inputs", tbo->inputs, "The master's task inputs: secret (a fresh input per task) or pooled")
      ->capture_default_str()->check(CLI::IsMember({"secret", "pooled"}));
  bench_tasks->add_option("--ceiling-frames", tbo->ceiling_frames,
                          "The raw ZeroMQ reference's frames: batch (one per batch, inputs copied in, as the tree) or task (one zero-copy frame per input and per result)")
      ->capture_default_str()->check(CLI::IsMember({"batch", "task"}));
  bench_tasks->add_flag("--json", tbo->json, "JSON output");
  out.push_back({bench_tasks, [tbo] { return bench::bench_tasks(std::cout, *tbo); }});

  auto* bench_workers = bench->add_subcommand(
      "workers", "One bag through 1, 4, ... real worker processes: join time, throughput, the master's CPU and memory per worker");
  auto wbo = std::make_shared<bench::WorkersBenchOptions>();
  bench_workers->add_option("--workers", wbo->workers, "Worker processes per run (1 core each), comma-separated")
      ->capture_default_str()->delimiter(',')->check(CLI::Range(1u, 4096u));
  bench_workers->add_option("--buffers", wbo->buffers, "Buffer bounds B (tasks), comma-separated: one series each")
      ->capture_default_str()->delimiter(',')->check(treefarm::cli_support::positive_number());
  bench_workers->add_option("--depth", wbo->depth, "1: every worker under the master; 2: under 0-core forwarders")
      ->capture_default_str()->check(CLI::Range(1, 2));
  bench_workers->add_option("--forwarders", wbo->forwarders, "Forwarders at depth 2")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_workers->add_option("--kernel", wbo->kernel, "matmul, matadd or noop")
      ->capture_default_str()->check(CLI::IsMember({"matmul", "matadd", "noop"}));
  bench_workers->add_option("--n", wbo->n, "Matrix order")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_workers->add_option("--tasks", wbo->tasks, "Tasks per run")->capture_default_str()->check(treefarm::cli_support::positive_number());
  bench_workers->add_option("--timeout", wbo->timeout, "seconds per run (0: none)")->capture_default_str()->check(cli_support::non_negative_seconds());
  bench_workers->add_flag("--json", wbo->json, "JSON output");
  bench_workers->add_option("--plot", wbo->plot, "Write the curves (the master's CPU per 1,000 tasks against workers, log-log) to this PNG")
      ->check(png_path());
  out.push_back({bench_workers, [wbo] { return bench::bench_workers(std::cout, *wbo); }});

  auto* bench_lp = bench->add_subcommand("lp", "LP build + solve time for random trees of growing size, 10 applications");
  auto lp_sizes = std::make_shared<std::vector<std::size_t>>(std::vector<std::size_t>{100, 1000, 10000});
  bench_lp->add_option("--sizes", *lp_sizes, "Nodes of the random trees, comma-separated")
      ->capture_default_str()->delimiter(',')->check(CLI::Range(2u, 10000000u));
  auto lp_plot = std::make_shared<std::string>();
  bench_lp->add_option("--plot", *lp_plot, "Write the curves (seconds against nodes, log-log) to this PNG")
      ->check(png_path());
  out.push_back({bench_lp, [lp_sizes, lp_plot] {
                   bench::bench_lp(std::cout, *lp_sizes, *lp_plot);
                   return 0;
                 }});
}

}  // namespace treefarm::cli
