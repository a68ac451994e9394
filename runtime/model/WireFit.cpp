#include "runtime/model/WireFit.hpp"

namespace treefarm::model {

// Mirrors runtime/net/Codec.cpp's Welcome encoder (tests/runtime/node/WireFitTest.cpp
// checks the two agree).
std::size_t welcome_bytes_of(const AppSpec& app) {
  constexpr std::size_t string_length = 2;  // u16 length before each string
  constexpr std::size_t fixed = 1 + 4 + 8 + 8 + 8 + 8 + 4 + 8;  // kernel, n, bytes, flops, weight, tasks, cores, memory
  constexpr std::size_t requirements = 8 + 8;  // disk_per_task, min_speed
  std::size_t bytes = string_length + app.name.size() + fixed + requirements;
  if (app.kernel == Kernel::command) {
    bytes += 2;  // argument count
    for (const auto& arg : app.argv) bytes += string_length + arg.size();
    bytes += 8 + string_length + app.expect_digest.size() + 8;  // timeout, digest, max_output_bytes
  }
  return bytes;
}

}  // namespace treefarm::model
