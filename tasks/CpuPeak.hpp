#pragma once
/// @file CpuPeak.hpp
/// The per-core double-precision FMA peak, measured rather than looked up:
/// peak = clock (GHz) x flop per cycle at the widest vector width the CPU runs.
///
/// - Clock: a timed chain of dependent integer adds (1 cycle each on every x86 core since
///   the P6), so cycles = adds; the result is the clock the core really runs at under
///   load (turbo included), not the nominal one. /proc/cpuinfo's "cpu MHz" is reported
///   beside it.
/// - Flop per cycle: a timed loop of independent FMAs (12 accumulators, enough to cover
///   latency x issue width) at the widest width cpuid allows (AVX-512: 8 doubles, AVX2:
///   4, else SSE2 mul+add: 2), divided by the clock and rounded to the nearest power of
///   two. This finds how many FMA units the core has (1 or 2 per width; Zen 4 runs
///   AVX-512 on 256-bit units) without a model table.

#include <string>

#include <nlohmann/json.hpp>

namespace treefarm::tasks {

/// Measured per-core peak.
struct CpuPeak {
  double ghz = 0;               ///< Measured clock, GHz (dependent-add loop).
  double cpuinfo_mhz = 0;       ///< "cpu MHz" of /proc/cpuinfo for the first CPU, MHz; 0 if absent.
  std::string vector_isa;       ///< "avx512", "avx2" or "sse2": the FMA loop's width.
  double measured_flop_per_cycle = 0;  ///< FMA loop's double flop per cycle, unrounded.
  int flop_per_cycle = 0;       ///< The same rounded to a power of two.
  double peak_gflops = 0;       ///< ghz x flop_per_cycle, GFLOP/s (1e9 flop/s) per core.
  std::string method;           ///< One sentence: how the figures were measured.
};

/// Measures the core this thread runs on; takes about 0.3 s.
CpuPeak measure_cpu_peak();

/// {"ghz", "cpuinfo_mhz", "vector_isa", "measured_flop_per_cycle", "flop_per_cycle",
///  "peak_gflops_per_core", "method"}.
nlohmann::json to_json(const CpuPeak& peak);

}  // namespace treefarm::tasks
