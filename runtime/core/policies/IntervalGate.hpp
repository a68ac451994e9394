#pragma once
/// @file IntervalGate.hpp
/// Lets a periodic recomputation run at most once per interval of the core's clock, and
/// says when a skipped one is due (for Policy::next_deadline). papers/beaumont2006 §4.5:
/// the data-centric frequencies are "continuously recomputed"; a node does it at most once
/// per interval so that the messages it sends stay few.

#include <optional>

#include "runtime/core/Ids.hpp"

namespace treefarm::core {

class IntervalGate {
 public:
  /// True the first time, and whenever `now` is at least `interval` seconds after the
  /// last time it returned true; otherwise false, and a run is due at that time.
  bool pass(Seconds now, Seconds interval);
  /// When the run skipped by the last pass() is due (seconds), nullopt if none was skipped.
  std::optional<Seconds> due() const;

 private:
  Seconds last_ = 0;      ///< When pass() last returned true.
  Seconds interval_ = 0;  ///< The interval of the last pass().
  bool passed_ = false;
  bool waiting_ = false;
};

}  // namespace treefarm::core
