#pragma once
/// @file Payload.hpp
/// Task inputs: a small pool of deterministic pseudo-random buffers per application,
/// shared zero-copy by all its tasks, with the checksum each one must produce.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/model/Application.hpp"

namespace treefarm::tasks {

/// An immutable task input, shareable between many in-flight tasks (and zero-copy
/// message frames) without copying.
using InputBuffer = std::shared_ptr<const std::vector<std::byte>>;

/// Writes the deterministic content of input `input_index` of application `app_index`
/// under `seed` into `out` (resized to app.input_bytes()). matmul, matadd: A then B, 2·n²
/// doubles uniform in [0,1) with 32 random bits each (two from each word of the stream),
/// row-major; noop: `bytes` pseudo-random bytes. The stream is eight interleaved
/// xoshiro256+ generators seeded by splitmix64 from (seed, app_index, input_index): the
/// same values on every machine. @throws std::invalid_argument for the abstract kernel.
void fill_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
                std::uint32_t input_index, std::vector<std::byte>& out);

/// Whether the application's inputs all have app.input_bytes() bytes (noop, matmul,
/// matadd; not a command's, nor the abstract kernel's), so that one can be written into a span.
bool has_fixed_input(const model::AppSpec& app);

/// The same bytes written into `out`, which must hold app.input_bytes() bytes, for the
/// kernels whose input has a fixed size (has_fixed_input): no allocation (see
/// node::SmallPayloads). @throws std::invalid_argument for another kernel or size.
void fill_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
                std::uint32_t input_index, std::span<std::byte> out);

/// `pool_size` inputs of one application and the checksum each must produce.
///
/// Task t uses input input_for(t) = t mod pool_size. Expected checksums come from running
/// the real kernel once per input at construction (single-threaded), so building a pool
/// costs pool_size tasks. Immutable after construction: safe to share between threads.
class InputPool {
 public:
  /// @param app        a runnable application (matmul, matadd or noop).
  /// @param seed       experiment seed.
  /// @param app_index  index of the application in the experiment (separates streams).
  /// @param pool_size  number of distinct inputs, ≥ 1.
  /// @throws std::invalid_argument for the abstract kernel or pool_size == 0.
  InputPool(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
            std::size_t pool_size = 2);

  /// The application the inputs are for.
  const model::AppSpec& app() const { return app_; }
  /// Number of distinct inputs.
  std::size_t size() const { return inputs_.size(); }
  /// Index of the input of task `task_index`: task_index mod size().
  std::size_t input_for(std::uint64_t task_index) const {
    return static_cast<std::size_t>(task_index % inputs_.size());
  }
  /// Input `index` (< size()): app().input_bytes() bytes.
  const InputBuffer& input(std::size_t index) const { return inputs_.at(index); }
  /// Checksum that run_task returns for input `index` (< size()).
  double expected_checksum(std::size_t index) const { return expected_.at(index); }

 private:
  model::AppSpec app_;
  std::vector<InputBuffer> inputs_;
  std::vector<double> expected_;
};

}  // namespace treefarm::tasks
