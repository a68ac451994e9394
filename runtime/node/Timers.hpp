#pragma once
/// @file Timers.hpp
/// The node driver's deadlines, one per kind, each armed or not (no "-1 = unset" times):
/// absolute seconds on the adapter's clock. NodeDriver::next_deadline() is the earliest of
/// those that matter in the current phase.

#include <array>
#include <cstddef>
#include <optional>

namespace treefarm::node {

enum class Timer : std::size_t {
  join,               ///< the parent's Welcome is due (joining)
  rejoin,             ///< the next rejoin attempt (rejoin_wait)
  heartbeat,          ///< the next heartbeat to the parent and the children
  closing,            ///< the children's Bye are due (closing)
  tick,               ///< root: the next progress tick
  wait_for_nodes,     ///< root: start dispatching even if not every node joined
  orphan,             ///< root: no node could compute since this long
  calibration_start,  ///< calibration: the kernel runs start
  estimates,          ///< the next estimates to the parent where there are no heartbeats
  count_
};

class Timers {
 public:
  void arm(Timer t, double at) { at_[index(t)] = at; }
  void disarm(Timer t) { at_[index(t)].reset(); }
  bool armed(Timer t) const { return at_[index(t)].has_value(); }
  std::optional<double> at(Timer t) const { return at_[index(t)]; }
  /// Armed and reached at `now`.
  bool due(Timer t, double now) const { return armed(t) && now >= *at_[index(t)]; }
  /// Disarms `t` and returns true if it was due at `now`.
  bool take(Timer t, double now) {
    if (!due(t, now)) return false;
    disarm(t);
    return true;
  }
  /// The earliest of `t` (if armed) and `other`.
  std::optional<double> earliest(Timer t, std::optional<double> other) const {
    return earliest(at(t), other);
  }
  static std::optional<double> earliest(std::optional<double> a, std::optional<double> b) {
    if (!a) return b;
    if (!b) return a;
    return *a < *b ? a : b;
  }
  void clear() { at_ = {}; }

 private:
  static constexpr std::size_t index(Timer t) { return static_cast<std::size_t>(t); }
  std::array<std::optional<double>, static_cast<std::size_t>(Timer::count_)> at_{};
};

}  // namespace treefarm::node
