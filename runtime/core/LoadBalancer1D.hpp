#pragma once
/// @file LoadBalancer1D.hpp
/// The 1D load-balancing mechanism of papers/beaumont2006 §4.1: if choice i should be
/// made with frequency f(i) and has been made g(i) times, the next choice is the i that
/// minimises (g(i)+1)/f(i) (the D'Hondt rule). Over any prefix of n choices among K,
/// choice i has been made more than n·f(i)/Σf − 1 and at most (n+K)·f(i)/Σf times: within
/// one of n·f(i)/Σf for two choices, but with three or more a choice can run ahead by more
/// than one (f = 0.7, 0.2, 0.1: choice 0 takes 7 of the first 8, ideal 5.6), a weaker
/// guarantee than the "within one" the paper suggests.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace treefarm::core {

class LoadBalancer1D {
 public:
  LoadBalancer1D() = default;
  /// Frequencies f(i) >= 0; a choice with f(i) = 0 is never made.
  explicit LoadBalancer1D(std::vector<double> frequencies);

  /// Replaces the frequencies and keeps the counts (policies that recompute rates).
  void set_frequencies(std::vector<double> frequencies);
  /// Restarts the counts g(i) from zero.
  void reset_counts();

  /// The next choice among those `allowed` accepts (all if empty), without recording it;
  /// nullopt if none is allowed or all allowed frequencies are 0. Ties go to the lowest i.
  std::optional<std::size_t> peek(const std::function<bool(std::size_t)>& allowed = {}) const;
  /// Records that choice i was made.
  void record(std::size_t i);
  /// peek() then record() the result.
  std::optional<std::size_t> next(const std::function<bool(std::size_t)>& allowed = {});

  std::size_t size() const { return frequencies_.size(); }
  double frequency(std::size_t i) const { return frequencies_[i]; }
  std::uint64_t count(std::size_t i) const { return counts_[i]; }

 private:
  std::vector<double> frequencies_;
  std::vector<std::uint64_t> counts_;
};

}  // namespace treefarm::core
