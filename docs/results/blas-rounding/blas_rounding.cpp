// "A cryptographic digest of the result?": does the same dgemm give the same bits
// under different OpenBLAS kernels / thread counts? Writes C = A·B (n×n, inputs from a
// fixed seed) to a file; compare the files with `compare`.
//   g++ -O2 -std=c++20 blas_rounding.cpp -o /tmp/blas_rounding -lopenblas
//   OPENBLAS_CORETYPE=Haswell OPENBLAS_NUM_THREADS=1 /tmp/blas_rounding write 1024 /tmp/c-haswell-1
//   /tmp/blas_rounding compare 1024 /tmp/c-haswell-1 /tmp/c-skylakex-1
#include <cblas.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "usage: %s write N FILE | compare N FILE1 FILE2\n", argv[0]), 2;
  const std::string mode = argv[1];
  const std::size_t n = std::stoul(argv[2]);
  std::vector<double> c(n * n);
  if (mode == "write") {
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> a(n * n), b(n * n);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    const int N = static_cast<int>(n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0, a.data(), N, b.data(), N, 0.0, c.data(), N);
    std::ofstream(argv[3], std::ios::binary).write(reinterpret_cast<const char*>(c.data()), static_cast<std::streamsize>(c.size() * 8));
    std::printf("%s: %s\n", argv[3], openblas_get_config());
    return 0;
  }
  std::vector<double> d(n * n);
  std::ifstream(argv[3], std::ios::binary).read(reinterpret_cast<char*>(c.data()), static_cast<std::streamsize>(c.size() * 8));
  std::ifstream(argv[4], std::ios::binary).read(reinterpret_cast<char*>(d.data()), static_cast<std::streamsize>(d.size() * 8));
  std::size_t differ = 0, bits = 0;
  std::int64_t max_ulp = 0;
  double sc = 0, sd = 0;  // a weighted checksum as the master's (weights from a fixed seed)
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> w(0.5, 1.5);
  for (std::size_t i = 0; i < n * n; ++i) {
    const auto x = std::bit_cast<std::int64_t>(c[i]), y = std::bit_cast<std::int64_t>(d[i]);
    if (x != y) {
      ++differ;
      bits += static_cast<std::size_t>(std::popcount(static_cast<std::uint64_t>(x ^ y)));
      max_ulp = std::max<std::int64_t>(max_ulp, x > y ? x - y : y - x);  // same sign: ulps apart
    }
    const double wi = w(rng);
    sc += wi * c[i];
    sd += wi * d[i];
  }
  std::printf("n=%zu: %zu of %zu elements differ (%.2f %%), %zu bits, max %lld ulp; weighted checksums differ by %.3g relative\n",
              n, differ, n * n, 100.0 * static_cast<double>(differ) / static_cast<double>(n * n), bits,
              static_cast<long long>(max_ulp), std::fabs(sc - sd) / std::fabs(sc));
  return 0;
}
