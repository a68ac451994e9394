#pragma once
/// @file TestApps.hpp
/// The applications the tests of tasks/ and of the executor run (model::AppSpec,
/// docs/experiment-file.md).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/Application.hpp"

namespace treefarm::test_support {

/// An application "app" of `kernel` on matrices of order `n`, with `bytes` of input per
/// task where the kernel takes them (0: the kernel's own size).
inline model::AppSpec make_app(model::Kernel kernel, std::uint32_t n, std::uint64_t bytes = 0) {
  model::AppSpec app;
  app.name = "app";
  app.kernel = kernel;
  app.n = n;
  app.bytes = bytes;
  return app;
}

/// A command application "cmd" of one task running `argv` (docs/command-tasks.md).
inline model::AppSpec command(std::vector<std::string> argv) {
  model::AppSpec a;
  a.name = "cmd";
  a.kernel = model::Kernel::command;
  a.argv = std::move(argv);
  a.tasks = 1;
  return a;
}

}  // namespace treefarm::test_support
