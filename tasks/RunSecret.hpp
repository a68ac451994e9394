#pragma once
/// @file RunSecret.hpp
/// The master's per-run secret (docs/security.md "Results a worker
/// cannot forge"): 32 random bytes drawn from the operating system when the master
/// starts, never sent to anyone. From it the master derives, with a keyed pseudo-random
/// function, each task's input seed (so no worker can predict an input before it arrives,
/// nor see the same input twice) and which results it spot-checks (so no worker can tell a
/// checked task from an unchecked one). The PRF is SipHash-2-4 (libsodium
/// crypto_shorthash), keyed with 16 bytes derived from the secret by keyed BLAKE2b:
/// SipHash is a PRF designed for short messages such as these 13 bytes and costs ~20 ns,
/// where keyed BLAKE2b over them costs ~0.45 µs — twice per task, a quarter of the master's
/// CPU in `treefarm bench dispatch` (docs/benchmarks.md).

#include <array>
#include <cstdint>

namespace treefarm::tasks {

class RunSecret {
 public:
  /// Key size in bytes (crypto_generichash_KEYBYTES).
  static constexpr std::size_t key_bytes = 32;

  /// A fresh random key (libsodium randombytes_buf).
  /// @throws std::runtime_error if libsodium cannot initialise.
  static RunSecret random();
  /// A fixed key: tests and reproducible benchmarks only.
  explicit RunSecret(const std::array<std::uint8_t, key_bytes>& key);

  /// Seed of the input of task `index` of application `app` (for fill_input): the first
  /// SipHash-2-4 keyed with the derived key over ('i', app, index).
  std::uint64_t input_seed(std::uint32_t app, std::uint64_t index) const;

  /// Whether the master recomputes this task's result: SipHash-2-4 keyed with the derived
  /// key over ('s', app, index), read as a uniform number in [0, 1), is below `fraction`.
  /// fraction ≤ 0: never; ≥ 1: always.
  bool spot_checked(std::uint32_t app, std::uint64_t index, double fraction) const;

 private:
  std::uint64_t keyed_hash(char domain, std::uint32_t app, std::uint64_t index) const;
  std::array<std::uint8_t, 16> prf_key_{};  ///< crypto_shorthash_KEYBYTES, from the secret
};

}  // namespace treefarm::tasks
