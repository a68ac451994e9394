// tasks/BlasKernel and tasks/CpuPeak: which kernels the CPU flags allow, what the loaded
// OpenBLAS reports, where the per-host cache lives, and a measured peak that bounds dgemm.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tasks/BlasKernel.hpp"
#include "tasks/CpuPeak.hpp"

using treefarm::tasks::allowed_kernels;
using treefarm::tasks::CpuFeatures;

TEST(BlasKernel, AllowedKernelsFollowTheFlags) {
  CpuFeatures none;
  EXPECT_EQ(allowed_kernels(none), (std::vector<std::string>{"Prescott"}));
  CpuFeatures avx2;
  avx2.avx = avx2.avx2_fma = true;
  EXPECT_EQ(allowed_kernels(avx2), (std::vector<std::string>{"Prescott", "Sandybridge", "Haswell"}));
  CpuFeatures avx512 = avx2;
  avx512.avx512 = true;
  EXPECT_EQ(allowed_kernels(avx512).back(), "SkylakeX");
  avx512.avx512_bf16 = true;
  EXPECT_EQ(allowed_kernels(avx512).back(), "Cooperlake");
}

TEST(BlasKernel, CpuFeaturesAreConsistent) {
  const CpuFeatures c = treefarm::tasks::detect_cpu_features();
  EXPECT_FALSE(c.vendor.empty());
  EXPECT_GT(c.family, 0);
  if (c.avx512) {
    EXPECT_TRUE(c.avx2_fma);
  }
  if (c.avx2_fma) {
    EXPECT_TRUE(c.avx);
  }
}

TEST(BlasKernel, LoadedOpenBlasNamesItselfAndAnAllowedKernel) {
  const auto info = treefarm::tasks::blas_info();
  EXPECT_EQ(info.library.rfind("OpenBLAS ", 0), 0u) << info.library;
  EXPECT_FALSE(info.kernel.empty());
  const auto allowed = allowed_kernels(treefarm::tasks::detect_cpu_features());
  // The library's own table or our selection: never a kernel the flags forbid.
  bool found = false;
  for (const auto& k : allowed) found = found || k == info.kernel;
  // Kernels outside our list (e.g. Zen) are allowed by the library's own table.
  if (!found) {
    EXPECT_EQ(info.selected_by, "library") << info.kernel;
  }
  const auto j = treefarm::tasks::to_json(info);
  EXPECT_TRUE(j.contains("library") && j.contains("kernel"));
}

TEST(BlasKernel, CachePathFollowsXdgCacheHome) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("XDG_CACHE_HOME", "/some/where", 1);
  EXPECT_EQ(treefarm::tasks::blas_cache_path(), "/some/where/treefarm/blas-kernel.json");
  if (old != nullptr) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
}

TEST(CpuPeak, PeakIsPlausibleAndBoundsDgemm) {
  const auto p = treefarm::tasks::measure_cpu_peak();
  EXPECT_GT(p.ghz, 0.3);
  EXPECT_LT(p.ghz, 7.0);
  EXPECT_GE(p.flop_per_cycle, 2);
  EXPECT_LE(p.flop_per_cycle, 64);
  // dgemm cannot beat the FMA peak (10% slack for clock changes between the loops).
  const double dgemm = treefarm::tasks::measure_dgemm_gflops(192, 0.1);
  EXPECT_GT(dgemm, 0.0);
  EXPECT_LT(dgemm, 1.1 * p.peak_gflops) << "peak " << p.peak_gflops << " GFLOP/s";
}
