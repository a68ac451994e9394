#include "tasks/Benchmark.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"

namespace treefarm::tasks {

double time_kernel(const model::AppSpec& app, int repetitions, tbb::task_arena* arena) {
  if (repetitions < 1) {
    throw std::invalid_argument("time_kernel: repetitions is " + std::to_string(repetitions) +
                                ", expected at least 1");
  }
  if (app.kernel == model::Kernel::abstract) {
    throw std::invalid_argument("time_kernel: application '" + app.name +
                                "' has the abstract kernel, which cannot be run");
  }
  std::vector<std::byte> input;
  fill_input(app, /*seed=*/0, /*app_index=*/0, /*input_index=*/0, input);
  volatile double sink = run_task(app, input, arena);  // warm-up: page faults, BLAS init

  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(repetitions));
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    sink = run_task(app, input, arena);
    const auto stop = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(stop - start).count());
  }
  (void)sink;
  const auto middle = seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2);
  std::nth_element(seconds.begin(), middle, seconds.end());
  if (seconds.size() % 2 == 1) return *middle;
  const double upper = *middle;
  const double lower = *std::max_element(seconds.begin(), middle);
  return 0.5 * (lower + upper);
}

double speed_per_core() {
  model::AppSpec mm;
  mm.name = "probe";
  mm.kernel = model::Kernel::matmul;
  mm.n = 512;
  return mm.task_flops() / time_kernel(mm, 3, nullptr);
}

}  // namespace treefarm::tasks
