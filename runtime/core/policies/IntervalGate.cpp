#include "runtime/core/policies/IntervalGate.hpp"

namespace treefarm::core {

bool IntervalGate::pass(Seconds now, Seconds interval) {
  interval_ = interval;
  if (passed_ && now < last_ + interval_) {
    waiting_ = true;
    return false;
  }
  passed_ = true;
  waiting_ = false;
  last_ = now;
  return true;
}

std::optional<Seconds> IntervalGate::due() const {
  if (!waiting_) return std::nullopt;
  return last_ + interval_;
}

}  // namespace treefarm::core
