#pragma once
/// @file Application.hpp
/// A bag-of-tasks application of an experiment: its kernel, sizes and weight.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace treefarm::model {

/// The computation a task performs.
enum class Kernel {
  matmul,    ///< C = A·B, n×n doubles; input 2·n²·8 bytes, 2·n³ flop.
  matadd,    ///< C = A+B, n×n doubles; input 2·n²·8 bytes, n² flop.
  noop,      ///< A payload of `bytes` bytes and no work (measures the runtime itself).
  abstract,  ///< Only `bytes` and `flops`: for prediction and simulation, never run.
};

/// "matmul", "matadd", "noop", "abstract".
std::string_view to_string(Kernel kernel);
/// Inverse of to_string; nullopt for an unknown name.
std::optional<Kernel> kernel_from_string(std::string_view name);

/// One application (bag of identical independent tasks).
struct AppSpec {
  std::string name;
  Kernel kernel = Kernel::noop;
  std::uint32_t n = 0;              ///< Matrix order (matmul, matadd).
  std::uint64_t bytes = 0;          ///< Payload bytes (noop, abstract).
  double flops = 0;                 ///< flop per task (abstract only).
  double weight = 1.0;              ///< Priority weight w(k) > 0.
  std::uint64_t tasks = 0;          ///< Number of tasks in the bag.
  std::uint32_t cores_per_task = 1; ///< Cores a task holds while it runs.
  std::uint64_t memory_per_task = 0;///< bytes of memory a task holds (0: not accounted).
  int line = 0;                     ///< Line of the [[app]] entry in its file (0: unknown).

  /// b(k): bytes sent down the tree for one task.
  std::uint64_t input_bytes() const;
  /// c(k): flop of one task (0 for noop).
  double task_flops() const;
  /// Communication-to-computation ratio b(k)/c(k) in bytes/flop (infinity for noop).
  double ccr() const;
};

}  // namespace treefarm::model
