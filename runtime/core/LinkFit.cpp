#include "runtime/core/LinkFit.hpp"

#include <algorithm>
#include <cmath>

namespace treefarm::core {

std::optional<double> LinkFit::add(double bytes, double seconds) {
  if (!(bytes > 0) || !(seconds > 0) || !std::isfinite(bytes) || !std::isfinite(seconds)) return std::nullopt;
  // Welford's update of the means, the variance of the sizes and their covariance with the
  // times: sums of squared bytes (1e13 each) would lose the differences.
  ++n_;
  const double dx = bytes - mean_bytes_;
  mean_bytes_ += dx / static_cast<double>(n_);
  mean_seconds_ += (seconds - mean_seconds_) / static_cast<double>(n_);
  m2_bytes_ += dx * (bytes - mean_bytes_);
  c_ += dx * (seconds - mean_seconds_);
  min_bytes_ = n_ == 1 ? bytes : std::min(min_bytes_, bytes);
  max_bytes_ = n_ == 1 ? bytes : std::max(max_bytes_, bytes);
  const auto l = latency();
  if (!l) return bytes > small_bytes ? std::optional<double>(bytes / seconds) : std::nullopt;
  const double moving = seconds - *l;
  if (moving < 0.5 * seconds) return std::nullopt;  // mostly latency: it says little of the bandwidth
  return bytes / moving;
}

std::optional<double> LinkFit::latency() const {
  if (n_ < 3 || !(max_bytes_ >= min_span * min_bytes_) || !(m2_bytes_ > 0)) return std::nullopt;
  const double per_byte = c_ / m2_bytes_;  // seconds per byte: 1 / bandwidth
  if (!(per_byte > 0) || !std::isfinite(per_byte)) return std::nullopt;
  return std::max(0.0, mean_seconds_ - per_byte * mean_bytes_);
}

}  // namespace treefarm::core
