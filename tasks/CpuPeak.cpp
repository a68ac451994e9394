#include "tasks/CpuPeak.hpp"

#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "tasks/BlasKernel.hpp"

namespace treefarm::tasks {

namespace {

/// This thread's CPU time, seconds: time the thread was descheduled (the machine is
/// shared) does not count, so the loops measure the core, not the load.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// 100 dependent adds per iteration; the loop counter runs on another port in parallel.
std::uint64_t add_chain(std::uint64_t iterations) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(
        ".rept 100\n\t"
        "add $1, %0\n\t"
        ".endr"
        : "+r"(x));
  }
  return x;
}

double measure_ghz() {
  add_chain(200000);  // warm-up: let the clock ramp up
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    constexpr std::uint64_t iterations = 400000;  // 40M adds, ~15 ms at 2.5 GHz
    const double t0 = thread_seconds();
    add_chain(iterations);
    const double s = thread_seconds() - t0;
    best = std::max(best, static_cast<double>(iterations) * 100.0 / s / 1e9);
  }
  return best;
}

constexpr int kAccumulators = 12;

__attribute__((target("avx512f"))) double fma_avx512(std::uint64_t iterations) {
  __m512d acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm512_set1_pd(1.0 + i * 1e-3);
  const __m512d m = _mm512_set1_pd(0.999999), a = _mm512_set1_pd(1e-7);
  // Unrolled by hand: with a loop over acc[] the compiler may keep the accumulators in
  // memory, and store-to-load forwarding then bounds the loop instead of the FMA units.
  for (std::uint64_t it = 0; it < iterations; ++it) {
    acc[0] = _mm512_fmadd_pd(acc[0], m, a); acc[1] = _mm512_fmadd_pd(acc[1], m, a);
    acc[2] = _mm512_fmadd_pd(acc[2], m, a); acc[3] = _mm512_fmadd_pd(acc[3], m, a);
    acc[4] = _mm512_fmadd_pd(acc[4], m, a); acc[5] = _mm512_fmadd_pd(acc[5], m, a);
    acc[6] = _mm512_fmadd_pd(acc[6], m, a); acc[7] = _mm512_fmadd_pd(acc[7], m, a);
    acc[8] = _mm512_fmadd_pd(acc[8], m, a); acc[9] = _mm512_fmadd_pd(acc[9], m, a);
    acc[10] = _mm512_fmadd_pd(acc[10], m, a); acc[11] = _mm512_fmadd_pd(acc[11], m, a);
  }
  alignas(64) double out[8];
  double sum = 0;
  for (int i = 0; i < kAccumulators; ++i) {
    _mm512_store_pd(out, acc[i]);
    for (double v : out) sum += v;
  }
  return sum;
}

__attribute__((target("avx2,fma"))) double fma_avx2(std::uint64_t iterations) {
  __m256d acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm256_set1_pd(1.0 + i * 1e-3);
  const __m256d m = _mm256_set1_pd(0.999999), a = _mm256_set1_pd(1e-7);
  // Unrolled by hand: with a loop over acc[] the compiler may keep the accumulators in
  // memory, and store-to-load forwarding then bounds the loop instead of the FMA units.
  for (std::uint64_t it = 0; it < iterations; ++it) {
    acc[0] = _mm256_fmadd_pd(acc[0], m, a); acc[1] = _mm256_fmadd_pd(acc[1], m, a);
    acc[2] = _mm256_fmadd_pd(acc[2], m, a); acc[3] = _mm256_fmadd_pd(acc[3], m, a);
    acc[4] = _mm256_fmadd_pd(acc[4], m, a); acc[5] = _mm256_fmadd_pd(acc[5], m, a);
    acc[6] = _mm256_fmadd_pd(acc[6], m, a); acc[7] = _mm256_fmadd_pd(acc[7], m, a);
    acc[8] = _mm256_fmadd_pd(acc[8], m, a); acc[9] = _mm256_fmadd_pd(acc[9], m, a);
    acc[10] = _mm256_fmadd_pd(acc[10], m, a); acc[11] = _mm256_fmadd_pd(acc[11], m, a);
  }
  alignas(32) double out[4];
  double sum = 0;
  for (int i = 0; i < kAccumulators; ++i) {
    _mm256_store_pd(out, acc[i]);
    sum += out[0] + out[1] + out[2] + out[3];
  }
  return sum;
}

double fma_sse2(std::uint64_t iterations) {
  __m128d acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm_set1_pd(1.0 + i * 1e-3);
  const __m128d m = _mm_set1_pd(0.999999), a = _mm_set1_pd(1e-7);
  for (std::uint64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kAccumulators; ++i) acc[i] = _mm_add_pd(_mm_mul_pd(acc[i], m), a);
  alignas(16) double out[2];
  double sum = 0;
  for (int i = 0; i < kAccumulators; ++i) {
    _mm_store_pd(out, acc[i]);
    sum += out[0] + out[1];
  }
  return sum;
}

double cpuinfo_mhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return std::atof(line.c_str() + colon + 1);
    }
  }
  return 0;
}

}  // namespace

CpuPeak measure_cpu_peak() {
  CpuPeak p;
  const CpuFeatures cpu = detect_cpu_features();
  p.cpuinfo_mhz = cpuinfo_mhz();
  p.ghz = measure_ghz();
  int doubles = 2;
  double (*loop)(std::uint64_t) = fma_sse2;
  p.vector_isa = "sse2";
  if (cpu.avx512) {
    loop = fma_avx512;
    doubles = 8;
    p.vector_isa = "avx512";
  } else if (cpu.avx2_fma) {
    loop = fma_avx2;
    doubles = 4;
    p.vector_isa = "avx2";
  }
  volatile double sink = loop(100000);  // warm-up: wide units powered up
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    constexpr std::uint64_t iterations = 1000000;
    const double t0 = thread_seconds();
    sink = sink + loop(iterations);
    const double s = thread_seconds() - t0;
    best = std::max(best, static_cast<double>(iterations) * kAccumulators * doubles * 2.0 / s / 1e9);
  }
  p.measured_flop_per_cycle = best / p.ghz;
  p.flop_per_cycle = 1 << static_cast<int>(std::lround(std::log2(std::max(1.0, p.measured_flop_per_cycle))));
  p.peak_gflops = p.ghz * p.flop_per_cycle;
  std::ostringstream m;
  m << "clock from a chain of dependent integer adds (1 cycle each) timed in thread CPU time; flop/cycle from a timed loop of "
       "independent "
    << p.vector_isa << " FMAs, rounded to a power of two";
  p.method = m.str();
  return p;
}

nlohmann::json to_json(const CpuPeak& p) {
  return {{"ghz", p.ghz},
          {"cpuinfo_mhz", p.cpuinfo_mhz},
          {"vector_isa", p.vector_isa},
          {"measured_flop_per_cycle", p.measured_flop_per_cycle},
          {"flop_per_cycle", p.flop_per_cycle},
          {"peak_gflops_per_core", p.peak_gflops},
          {"method", p.method}};
}

}  // namespace treefarm::tasks
