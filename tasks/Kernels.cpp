#include "tasks/Kernels.hpp"

#include <algorithm>
#include <mutex>

#include <cblas.h>
#include <oneapi/tbb/parallel_for.h>

namespace treefarm::tasks {

void init_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

bool blas_is_serial() { return openblas_get_parallel() == 0; }

namespace {

/// C[rows, :] = A[rows, :]·B for rows [row_begin, row_end).
void matmul_rows(const double* a, const double* b, double* c, std::uint32_t n,
                 std::uint32_t row_begin, std::uint32_t row_end) {
  const auto m = static_cast<blasint>(row_end - row_begin);
  const auto nn = static_cast<blasint>(n);
  const std::size_t offset = static_cast<std::size_t>(row_begin) * n;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, nn, nn, 1.0, a + offset, nn, b,
              nn, 0.0, c + offset, nn);
}

}  // namespace

void matmul(const double* a, const double* b, double* c, std::uint32_t n) {
  if (n == 0) return;
  init_blas();
  matmul_rows(a, b, c, n, 0, n);
}

void matmul_blocked(const double* a, const double* b, double* c, std::uint32_t n,
                    tbb::task_arena& arena) {
  if (n == 0) return;
  init_blas();
  const auto slots = static_cast<std::uint32_t>(std::max(1, arena.max_concurrency()));
  if (slots == 1) {
    arena.execute([&] { matmul_rows(a, b, c, n, 0, n); });
    return;
  }
  // Two blocks per slot lets a slot that started late still get an even share; blocks
  // under 8 rows make dgemm's packing of B dominate.
  constexpr std::uint32_t min_rows = 8;
  const std::uint32_t wanted_blocks = 2 * slots;
  const std::uint32_t rows = std::max(min_rows, (n + wanted_blocks - 1) / wanted_blocks);
  const std::uint32_t blocks = (n + rows - 1) / rows;
  arena.execute([&] {
    tbb::parallel_for(std::uint32_t{0}, blocks, [&](std::uint32_t block) {
      const std::uint32_t begin = block * rows;
      matmul_rows(a, b, c, n, begin, std::min(n, begin + rows));
    });
  });
}

void matadd(const double* a, const double* b, double* c, std::uint64_t count) {
  for (std::uint64_t i = 0; i < count; ++i) c[i] = a[i] + b[i];
}

}  // namespace treefarm::tasks
