#include "tools/bench/InputBench.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sodium.h>

#include "runtime/model/Application.hpp"
#include "tasks/InputPrefetcher.hpp"
#include "tasks/Payload.hpp"
#include "tasks/RunSecret.hpp"

namespace treefarm::bench {

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median over `rounds` of the milliseconds per input that `once(i)` takes for `inputs` i.
template <class Once>
double ms_per_input(const InputBenchOptions& o, Once once) {
  std::vector<double> per_round;
  std::uint64_t next = 0;
  for (std::uint32_t r = 0; r < o.rounds; ++r) {
    const auto t0 = Clock::now();
    for (std::uint32_t i = 0; i < o.inputs; ++i) once(next++);
    per_round.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / o.inputs);
  }
  return median(per_round);
}

std::uint64_t seed_of(std::uint32_t, std::uint64_t index) { return 0x5eed + index; }

/// Nanoseconds per call of each task's seed: RunSecret::input_seed (SipHash-2-4) beside
/// keyed BLAKE2b-256 over the same 13 bytes (the cost RunSecret.hpp sets SipHash against), median
/// of `rounds` rounds of `calls` calls.
std::pair<double, double> seed_ns(std::uint32_t rounds) {
  constexpr std::uint32_t calls = 200000;
  const auto secret = tasks::RunSecret::random();
  std::array<unsigned char, crypto_generichash_KEYBYTES> key{};
  randombytes_buf(key.data(), key.size());
  std::vector<double> prf, blake;
  std::uint64_t sink = 0;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < calls; ++i) sink += secret.input_seed(0, i);
    prf.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
    t0 = Clock::now();
    for (std::uint64_t i = 0; i < calls; ++i) {
      unsigned char msg[13] = {'i'}, out[crypto_generichash_BYTES];
      std::memcpy(msg + 5, &i, sizeof i);
      crypto_generichash(out, sizeof out, msg, sizeof msg, key.data(), key.size());
      sink += out[0];
    }
    blake.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls);
  }
  asm volatile("" : : "r"(sink) : "memory");
  return {median(prf), median(blake)};
}

}  // namespace

int bench_inputs(std::ostream& out, const InputBenchOptions& o) {
  if (o.n == 0 || o.inputs == 0 || o.rounds == 0)
    throw std::invalid_argument("bench inputs: --n, --inputs and --rounds must be at least 1");
  model::AppSpec app;
  app.name = "input";
  app.kernel = model::Kernel::matadd;
  app.n = o.n;
  app.tasks = std::uint64_t{o.inputs} * o.rounds + 1;
  const std::size_t bytes = app.input_bytes();

  std::vector<std::byte> source, check;
  tasks::fill_input(app, 1, 0, 0, source);
  std::vector<std::byte> copy(bytes);
  const double memcpy_ms = ms_per_input(o, [&](std::uint64_t) {
    std::memcpy(copy.data(), source.data(), bytes);
    asm volatile("" : : "r"(copy.data()) : "memory");  // keep the copy
  });

  std::vector<std::byte> recycled;
  const double recycled_ms = ms_per_input(o, [&](std::uint64_t i) { tasks::fill_input(app, seed_of(0, i), 0, 0, recycled); });
  tasks::fill_input(app, seed_of(0, 7), 0, 0, check);
  tasks::fill_input(app, seed_of(0, 7), 0, 0, recycled);
  if (check != recycled) throw std::runtime_error("bench inputs: a refill of a recycled buffer differs");

  const double fresh_ms = ms_per_input(o, [&](std::uint64_t i) {
    auto buffer = std::make_unique<std::vector<std::byte>>();
    tasks::fill_input(app, seed_of(0, i), 0, 0, *buffer);
    asm volatile("" : : "r"(buffer->data()) : "memory");
  });

  // The loop thread's side: take inputs in order as fast as possible, dropping each at once
  // (as after a send); the generator thread makes them ahead into recycled buffers.
  tasks::InputPrefetcher prefetcher({app}, seed_of);
  const double wait_ms = ms_per_input(o, [&](std::uint64_t i) {
    const auto input = prefetcher.get(0, i);
    if (i == 7 && *input != check) throw std::runtime_error("bench inputs: a prefetched input differs from fill_input");
  });
  const auto stats = prefetcher.stats();
  const double gb = static_cast<double>(bytes) / 1e9;
  const auto [seed_prf_ns, seed_blake_ns] = seed_ns(o.rounds);

  if (o.json) {
    nlohmann::json j{{"n", o.n},
                     {"bytes_per_input", bytes},
                     {"memcpy_ms", memcpy_ms},
                     {"fill_recycled_ms", recycled_ms},
                     {"fill_fresh_ms", fresh_ms},
                     {"prefetched_take_ms", wait_ms},
                     {"fill_over_memcpy", recycled_ms / memcpy_ms},
                     {"prefetch_ready", stats.ready},
                     {"prefetch_waited", stats.generated_on_caller},
                     {"seed_ns", seed_prf_ns},
                     {"seed_keyed_blake2b_ns", seed_blake_ns}};
    out << j.dump(2) << "\n";
    return 0;
  }
  out << fmt::format("one input of a matrix application, n = {}: {} bytes (median of {} rounds of {} inputs)\n", o.n,
                     bytes, o.rounds, o.inputs);
  out << fmt::format("  {:<44} {:>9.3f} ms  {:>6.2f} GB/s   (reference: the memory bandwidth)\n", "memcpy of the same bytes",
                     memcpy_ms, gb / (memcpy_ms / 1e3));
  out << fmt::format("  {:<44} {:>9.3f} ms  {:>6.2f} GB/s   {:.2f}x memcpy\n", "fill, recycled buffer (the prefetcher)",
                     recycled_ms, gb / (recycled_ms / 1e3), recycled_ms / memcpy_ms);
  out << fmt::format("  {:<44} {:>9.3f} ms  {:>6.2f} GB/s   {:.2f}x memcpy\n", "fill, fresh buffer (allocate, zero, fault)",
                     fresh_ms, gb / (fresh_ms / 1e3), fresh_ms / memcpy_ms);
  out << fmt::format("  {:<44} {:>9.3f} ms  ({} ready ahead, {} waited for)\n", "taken from the prefetcher, flat out",
                     wait_ms, stats.ready, stats.generated_on_caller);
  out << fmt::format("  {:<44} {:>9.1f} ns  (reference: keyed BLAKE2b-256 over the same bytes {:.1f} ns)\n",
                     "task input seed (SipHash-2-4, RunSecret)", seed_prf_ns, seed_blake_ns);
  out << "  (taken flat out, the generator thread is the limit: the figure is its fill time; a master taking fewer\n"
         "   inputs per second than the generator makes never waits)\n";
  return 0;
}

}  // namespace treefarm::bench
