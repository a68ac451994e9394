#pragma once
/// @file RunSecret.hpp
/// The master's per-run secret (issue 13, hole 4; docs/security.md "Results a worker
/// cannot forge"): 32 random bytes drawn from the operating system when the master
/// starts, never sent to anyone. From it the master derives, with keyed BLAKE2b
/// (libsodium crypto_generichash), each task's input seed (so no worker can predict an
/// input before it arrives, nor see the same input twice) and which results it spot-checks
/// (so no worker can tell a checked task from an unchecked one).

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
  explicit RunSecret(const std::array<std::uint8_t, key_bytes>& key) : key_(key) {}

  /// Seed of the input of task `index` of application `app` (for fill_input): the first
  /// 8 bytes of BLAKE2b-256 keyed with the secret over ("input", app, index).
  std::uint64_t input_seed(std::uint32_t app, std::uint64_t index) const;

  /// Whether the master recomputes this task's result: BLAKE2b keyed with the secret over
  /// ("spot", app, index), read as a uniform number in [0, 1), is below `fraction`.
  /// fraction ≤ 0: never; ≥ 1: always.
  bool spot_checked(std::uint32_t app, std::uint64_t index, double fraction) const;

 private:
  std::uint64_t keyed_hash(char domain, std::uint32_t app, std::uint64_t index) const;
  std::array<std::uint8_t, key_bytes> key_;
};

}  // namespace treefarm::tasks
