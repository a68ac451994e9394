#include "tasks/Payload.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "tasks/CommandTask.hpp"
#include "tasks/TaskRunner.hpp"

namespace treefarm::tasks {

namespace {

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, fully specified, so every machine
/// generates the same stream.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

std::uint64_t stream_seed(std::uint64_t seed, std::uint32_t app_index,
                          std::uint32_t input_index) {
  SplitMix64 mixer(seed);
  std::uint64_t s = mixer.next() ^ (std::uint64_t{app_index} << 32 | input_index);
  return SplitMix64(s).next();
}

}  // namespace

void fill_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
                std::uint32_t input_index, std::vector<std::byte>& out) {
  if (app.kernel == model::Kernel::abstract) {
    throw std::invalid_argument("fill_input: application '" + app.name +
                                "' has the abstract kernel, which has no real input");
  }
  if (app.kernel == model::Kernel::command) {  // text or the user's file (tasks/CommandTask.hpp)
    fill_command_input(app, stream_seed(seed, app_index, input_index), out);
    return;
  }
  SplitMix64 rng(stream_seed(seed, app_index, input_index));
  out.resize(app.input_bytes());
  if (app.kernel == model::Kernel::noop) {
    // Bytes taken little-endian from each word: the same bytes on every machine.
    for (std::size_t i = 0; i < out.size(); i += 8) {
      const std::uint64_t word = rng.next();
      for (std::size_t k = 0; k < 8 && i + k < out.size(); ++k) {
        out[i + k] = static_cast<std::byte>(word >> (8 * k));
      }
    }
    return;
  }
  const std::size_t count = out.size() / sizeof(double);
  for (std::size_t i = 0; i < count; ++i) {
    const double value = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;  // [0,1)
    std::memcpy(out.data() + i * sizeof(double), &value, sizeof(double));
  }
}

InputPool::InputPool(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
                     std::size_t pool_size)
    : app_(app) {
  if (pool_size == 0) {
    throw std::invalid_argument("InputPool: pool_size of application '" + app.name +
                                "' is 0, expected at least 1");
  }
  inputs_.reserve(pool_size);
  expected_.reserve(pool_size);
  for (std::size_t i = 0; i < pool_size; ++i) {
    auto buffer = std::make_shared<std::vector<std::byte>>();
    fill_input(app_, seed, app_index, static_cast<std::uint32_t>(i), *buffer);
    expected_.push_back(run_task(app_, *buffer, nullptr));
    inputs_.push_back(std::move(buffer));
  }
}

}  // namespace treefarm::tasks
