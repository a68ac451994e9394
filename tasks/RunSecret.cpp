#include "tasks/RunSecret.hpp"

#include <cstring>
#include <stdexcept>

#include <sodium.h>

namespace treefarm::tasks {

static_assert(RunSecret::key_bytes == crypto_generichash_KEYBYTES);
static_assert(sizeof(std::array<std::uint8_t, 16>) == crypto_shorthash_KEYBYTES);

RunSecret::RunSecret(const std::array<std::uint8_t, key_bytes>& key) {
  // The PRF's key: BLAKE2b keyed with the secret over a fixed label (a key derivation, so
  // the 32-byte secret is used whole and SipHash's key is independent of other uses).
  static constexpr char label[] = "treefarm run secret: siphash key";
  crypto_generichash(prf_key_.data(), prf_key_.size(), reinterpret_cast<const unsigned char*>(label), sizeof label - 1,
                     key.data(), key.size());
}

RunSecret RunSecret::random() {
  if (sodium_init() < 0) throw std::runtime_error("RunSecret: libsodium failed to initialise");
  std::array<std::uint8_t, key_bytes> key{};
  randombytes_buf(key.data(), key.size());
  return RunSecret(key);
}

std::uint64_t RunSecret::keyed_hash(char domain, std::uint32_t app, std::uint64_t index) const {
  // Message: one domain byte, the application (4 bytes) and the index (8 bytes), little
  // endian, so that the same (app, index) gives unrelated values in each domain.
  std::uint8_t msg[13];
  msg[0] = static_cast<std::uint8_t>(domain);
  for (int i = 0; i < 4; ++i) msg[1 + i] = static_cast<std::uint8_t>(app >> (8 * i));
  for (int i = 0; i < 8; ++i) msg[5 + i] = static_cast<std::uint8_t>(index >> (8 * i));
  std::uint8_t out[crypto_shorthash_BYTES];
  crypto_shorthash(out, msg, sizeof msg, prf_key_.data());
  std::uint64_t h = 0;
  for (int i = 0; i < 8; ++i) h |= std::uint64_t{out[i]} << (8 * i);
  return h;
}

std::uint64_t RunSecret::input_seed(std::uint32_t app, std::uint64_t index) const {
  return keyed_hash('i', app, index);
}

bool RunSecret::spot_checked(std::uint32_t app, std::uint64_t index, double fraction) const {
  if (!(fraction > 0)) return false;
  if (fraction >= 1) return true;
  const double u = static_cast<double>(keyed_hash('s', app, index) >> 11) * 0x1.0p-53;  // [0,1)
  return u < fraction;
}

}  // namespace treefarm::tasks
