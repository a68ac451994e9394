#pragma once
/// @file HostCalibration.hpp
/// What the nodes of a tree started on one machine share (docs/lp.md "Hosts"):
/// the machine's CPUs, each node's pinned CPUs and the share of them it had while all
/// nodes measured their task durations at once, and the CPU cost of a byte moved between
/// two of its processes. `treefarm calibrate` and `treefarm run --calibrate` add it to the
/// calibration file; the LP then has one CPU row per host and per shared CPU set.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"
#include "tools/CommCost.hpp"
#include "tools/SteadyRate.hpp"
#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

/// Share of its CPUs' time each node had while every node kept all its cores busy at
/// once (a calibration run): node u runs cores_u threads spread over its CPU set C_u; a
/// CPU c carries n_c = Σ_{v: c ∈ C_v} cores_v / |C_v| busy threads, and
/// share_u = mean_{c ∈ C_u} min(1, 1/n_c). `cores[u]` is node u's cores, `cpus[u]` its
/// CPU set (empty: it computes nothing, share 1).
std::vector<double> cpu_shares(const std::vector<std::uint32_t>& cores, const std::vector<std::vector<int>>& cpus);

/// What the runtime spends per byte of a task's input at the two ends of its way, beyond
/// the moves between nodes (docs/lp.md "Hosts"), measured on this machine.
struct TaskEndCost {
  /// CPU seconds per byte the origin spends generating a task's input: a fresh buffer per
  /// task, filled and released, as the master does (tasks::fill_input), over many buffers
  /// (cold memory, as in a run).
  double input_cpu_seconds_per_byte = 0;
  /// CPU seconds per byte at the node that computes the task beyond the move and the
  /// generation: the whole per-byte CPU of a real master → worker tree moving no-op tasks
  /// of that size (both processes, all threads, from two runs of different lengths so that
  /// start-up cancels) minus γ and the generation; >= 0.
  double receive_cpu_seconds_per_byte = 0;
  /// The whole per-byte CPU of that tree (one hop), for the log.
  double tree_cpu_seconds_per_byte = 0;
};

/// Measures TaskEndCost for inputs of `app` (its kernel and size) through treefarm-master
/// and treefarm-worker started on this machine (about 3 s), `gamma` being the move's cost
/// (measure_comm_cost). Inputs under 64 KiB: per-task costs dominate, nothing is measured
/// (zeros). Throws std::runtime_error if a measuring run fails.
TaskEndCost measure_task_end_cost(const model::AppSpec& app, double gamma, bool encrypt,
                                  const std::string& bin_dir = "");

/// The run of the applications together that measure_task_cpu() reads as its journal grows
/// (docs/calibration.md, "Hosts"): its steady span in kMixWindows equal windows; it stops
/// once a span of at least kMixMinSpan seconds has a 95 % band and dip band together
/// (SteadyRate::band + dip_band) no wider than kMixTightBand, else at kMixCapSeconds (its last completion), else at its last task.
/// Its length is set by the clock, not by the tasks a first guess of their cost sized.
inline constexpr std::size_t kMixWindows = 8;
/// A span as long as the run's own steady window will nearly be: the run's figure is the
/// machine over ~10 s, and a span of 4-7 s (the run stopped at the first tight band)
/// sampled a moment of it. Twenty quickstarts on a 2-core VM: of the 11 calibrations
/// stopped before 10 s, 5 predicted within ±5 % (mean ratio 0.982); of the 9 that ran to
/// 10 s, 6 (mean 1.012).
inline constexpr double kMixMinSpan = 8.0;      ///< seconds
inline constexpr double kMixTightBand = 0.10;   ///< relative width (an interval within ±5 %)
inline constexpr double kMixCapSeconds = 10.0;  ///< seconds
/// Seconds of the host's CPUs (by the first guess) each application runs alone, per round.
inline constexpr double kAloneSeconds = 0.6;

/// Host seconds per task of an application run alone (measure_task_cpu, for the ratios
/// between applications): `host_cores` times the mean time between its completions `done`,
/// from the first to the last — the tree's start-up before its first result is left out.
/// Over the master's window [εT, (1 − ε)T] instead, the quickstart's 4 MiB matadd (first
/// result 0.23-0.28 s into a 0.6-0.75 s run, matmul's 0.15 s) cost 4.3-12.2 CPU-ms in 30
/// calibrations of one day (from its first result, 12 calibrations: 2.2-3.8), and eight
/// quickstarts predicted 306-417 tasks/s (from the first result: 377-422). Fewer than 20 completions: `host_cores` over
/// `fair_throughput`. Throws std::invalid_argument if both are unusable.
double alone_seconds_per_task(const std::vector<Completion>& done, double fair_throughput, double host_cores);

/// Why the run together stopped, or that it goes on.
enum class MixStop { running, tight, capped, ended };

/// What read_mix_run() finds in the journal so far.
struct MixReading {
  MixStop stop = MixStop::running;
  SteadyRate steady;         ///< the steady span's windows (when there are enough completions)
  bool has_steady = false;   ///< false: too few completions for kMixWindows windows yet
};

/// Reads the run together's `done` completions (weights `weight`, relative costs `cost`,
/// task counts `tasks`, as steady_rate takes them); `ended`: the run had all its tasks done.
/// Stops when tight, else when its last completion is at kMixCapSeconds or later, else when
/// it ended. Throws std::invalid_argument as steady_rate does for bad sizes or weights.
MixReading read_mix_run(const std::vector<Completion>& done, const std::vector<double>& weight,
                        const std::vector<double>& cost, const std::vector<std::uint64_t>& tasks, bool ended);

/// The spread the calibration records (`task_cpu_spread`) for a run together that stopped
/// for `stop` with a final 95 % band `band`: a run stopped at the first tight band picks it
/// too narrow (optional stopping), so it records at least kMixTightBand then; a run that
/// the clock or its last task ended records its band as it is, wide or not.
double mix_spread(MixStop stop, double band);

/// What one task of each application costs this machine's CPUs as a whole.
struct TaskCpuCosts {
  /// Per application: the host's CPU seconds per task (its CPUs × the wall seconds a task
  /// takes, so a CPU the runtime leaves idle counts) when the applications run together.
  std::map<std::string, double> seconds;
  std::map<std::string, double> alone;  ///< The same, each application alone (its ratios only): the lower of its rounds.
  std::map<std::string, std::vector<double>> alone_rounds;  ///< Each round's figure alone, in order.
  double mix_scale = 1;                 ///< seconds / alone (1 with one application).
  /// Relative width of the 95 % prediction interval of a next span's rate (SteadyRate::band)
  /// from the steady windows of the run together: what `task_cpu_spread` records.
  double spread = 0;
  double window_spread = 0;  ///< (max - min) / mean of those windows' rates, for the log.
  /// Share of a next span's work its dips may lose (SteadyRate::dip_band): what
  /// `task_cpu_dip` records.
  double dip = 0;
  std::size_t dips = 0;  ///< windows that dipped, for the log
  /// Each steady window's host seconds per unit of weight (per task with one application),
  /// in order, for the log.
  std::vector<double> repeats;
  double steady_start = 0, steady_end = 0;  ///< seconds into the run together: its steady span
  double run_seconds = 0;     ///< its last journaled completion, seconds into it
  bool stopped_early = false;  ///< stopped once its estimate was tight, before its last task
  MixStop stop = MixStop::ended;  ///< why the run together stopped
  double busy = 0;                      ///< Share of the host's CPU time the processes used.
  /// The tree's CPU / (its CPU + the machine's idle time) over the run together's steady
  /// span (run_busy_share; none: not measured): what HostCalibration::busy_share records.
  std::optional<double> busy_share;
  std::uint32_t workers = 0;
  std::uint32_t worker_cores = 1;       ///< Cores of each (the widest cores_per_task).
};

/// Runs the applications of `estimates` (name -> a guess of its CPU seconds per task, to
/// size the runs) with their real kernels and sizes on a treefarm-master and `workers` /
/// c treefarm-workers of c cores each (c: the widest cores_per_task, at least 1) of this
/// machine, one hop below it (FCFS, the experiment's buffer and transport). With several
/// applications, each alone for ~kAloneSeconds in two rounds, before and after the run
/// together: host seconds per task = `host_cores` over the tasks/s the master measured, the
/// lower of the two rounds, for their ratios. Then all together in the experiment's
/// weights (or the one application) in one run of at most kMixCapSeconds (read_mix_run):
/// host seconds per unit of weight = `host_cores` over the median of the kMixWindows
/// windows' rates of the run's steady span read from its journal (steady_rate: warm-up
/// left out; their band recorded as mix_spread says), to which the costs alone are scaled. Throws std::runtime_error if a run fails.
/// `between`, when given, is called after each of these runs (the host calibration samples
/// the cost of a byte there: CommCostSeries).
TaskCpuCosts measure_task_cpu(const model::Experiment& experiment, const std::map<std::string, double>& estimates,
                              std::uint32_t workers, double host_cores, bool encrypt, const std::string& bin_dir = "",
                              const std::function<void()>& between = {});

/// Records in `calibration` one host `host_name` with `host_cores` CPUs and the
/// communication cost `cost` (and `ends`), every node of `experiment` on it with its CPU
/// set (`node_cpus`, CPU lists as TreeLauncher assigns them) and its cpu_shares() share.
void add_local_host(model::Calibration& calibration, const model::Experiment& experiment,
                    const std::vector<std::string>& node_cpus, double host_cores, const std::string& host_name,
                    const CommCost& cost, const TaskEndCost& ends = {});

/// After a calibration run of `experiment` on this machine, written to `file`: measures
/// the communication cost (payload-sized messages, CURVE if `encrypt`), adds this host
/// (CPU sets as launch_tree assigns them), measures each application's whole CPU per
/// task through the runtime (measure_task_cpu, one one-core worker per CPU; not for
/// `command` and abstract kernels) and rewrites the file. Prints one line to `log`.
void calibrate_local_host(const model::Experiment& experiment, const std::string& file, bool encrypt,
                          std::ostream& log, const std::string& bin_dir = "");

/// What a run that calibrates as it goes needs of this machine before it starts (about
/// 1 s; docs/live-model.md): a calibration of `experiment` holding only this host — its
/// CPUs, every node on it with its CPU set (as launch_tree assigns them) and cpu_shares()
/// share, and the CPU cost of a byte moved between two of its processes (CURVE if
/// `encrypt`) — and no task time: the run's own estimates give those. Prints one line to `log`.
model::Calibration local_host_only(const model::Experiment& experiment, bool encrypt, std::ostream& log);

/// After a calibration of `experiment` on an emulated LAN (`treefarm emulate`), written
/// to `file`: every node is a machine of its own, so each becomes a host of its own with
/// the CPU it may use — its `cpu_quota` (else its cpuset's size, else this machine's
/// CPUs) — its cpu_share = those cores / its cores (a quota slows each of its cores; its
/// sustained task times, CalibrationWindow, include that), and the CPU cost of a byte
/// measured on this machine (`treefarm emulate` runs every node on it). The LP's host rows
/// then charge each node the CPU its own transfers cost (half of every link's bytes on
/// each end; docs/lp.md "Hosts"), which a node with a twentieth of a core cannot ignore
/// (docs/results/emulation.md, lan-slices). Where the platform counts each node's
/// CPU time (`lo.node_cpu_seconds`, with `lo.wrap` and the endpoint hooks of the
/// platform), also each computing node's **whole CPU per task** of each application, on
/// its own link and under its own quota: the node alone below a master in its parent's
/// namespace, n then 3n tasks, the difference of its counted CPU seconds over the 2n
/// tasks (runs of about 3 s and 9 s per node and application), recorded as its host's
/// task_cpu_seconds (docs/lp.md "Hosts"). `lo` gives the transport (encrypt,
/// master_args, worker_args) and bin_dir. Prints one line to `log`.
void calibrate_emulated_hosts(const model::Experiment& experiment, const std::string& file, const LaunchOptions& lo,
                              std::ostream& log);

}  // namespace treefarm::tools
