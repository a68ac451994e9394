#include "runtime/core/LoadBalancer1D.hpp"

#include <stdexcept>

namespace treefarm::core {

LoadBalancer1D::LoadBalancer1D(std::vector<double> frequencies) {
  set_frequencies(std::move(frequencies));
}

void LoadBalancer1D::set_frequencies(std::vector<double> frequencies) {
  for (double f : frequencies) {
    if (!(f >= 0)) throw std::invalid_argument("LoadBalancer1D: frequencies must be >= 0");
  }
  frequencies_ = std::move(frequencies);
  counts_.resize(frequencies_.size(), 0);
}

void LoadBalancer1D::reset_counts() { counts_.assign(frequencies_.size(), 0); }

std::optional<std::size_t> LoadBalancer1D::peek(const std::function<bool(std::size_t)>& allowed) const {
  std::optional<std::size_t> best;
  double best_key = 0;
  for (std::size_t i = 0; i < frequencies_.size(); ++i) {
    if (frequencies_[i] <= 0) continue;
    if (allowed && !allowed(i)) continue;
    const double key = (static_cast<double>(counts_[i]) + 1.0) / frequencies_[i];
    if (!best || key < best_key) {
      best = i;
      best_key = key;
    }
  }
  return best;
}

void LoadBalancer1D::record(std::size_t i) { ++counts_.at(i); }

std::optional<std::size_t> LoadBalancer1D::next(const std::function<bool(std::size_t)>& allowed) {
  auto i = peek(allowed);
  if (i) record(*i);
  return i;
}

}  // namespace treefarm::core
