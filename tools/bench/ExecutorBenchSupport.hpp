#pragma once
/// @file ExecutorBenchSupport.hpp
/// What the executor benchmarks (BackfillBench, KernelBench) share: the two cores they
/// run on, waiting for an Executor's finished tasks, checksum checks, CPU-time and load
/// figures, and the small formatting helpers of their reports. Internal to tools/bench.

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/exec/Executor.hpp"
#include "runtime/model/Application.hpp"
#include "tasks/Payload.hpp"

namespace treefarm::bench::exec_bench {

using Clock = std::chrono::steady_clock;

/// Binds the calling thread to one PU; false on failure.
bool pin_this_thread(int cpu);
/// Seconds since `start`.
double seconds_since(Clock::time_point start);
/// CPU seconds (user + system) used so far by all threads of this process.
double process_cpu_seconds();
/// flop of one matmul task of order n: 2·n³.
double matmul_flops(std::uint32_t n);
/// The median of a non-empty sample.
double median(std::vector<double> v);
/// 1-minute load average, or -1 if unknown: printed so that a reader knows how busy the
/// machine was.
double load_average();
/// Throws std::invalid_argument("bench: WHAT is 0, ...") when value is 0.
void require_positive(std::uint64_t value, const char* what);
/// The first two usable cores, or an empty vector (and a "skipped:" line or JSON object
/// in `out`) if there are fewer than two.
std::vector<int> two_cores_or_skip(std::ostream& out, const char* benchmark, bool json);
/// What every executor benchmark does first: each (name, value) of `positive` must be >= 1
/// (require_positive), then the two cores (none: a "skipped" report was written to
/// `out`, nullopt), the load average before the run, and BLAS initialised.
struct BenchStart {
  std::vector<int> cores;    ///< The two cores the benchmark runs on.
  double load_before = -1;   ///< load_average() before the run.
};
std::optional<BenchStart> start_bench(std::ostream& out, const char* benchmark, bool json,
                                      std::initializer_list<std::pair<const char*, std::uint64_t>> positive);
/// Waits (poll on notify_fd) until the executor has finished tasks, and returns them.
/// Rethrows the first task error.
std::vector<exec::ExecDone> wait_done(exec::Executor& executor);
/// An application of `kernel` on n×n matrices, `cores` cores per task.
model::AppSpec matrix_app(const char* name, model::Kernel kernel, std::uint32_t n, std::uint32_t cores);
/// Checks a task's checksum against its pool's expected one; throws std::runtime_error.
void verify(const tasks::InputPool& pool, double got);
/// `v` with `precision` digits after the point.
std::string fixed(double v, int precision);
/// "0,1".
std::string core_list(const std::vector<int>& cores);

}  // namespace treefarm::bench::exec_bench
