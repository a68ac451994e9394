#include "tasks/TaskRunner.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tasks/CommandTask.hpp"
#include "tasks/Kernels.hpp"

namespace treefarm::tasks {

namespace {

/// Grows `buffer` to at least `count` doubles and returns its data (contents unspecified).
double* scratch(std::vector<double>& buffer, std::size_t count) {
  if (buffer.size() < count) {
    buffer.clear();
    buffer.shrink_to_fit();
    buffer.resize(count);
  }
  return buffer.data();
}

}  // namespace

double run_task(const model::AppSpec& app, std::span<const std::byte> input,
                tbb::task_arena* arena, std::uint64_t index) {
  if (app.kernel == model::Kernel::abstract) {
    throw std::invalid_argument("run_task: application '" + app.name +
                                "' has the abstract kernel, which cannot be run");
  }
  if (input.size() != app.input_bytes()) {
    throw std::invalid_argument("run_task: input of application '" + app.name + "' has " +
                                std::to_string(input.size()) + " bytes, expected " +
                                std::to_string(app.input_bytes()) + " (kernel " +
                                std::string(model::to_string(app.kernel)) + ")");
  }
  if (app.kernel == model::Kernel::command) {
    const CommandOutcome o = run_command(app, input, index, {});
    if (o.failed) throw std::runtime_error(o.error);
    return o.checksum;
  }
  if (app.kernel == model::Kernel::noop) {
    noop();
    return checksum_bytes(input);
  }

  const std::uint32_t n = app.n;
  const std::size_t count = static_cast<std::size_t>(n) * n;
  const double* a = nullptr;
  // Frames from the network are usually malloc-aligned; copy the rare one that is not.
  if (reinterpret_cast<std::uintptr_t>(input.data()) % alignof(double) == 0) {
    a = reinterpret_cast<const double*>(input.data());
  } else {
    thread_local std::vector<double> aligned_input;
    double* copy = scratch(aligned_input, 2 * count);
    std::memcpy(copy, input.data(), input.size());
    a = copy;
  }
  const double* b = a + count;
  thread_local std::vector<double> result;
  double* c = scratch(result, count);

  if (app.kernel == model::Kernel::matmul) {
    if (arena != nullptr && arena->max_concurrency() > 1) {
      matmul_blocked(a, b, c, n, *arena);
    } else {
      matmul(a, b, c, n);
    }
    return checksum_product(c, n);
  }
  matadd(a, b, c, count);
  return checksum_matrix(c, n);
}

}  // namespace treefarm::tasks
