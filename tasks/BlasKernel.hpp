#pragma once
/// @file BlasKernel.hpp
/// Which BLAS this process loaded, which kernel it chose, and the choice of the fastest
/// kernel the CPU allows ("BLAS").
///
/// OpenBLAS picks its kernel from a table of CPU models when the library loads; a model
/// newer than its table gets an old kernel (Debian's 0.3.21 runs Prescott on Intel family 6
/// model 207: 5x below the CPU). The documented override is the environment variable
/// `OPENBLAS_CORETYPE`, read once when the library initialises, so it must be set before
/// the process starts. `select_blas_kernel` does that for treefarm's own executables: it
/// is called first thing in each main; when the kernel in use is not the fastest one the
/// CPU's flags (cpuid: AVX, AVX2+FMA, AVX-512) allow, it re-executes the binary with
/// `OPENBLAS_CORETYPE` set. "Fastest" is measured, not looked up: each allowed kernel runs
/// a short dgemm in a child process, and the winner is cached per host.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::tasks {

/// Instruction-set features that decide which BLAS kernels can run (cpuid, with the OS
/// saving the wide registers: xgetbv).
struct CpuFeatures {
  std::string vendor;     ///< cpuid vendor string, e.g. "GenuineIntel", "AuthenticAMD".
  int family = 0;         ///< Display family (base + extended).
  int model = 0;          ///< Display model (base + extended).
  std::string brand;      ///< Brand string, e.g. "AMD EPYC".
  bool avx = false;       ///< AVX usable (cpuid and OS YMM state).
  bool avx2_fma = false;  ///< AVX2 and FMA3 usable.
  /// AVX-512 F, CD, BW, DQ and VL usable (the set OpenBLAS's SkylakeX kernel needs).
  bool avx512 = false;
  bool avx512_bf16 = false;  ///< AVX-512 BF16 usable (OpenBLAS's Cooperlake kernel).
};

/// Reads the features of the CPU running this process.
CpuFeatures detect_cpu_features();

/// OpenBLAS kernel names (values of OPENBLAS_CORETYPE) the CPU can run, oldest first:
/// Prescott always; Sandybridge with AVX; Haswell with AVX2+FMA; SkylakeX with AVX-512;
/// Cooperlake with AVX-512 BF16.
std::vector<std::string> allowed_kernels(const CpuFeatures& cpu);

/// The BLAS this process loaded.
struct BlasInfo {
  std::string library;  ///< "OpenBLAS" + version, from openblas_get_config().
  std::string kernel;   ///< Kernel in use, from openblas_get_corename(), e.g. "Haswell".
  std::string config;   ///< openblas_get_config() verbatim.
  bool serial = false;  ///< Single-threaded build (openblas_get_parallel() == 0).
  /// How the kernel was chosen: "library" (the BLAS's own table), "environment"
  /// (OPENBLAS_CORETYPE set by whoever started the process), "measured" (set by
  /// select_blas_kernel after measuring), "cached" (set from the per-host cache).
  std::string selected_by;
};

/// Asks the loaded OpenBLAS.
BlasInfo blas_info();

/// {"library", "kernel", "config", "serial", "selected_by"}.
nlohmann::json to_json(const BlasInfo& info);

/// Called first thing in main() of every treefarm executable, before anything uses BLAS.
/// - With TREEFARM_BLAS_PROBE set (internal): measures single-core dgemm with the loaded
///   kernel, prints "GFLOPS <value>" and exits.
/// - With OPENBLAS_CORETYPE already set (by the user, or by a previous re-exec), or
///   TREEFARM_BLAS_SELECT=0: returns.
/// - Otherwise finds the fastest allowed kernel (from the per-host cache file
///   blas_cache_path(), or by measuring each allowed kernel in a child process, about
///   0.3 s each, then caching), and if it is not the kernel in use re-executes
///   /proc/self/exe with the same argv and OPENBLAS_CORETYPE set. Never throws: on any
///   failure it keeps the library's choice and says why on stderr.
void select_blas_kernel(char** argv);

/// Cache of the measured choice: $XDG_CACHE_HOME/treefarm/blas-kernel.json, else
/// $HOME/.cache/treefarm/blas-kernel.json, else /tmp/treefarm-blas-kernel-<uid>.json.
std::string blas_cache_path();

/// Single-core dgemm rate of the loaded kernel, GFLOP/s (1e9 flop/s), order n, for at
/// least `seconds` of computation (best of the repetitions).
double measure_dgemm_gflops(int n, double seconds);

}  // namespace treefarm::tasks
