#pragma once
/// @file DriftBench.hpp
/// `treefarm bench drift`: how steady this machine's own speed is, the floor
/// under any prediction checked on it. The compute probe: a matmul loop runs on every
/// usable core (a thread pinned to each, as the executor runs tasks) for `seconds`, and
/// the flop/s of all cores together is sampled every `chunk` seconds. The copy probe: the
/// bytes/s this machine copies through its kernel between two threads
/// (tools/bench/CopyDrift.hpp), as task inputs move between the processes of a tree on one
/// machine. Nothing of treefarm's runtime runs.
///
/// From the samples: the spread of the mean over windows of 5–60 s, and the **best
/// possible prediction** of a run on this machine: a calibration that measured the
/// machine's mean speed exactly over the `calibration_window` seconds before a run, set
/// against the mean over the run's `run_window` seconds starting `gap` seconds later. The
/// ratio's spread over every such pair in the samples, the share of pairs within
/// ±`tolerance`, and that share to the power `runs` (the chance that `runs` consecutive
/// checks all land inside, treating them as independent) say what a prediction check can
/// show on this machine, whatever the model. The quickstart's defaults: ~8 s of whole-task
/// calibration, a steady window of ~10 s a few seconds later (docs/calibration.md).

#include <atomic>
#include <cstdint>
#include <ostream>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::bench {

/// What `bench drift` samples.
enum class DriftProbe { compute, copy, both };

struct DriftBenchOptions {
  DriftProbe probe = DriftProbe::compute;  ///< compute, copy, or both one after the other.
  double seconds = 300;               ///< Measuring time per probe, s (> 0).
  double chunk = 0;                   ///< Seconds per sample (> 0); 0: the probe's (compute 1, copy 0.2).
  std::uint32_t n = 384;              ///< matmul order (the quickstart's mm), >= 1.
  double calibration_window = 8;      ///< s the ideal calibration averages (> 0).
  double gap = 3;                     ///< s between its end and the run's window (>= 0).
  double run_window = 10;             ///< s of the run's steady window (> 0).
  double tolerance = 0.05;            ///< The band of a check: |ratio - 1| <= tolerance.
  std::uint32_t runs = 5;             ///< Consecutive checks that must all land inside.
  bool json = false;                  ///< JSON instead of text.
  /// Polled every sample: when it becomes true (Ctrl-C), measuring stops and what was
  /// sampled so far is reported. Null: never.
  const std::atomic<bool>* stop = nullptr;
};

/// The spread of the mean of consecutive, non-overlapping windows of `seconds`.
struct WindowSpread {
  double seconds = 0;
  std::size_t windows = 0;
  double cv = 0;  ///< standard deviation / mean of the window means (0 with < 2 windows)
};

/// What analyse_drift finds in a series of samples.
struct DriftAnalysis {
  double mean = 0;                    ///< Mean sample (the samples' unit).
  double chunk_cv = 0;                ///< Standard deviation / mean of the samples.
  std::vector<WindowSpread> windows;  ///< 5, 10, 20, 30, 60 s (those that fit twice).
  std::size_t pairs = 0;              ///< (calibration, run) pairs that fit in the series.
  double ratio_sd = 0;                ///< Standard deviation of run mean / calibration mean.
  double ratio_min = 0, ratio_max = 0;
  double inside = 0;                  ///< Share of pairs with |ratio - 1| <= tolerance.
  double all_inside = 0;              ///< inside ^ runs.
};

/// Analyses `samples` taken every `chunk` seconds with the windows, tolerance and runs of
/// `options` (windows rounded to whole samples, at least one). No pair fits: pairs = 0 and
/// the ratio figures 0. Throws std::invalid_argument for a chunk or window <= 0.
DriftAnalysis analyse_drift(const std::vector<double>& samples, double chunk, const DriftBenchOptions& options);

nlohmann::json to_json(const DriftAnalysis& analysis);

/// Measures (see the file comment), then prints, for the compute probe, the machine's
/// flop/s (total, per core, beside the measured FMA peak of a core: tasks/CpuPeak.hpp),
/// for the copy probe its median bytes/s, and for each the analysis, its stalls
/// (CopyDrift.hpp) and a verdict line. JSON: {"benchmark": "drift", "probe", and for the
/// compute probe "cores", "gflops", "gflops_per_core", "peak_gflops_per_core",
/// "samples_gflops", "analysis": to_json(...), "stalls"; for the copy probe "copy":
/// {"message_bytes", "bytes_per_s", "samples_bytes_per_s", "analysis", "stalls"};
/// "options"}.
/// @return 0, or 130 when `options.stop` cut the measurement short (the samples so far
/// are still reported). @throws std::invalid_argument for a bad option.
int bench_drift(std::ostream& out, const DriftBenchOptions& options);

}  // namespace treefarm::bench
