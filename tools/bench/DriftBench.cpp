#include "tools/bench/DriftBench.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iomanip>
#include <stdexcept>
#include <string>
#include <thread>

#include "runtime/exec/Topology.hpp"
#include "tasks/CpuPeak.hpp"
#include "tasks/Kernels.hpp"
#include "tasks/Payload.hpp"
#include "tools/bench/CopyDrift.hpp"
#include "tools/bench/ExecutorBenchSupport.hpp"

namespace treefarm::bench {

namespace {

using namespace exec_bench;

double mean_of(const std::vector<double>& v, std::size_t from, std::size_t count) {
  double sum = 0;
  for (std::size_t i = from; i < from + count; ++i) sum += v[i];
  return count ? sum / static_cast<double>(count) : 0.0;
}

/// Standard deviation / mean (population); 0 with fewer than two values or a mean of 0.
double cv_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v, 0, v.size());
  if (!(m > 0)) return 0;
  double ss = 0;
  for (const double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size())) / m;
}

/// A window of `seconds` in whole samples of `chunk` seconds (at least one).
std::size_t samples_in(double seconds, double chunk) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(seconds / chunk)));
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("bench drift: " + what);
}

void check(const DriftBenchOptions& o) {
  require(o.seconds > 0, "--seconds must be > 0");
  require(o.chunk >= 0, "--chunk must be > 0 (0: the probe's)");
  require(o.n >= 1, "--n must be >= 1");
  require(o.calibration_window > 0, "--calibration-window must be > 0");
  require(o.gap >= 0, "--gap must be >= 0");
  require(o.run_window > 0, "--run-window must be > 0");
  require(o.tolerance > 0, "--tolerance must be > 0");
  require(o.runs >= 1, "--runs must be >= 1");
}

}  // namespace

DriftAnalysis analyse_drift(const std::vector<double>& samples, double chunk, const DriftBenchOptions& options) {
  require(chunk > 0, "the sampling interval must be > 0");
  require(options.calibration_window > 0 && options.run_window > 0 && options.gap >= 0, "windows must be > 0");
  DriftAnalysis a;
  const std::size_t n = samples.size();
  if (n == 0) return a;
  a.mean = mean_of(samples, 0, n);
  a.chunk_cv = cv_of(samples);
  for (const double seconds : {5.0, 10.0, 20.0, 30.0, 60.0}) {
    const std::size_t w = samples_in(seconds, chunk);
    if (2 * w > n) continue;
    std::vector<double> means;
    for (std::size_t i = 0; i + w <= n; i += w) means.push_back(mean_of(samples, i, w));
    a.windows.push_back({static_cast<double>(w) * chunk, means.size(), cv_of(means)});
  }
  // The ideal calibration: the exact mean over the window before t; the run: the mean
  // over its window from t + gap. Every t where both fit.
  const std::size_t lc = samples_in(options.calibration_window, chunk);
  const std::size_t lr = samples_in(options.run_window, chunk);
  const auto gap = static_cast<std::size_t>(std::llround(options.gap / chunk));
  std::vector<double> ratios;
  for (std::size_t t = lc; t + gap + lr <= n; ++t) {
    const double calibrated = mean_of(samples, t - lc, lc);
    if (calibrated > 0) ratios.push_back(mean_of(samples, t + gap, lr) / calibrated);
  }
  a.pairs = ratios.size();
  if (ratios.empty()) return a;
  const double m = mean_of(ratios, 0, ratios.size());
  double ss = 0;
  std::size_t in = 0;
  for (const double r : ratios) {
    ss += (r - m) * (r - m);
    if (std::abs(r - 1) <= options.tolerance) ++in;
  }
  a.ratio_sd = std::sqrt(ss / static_cast<double>(ratios.size()));
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  a.ratio_min = *lo;
  a.ratio_max = *hi;
  a.inside = static_cast<double>(in) / static_cast<double>(ratios.size());
  a.all_inside = std::pow(a.inside, static_cast<double>(std::max<std::uint32_t>(1, options.runs)));
  return a;
}

nlohmann::json to_json(const DriftAnalysis& a) {
  nlohmann::json windows = nlohmann::json::array();
  for (const auto& w : a.windows) windows.push_back({{"seconds", w.seconds}, {"windows", w.windows}, {"cv", w.cv}});
  return {{"mean", a.mean},          {"chunk_cv", a.chunk_cv},   {"window_spread", windows},
          {"pairs", a.pairs},        {"ratio_sd", a.ratio_sd},   {"ratio_min", a.ratio_min},
          {"ratio_max", a.ratio_max}, {"inside", a.inside},      {"all_inside", a.all_inside}};
}

namespace {

/// The probe's sampling interval: --chunk, or 1 s for compute and 0.2 s for copy (a copy
/// stall lasts a fraction of a second).
double chunk_of(const DriftBenchOptions& o, DriftProbe probe) {
  return o.chunk > 0 ? o.chunk : probe == DriftProbe::copy ? 0.2 : 1.0;
}

/// What the compute probe measured.
struct ComputeSamples {
  std::vector<int> cores;
  tasks::CpuPeak peak;
  std::vector<double> gflops;  ///< all cores together, per sample
};

/// A matmul loop on every usable core, its GFLOP/s sampled every `chunk` seconds.
ComputeSamples sample_compute(std::ostream& out, const DriftBenchOptions& options, double chunk, bool& interrupted) {
  ComputeSamples r;
  r.cores = exec::discover_topology().cores;
  r.peak = tasks::measure_cpu_peak();
  const tasks::InputPool pool(matrix_app("drift", model::Kernel::matmul, options.n, 1), 1, 0, 1);
  const std::size_t elements = static_cast<std::size_t>(options.n) * options.n;
  const auto* input = reinterpret_cast<const double*>(pool.input(0)->data());
  // One counter per core, each on its own cache line.
  struct alignas(64) Counter {
    std::atomic<std::uint64_t> done{0};
  };
  std::vector<Counter> counters(r.cores.size());
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::atomic<int> pin_failures{0};
  for (std::size_t i = 0; i < r.cores.size(); ++i)
    threads.emplace_back([&, i] {
      if (!pin_this_thread(r.cores[i])) pin_failures.fetch_add(1);
      std::vector<double> c(elements);
      while (!stop.load(std::memory_order_relaxed)) {
        tasks::matmul(input, input + elements, c.data(), options.n);
        counters[i].done.fetch_add(1, std::memory_order_relaxed);
      }
    });
  const auto total = [&] {
    std::uint64_t sum = 0;
    for (const auto& c : counters) sum += c.done.load(std::memory_order_relaxed);
    return sum;
  };
  const auto start = Clock::now();
  auto last_time = start;
  std::uint64_t last_count = total();
  const auto chunks = static_cast<std::size_t>(std::max(1.0, std::floor(options.seconds / chunk)));
  for (std::size_t k = 1; k <= chunks; ++k) {
    if (options.stop && options.stop->load()) {
      interrupted = true;
      break;
    }
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(chunk * static_cast<double>(k))));
    const auto now = Clock::now();
    const std::uint64_t count = total();
    const double dt = std::chrono::duration<double>(now - last_time).count();
    r.gflops.push_back(static_cast<double>(count - last_count) * matmul_flops(options.n) / dt / 1e9);
    last_time = now;
    last_count = count;
    if (!options.json && options.seconds >= 30 && k % static_cast<std::size_t>(std::max(1.0, 30 / chunk)) == 0)
      out << "  " << fixed(static_cast<double>(k) * chunk, 0) << " s: last " << fixed(r.gflops.back(), 1)
          << " GFLOP/s" << std::endl;
  }
  stop = true;
  for (auto& t : threads) t.join();
  if (pin_failures > 0) throw std::runtime_error("bench drift: could not pin a thread to its core");
  return r;
}

/// The text lines every probe prints: the spread, the stalls and the best possible prediction.
void print_analysis(std::ostream& out, const DriftAnalysis& a, const Stalls& st, double chunk,
                    const DriftBenchOptions& options, const char* what) {
  out << "spread of the machine's " << what << " (sd / mean): " << fixed(a.chunk_cv * 100, 1) << " % over " << chunk
      << " s samples";
  for (const auto& w : a.windows) out << ", " << fixed(w.cv * 100, 1) << " % over " << fixed(w.seconds, 0) << " s windows";
  out << "\n";
  out << "stalls (samples below half the median): " << st.stalled << " of " << st.samples << " samples in " << st.episodes << " episode(s), the longest " << fixed(st.longest_seconds, 1)
      << " s; they cost " << fixed(st.lost_share * 100, 1) << " % of the median's work\n";
  if (a.pairs == 0) {
    out << "too short for a calibration window of " << options.calibration_window << " s, a gap of " << options.gap
        << " s and a run window of " << options.run_window << " s: measure longer (--seconds)\n";
    return;
  }
  out << "best possible prediction (the exact mean of the " << options.calibration_window << " s before, against the "
      << options.run_window << " s from " << options.gap << " s later; " << a.pairs << " pairs): ratio sd "
      << fixed(a.ratio_sd * 100, 1) << " %, from " << fixed(a.ratio_min, 3) << " to " << fixed(a.ratio_max, 3) << "; "
      << fixed(a.inside * 100, 0) << " % within ±" << fixed(options.tolerance * 100, 1) << " %, so "
      << options.runs << " checks in a row all inside: " << fixed(a.all_inside * 100, 0) << " %\n";
}

}  // namespace

int bench_drift(std::ostream& out, const DriftBenchOptions& options) {
  check(options);
  const bool compute = options.probe != DriftProbe::copy, copy = options.probe != DriftProbe::compute;
  const double load_before = load_average();
  nlohmann::json j = {{"benchmark", "drift"},
                      {"probe", compute && copy ? "both" : compute ? "compute" : "copy"},
                      {"n", options.n},
                      {"seconds", options.seconds},
                      {"load_average_before", load_before},
                      {"options",
                       {{"calibration_window", options.calibration_window},
                        {"gap", options.gap},
                        {"run_window", options.run_window},
                        {"tolerance", options.tolerance},
                        {"runs", options.runs}}}};
  bool interrupted = false;
  if (compute) {
    const double chunk = chunk_of(options, DriftProbe::compute);
    if (!options.json)
      out << "bench drift: a " << options.n << "x" << options.n << " matmul loop on every usable core for "
          << options.seconds << " s, sampled every " << chunk << " s; load average before " << fixed(load_before, 2)
          << std::endl;
    const auto c = sample_compute(out, options, chunk, interrupted);
    const DriftAnalysis a = analyse_drift(c.gflops, chunk, options);
    const Stalls st = find_stalls(c.gflops, chunk);
    const double per_core = a.mean / static_cast<double>(c.cores.size());
    j["cores"] = c.cores.size();
    j["chunk_seconds"] = chunk;
    j["gflops"] = a.mean;
    j["gflops_per_core"] = per_core;
    j["peak_gflops_per_core"] = c.peak.peak_gflops;
    j["samples_gflops"] = c.gflops;
    j["analysis"] = to_json(a);
    j["stalls"] = to_json(st);
    if (!options.json) {
      if (interrupted) out << "interrupted after " << c.gflops.size() << " samples: the figures below are of those\n";
      out << "machine: " << fixed(a.mean, 1) << " GFLOP/s on " << c.cores.size() << " core(s) (" << core_list(c.cores)
          << "), " << fixed(per_core, 1) << " per core = "
          << fixed(c.peak.peak_gflops > 0 ? per_core / c.peak.peak_gflops : 0, 3) << " of the FMA peak ("
          << fixed(c.peak.peak_gflops, 1) << " GFLOP/s per core, " << c.peak.vector_isa << ")\n";
      print_analysis(out, a, st, chunk, options, "speed");
    }
  }
  if (copy && !interrupted) {
    const double chunk = chunk_of(options, DriftProbe::copy);
    if (!options.json)
      out << "bench drift: messages of " << kCopyMessageBytes << " bytes copied through a Unix socket pair from a thread "
          << "on the first usable core to one on the second for " << options.seconds << " s, sampled every " << chunk << " s; load average "
          << fixed(load_average(), 2) << std::endl;
    const auto cpus = exec::discover_topology().cores;
    const auto samples = sample_kernel_copy(options.seconds, chunk, kCopyMessageBytes, cpus, options.stop, &interrupted);
    const DriftAnalysis a = analyse_drift(samples, chunk, options);
    const Stalls st = find_stalls(samples, chunk);
    j["copy"] = {{"message_bytes", kCopyMessageBytes}, {"chunk_seconds", chunk},
                 {"bytes_per_s", a.mean},              {"samples_bytes_per_s", samples},
                 {"analysis", to_json(a)},             {"stalls", to_json(st)}};
    if (!options.json) {
      if (interrupted) out << "interrupted after " << samples.size() << " samples: the figures below are of those\n";
      out << "kernel copy: mean " << fixed(a.mean / 1e9, 2) << " GB/s (" << fixed(a.mean, 0) << " bytes/s), median "
          << fixed(st.median / 1e9, 2) << " GB/s\n";
      print_analysis(out, a, st, chunk, options, "kernel copy");
    }
  }
  if (options.json) {
    j["interrupted"] = interrupted;
    out << j.dump(2) << "\n";
  }
  return interrupted ? 130 : 0;
}

}  // namespace treefarm::bench
