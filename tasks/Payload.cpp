#include "tasks/Payload.hpp"

#include <bit>
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

/// Generators interleaved in a stream (xoshiro_lanes).
inline constexpr std::size_t lanes = 8;

/// Steps `lanes` interleaved xoshiro256+ generators (Blackman and Vigna 2018), seeded in
/// turn by `seeder` (splitmix64), `blocks` times, handing each step's words to
/// `emit(block, lane, word)`. Interleaved lanes have no dependency between neighbouring
/// words, so the loop runs several generators per vector register (an AVX-512 or AVX2
/// clone of the caller chosen at run time) instead of one multiply chain per word: the
/// AVX2 clone measured 2-3x faster than the one-stream splitmix64 it replaced on 4 MiB
/// inputs (the per-task secret inputs made this the master's hottest loop), the AVX-512
/// clone (eight lanes in one register, native 64-bit rotate) ~3x faster again: 35 GB/s
/// against memset's 38 GB/s on the CI machine (`treefarm bench inputs`). Only integer
/// operations: every clone and every machine produces the same words. Always inlined, so
/// each caller's clone vectorises the loop with its own `emit`.
template <class Emit>
[[gnu::always_inline]] inline void xoshiro_lanes(SplitMix64& seeder, std::size_t blocks, Emit emit) {
  std::uint64_t s0[lanes], s1[lanes], s2[lanes], s3[lanes];
  for (std::size_t l = 0; l < lanes; ++l) {
    s0[l] = seeder.next();
    s1[l] = seeder.next();
    s2[l] = seeder.next();
    s3[l] = seeder.next();
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    for (std::size_t l = 0; l < lanes; ++l) {
      const std::uint64_t result = s0[l] + s3[l];
      const std::uint64_t t = s1[l] << 17;
      s2[l] ^= s0[l];
      s3[l] ^= s1[l];
      s1[l] ^= s2[l];
      s0[l] ^= s3[l];
      s2[l] ^= t;
      s3[l] = (s3[l] << 45) | (s3[l] >> 19);
      emit(b, l, result);
    }
  }
}

// One clone per vector width, chosen when the program loads (x86-64 only; GCC and clang).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TREEFARM_VECTOR_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]
#else
#define TREEFARM_VECTOR_CLONES
#endif

/// The bits of a double uniform in [0, 1) from the 32 random bits `half` (the value
/// half·2^-32): 1.m - 1.0 is exact.
inline std::uint64_t unit_double_bits(std::uint64_t half) {
  const std::uint64_t one_to_two = (half << 20) | 0x3FF0000000000000ull;
  double value;
  std::memcpy(&value, &one_to_two, 8);
  value -= 1.0;
  std::uint64_t bits;
  std::memcpy(&bits, &value, 8);
  return bits;
}

/// Little-endian bytes of a word, so noop inputs are the same bytes on every machine.
inline std::uint64_t little_endian(std::uint64_t word) {
  if constexpr (std::endian::native == std::endian::little) return word;
  else return __builtin_bswap64(word);
}

/// `count` doubles in [0, 1), two from each word of the stream: in each block of
/// 2 x lanes doubles, double l is the high half of lane l's word and double lanes + l
/// its low half (32 random bits per double). Half the generator steps of one double per
/// word: the master makes every task's input (16 KiB for a matmul of order 32) on its
/// loop thread, and the generator, not the stores, was the limit. The last count mod 16
/// doubles come from the seeding splitmix64, one a word (its high half).
TREEFARM_VECTOR_CLONES
void fill_doubles(std::byte* out, std::size_t count, std::uint64_t seed) {
  SplitMix64 seeder(seed);
  xoshiro_lanes(seeder, count / (2 * lanes), [&](std::size_t block, std::size_t l, std::uint64_t word) {
    const std::uint64_t high = unit_double_bits(word >> 32), low = unit_double_bits(word & 0xFFFFFFFFull);
    std::memcpy(out + (2 * lanes * block + l) * 8, &high, 8);
    std::memcpy(out + (2 * lanes * block + lanes + l) * 8, &low, 8);
  });
  for (std::size_t i = count / (2 * lanes) * (2 * lanes); i < count; ++i) {
    const std::uint64_t stored = unit_double_bits(seeder.next() >> 32);
    std::memcpy(out + i * 8, &stored, 8);
  }
}

/// `bytes` pseudo-random bytes: word i (8 bytes, little-endian) from lane i mod lanes, the
/// last words mod lanes from the seeding splitmix64, the last bytes mod 8 from a
/// splitmix64 of their own.
TREEFARM_VECTOR_CLONES
void fill_bytes(std::byte* out, std::size_t bytes, std::uint64_t seed) {
  const std::size_t words = bytes / 8;
  SplitMix64 seeder(seed);
  xoshiro_lanes(seeder, words / lanes, [&](std::size_t block, std::size_t l, std::uint64_t word) {
    const std::uint64_t stored = little_endian(word);
    std::memcpy(out + (lanes * block + l) * 8, &stored, 8);
  });
  for (std::size_t i = words / lanes * lanes; i < words; ++i) {
    const std::uint64_t stored = little_endian(seeder.next());
    std::memcpy(out + i * 8, &stored, 8);
  }
  if (bytes % 8 != 0) {
    const std::uint64_t last = SplitMix64(seed ^ 0x7461696cull).next();  // "tail"
    for (std::size_t k = 0; k < bytes % 8; ++k) out[words * 8 + k] = static_cast<std::byte>(last >> (8 * k));
  }
}

}  // namespace

void fill_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
                std::uint32_t input_index, std::vector<std::byte>& out) {
  if (app.kernel == model::Kernel::abstract) {
    throw std::invalid_argument("fill_input: application '" + app.name +
                                "' has the abstract kernel, which has no real input");
  }
  const std::uint64_t stream = stream_seed(seed, app_index, input_index);
  if (app.kernel == model::Kernel::command) {  // text or the user's file (tasks/CommandTask.hpp)
    fill_command_input(app, stream, out);
    return;
  }
  out.resize(app.input_bytes());
  fill_input(app, seed, app_index, input_index, std::span<std::byte>(out));
}

bool has_fixed_input(const model::AppSpec& app) {
  return app.kernel == model::Kernel::noop || app.kernel == model::Kernel::matmul || app.kernel == model::Kernel::matadd;
}

void fill_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t app_index,
                std::uint32_t input_index, std::span<std::byte> out) {
  if (!has_fixed_input(app))
    throw std::invalid_argument("fill_input: application '" + app.name +
                                "' has no input of a fixed size (noop, matmul, matadd have)");
  if (out.size() != app.input_bytes())
    throw std::invalid_argument("fill_input: application '" + app.name + "' has inputs of " +
                                std::to_string(app.input_bytes()) + " bytes, not " + std::to_string(out.size()));
  const std::uint64_t stream = stream_seed(seed, app_index, input_index);
  if (app.kernel == model::Kernel::noop) {
    fill_bytes(out.data(), out.size(), stream);
    return;
  }
  fill_doubles(out.data(), out.size() / sizeof(double), stream);
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
