#include "tasks/Checksum.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace treefarm::tasks {

namespace {

/// splitmix64's finalizer (Steele, Lea, Flood 2014): a cheap, well-mixing 64-bit hash.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A weight in [0.25, 0.75) from (index, salt).
double weight(std::uint64_t index, std::uint64_t salt) {
  return 0.25 + 0.5 * static_cast<double>(mix64(index ^ salt) >> 11) * 0x1.0p-53;
}

constexpr std::uint64_t row_salt = 0x243f6a8885a308d3ull;
constexpr std::uint64_t column_salt = 0x13198a2e03707344ull;

}  // namespace

double checksum_matrix(const double* c, std::uint32_t n) {
  // Σ_ij C_ij (r_i + s_j) = Σ_i (Σ_j C_ij s_j + r_i Σ_j C_ij): one hash per row and per
  // column instead of one per element. Four accumulators break the add latency chain
  // in a fixed, thread-independent order.
  thread_local std::vector<double> column_weights;
  if (column_weights.size() != n) {
    column_weights.resize(n);
    for (std::uint32_t j = 0; j < n; ++j) column_weights[j] = weight(j, column_salt);
  }
  const double* s = column_weights.data();
  double total = 0.0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const double* row = c + static_cast<std::size_t>(i) * n;
    double dot[4] = {0, 0, 0, 0};
    double sum[4] = {0, 0, 0, 0};
    std::uint32_t j = 0;
    for (; j + 4 <= n; j += 4) {
      for (int k = 0; k < 4; ++k) {
        dot[k] += row[j + k] * s[j + k];
        sum[k] += row[j + k];
      }
    }
    for (; j < n; ++j) {
      dot[0] += row[j] * s[j];
      sum[0] += row[j];
    }
    const double row_dot = (dot[0] + dot[1]) + (dot[2] + dot[3]);
    const double row_sum = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    total += row_dot + weight(i, row_salt) * row_sum;
  }
  return total;
}

double checksum_product(const double* c, std::uint32_t n) {
  constexpr std::uint64_t element_salt = 0xa4093822299f31d0ull;
  constexpr std::uint32_t cached_up_to = 1024;
  const auto element_weight = [](std::uint64_t e) {
    return 0.5 + static_cast<double>(mix64(e ^ element_salt) >> 11) * 0x1.0p-53;
  };
  const std::size_t count = static_cast<std::size_t>(n) * n;
  double acc[4] = {0, 0, 0, 0};
  if (n <= cached_up_to) {
    thread_local std::vector<double> weights;
    thread_local std::uint32_t weights_n = 0;
    if (weights_n != n) {
      weights.resize(count);
      for (std::size_t e = 0; e < count; ++e) weights[e] = element_weight(e);
      weights_n = n;
    }
    const double* w = weights.data();
    std::size_t e = 0;
    for (; e + 4 <= count; e += 4)
      for (int k = 0; k < 4; ++k) acc[k] += c[e + static_cast<std::size_t>(k)] * w[e + static_cast<std::size_t>(k)];
    for (; e < count; ++e) acc[0] += c[e] * w[e];
  } else {
    for (std::size_t e = 0; e < count; ++e) acc[e % 4] += c[e] * element_weight(e);
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

double checksum_bytes(std::span<const std::byte> payload) {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::size_t offset = 0;
  for (; offset + 8 <= payload.size(); offset += 8) {
    std::uint64_t word;
    std::memcpy(&word, payload.data() + offset, 8);
    a += word;
    b += a;
  }
  if (offset < payload.size()) {
    std::uint64_t word = 0;
    std::memcpy(&word, payload.data() + offset, payload.size() - offset);
    a += word;
    b += a;
  }
  const std::uint64_t h = mix64(mix64(mix64(payload.size()) ^ a) ^ b);
  return static_cast<double>(h >> 11);
}

bool checksum_matches(double expected, double got, const model::AppSpec& app) {
  if (std::isnan(expected) || std::isnan(got)) return false;
  if (app.kernel == model::Kernel::noop || app.kernel == model::Kernel::command) return expected == got;
  if (expected == got) return true;
  const double scale = std::max(std::abs(expected), std::abs(got));
  return std::abs(expected - got) <= checksum_relative_tolerance * scale;
}

}  // namespace treefarm::tasks
