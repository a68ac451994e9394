#pragma once
/// @file Kernels.hpp
/// The real task kernels: dense matrix multiply (BLAS dgemm) and matrix add.
///
/// All matrices are n×n, row-major, contiguous doubles. The kernels never allocate.
/// BLAS runs single-threaded: oneTBB alone decides which cores a task uses (DESIGN.md,
/// "OpenBLAS (serial variant, so TBB alone owns the cores)").

#include <cstdint>

#include <oneapi/tbb/task_arena.h>

namespace treefarm::tasks {

/// Makes BLAS single-threaded (openblas_set_num_threads(1)). Idempotent and thread-safe;
/// the matmul functions call it themselves, so calling it is only needed to pay its cost
/// up front. Needed because `libopenblas.so.0` may resolve to the pthread build (Debian's
/// alternatives prefer it over libopenblas0-serial).
void init_blas();

/// True when the loaded OpenBLAS is the serial build (openblas_get_parallel() == 0).
bool blas_is_serial();

/// C = A·B on the calling thread with one single-threaded cblas_dgemm.
/// @param a,b  n×n row-major inputs (n² doubles each).
/// @param c    n×n row-major output (n² doubles), overwritten; must not alias a or b.
/// @param n    matrix order; 0 does nothing.
/// Work: 2·n³ flop.
void matmul(const double* a, const double* b, double* c, std::uint32_t n);

/// C = A·B on the threads of `arena`, for tasks that hold several cores.
/// C is split into row blocks (at most 2 per arena slot, at least 8 rows each except the
/// last), each computed by one single-threaded cblas_dgemm, run with tbb::parallel_for
/// inside `arena.execute`. The split depends only on n and arena.max_concurrency(), but
/// BLAS may sum in another order than `matmul`: results agree to rounding, not bitwise.
/// With an arena of concurrency 1 this is `matmul` run inside the arena.
/// Arguments as for `matmul`.
void matmul_blocked(const double* a, const double* b, double* c, std::uint32_t n,
                    tbb::task_arena& arena);

/// C = A + B elementwise over `count` doubles (count = n² for an n×n task).
/// c may alias a or b. Work: `count` flop, 24·count bytes of memory traffic.
void matadd(const double* a, const double* b, double* c, std::uint64_t count);

/// Does nothing: the noop kernel (its cost is the runtime's own).
inline void noop() {}

}  // namespace treefarm::tasks
