#include "runtime/core/policies/RatePlanPolicy.hpp"

#include <string>

namespace treefarm::core {

std::optional<AppId> RatePlanPolicy::next_source_app(const NodeState& state) {
  refresh_mix(state);
  if (draw_on_demand_ && follower_.has_plan()) {
    // Draw on demand (PlanFollower::next_draw): the task the plan gives a waiting
    // requester next. Without a planned choice, draw by the mix only for requests the
    // buffer cannot cover (they are then served unplanned).
    const auto draw = follower_.next_draw(state);
    if (draw.planned) return draw.app;
    if (state.buffer.size() >= state.requests.size()) return std::nullopt;
  }
  if (plan_mix_.size() == state.config.apps.size()) {
    auto k = plan_mix_.next([&](std::size_t i) { return state.source_remaining(AppId{static_cast<std::uint32_t>(i)}) > 0; });
    if (k) return AppId{static_cast<std::uint32_t>(*k)};
  }
  return Policy::next_source_app(state);
}

std::optional<Assignment> RatePlanPolicy::select(const NodeState& state) {
  if (auto a = follower_.select(state)) return a;
  return unplanned_select(state);
}

void RatePlanPolicy::assigned(const NodeState& state, const Target& to, TaskRef task) {
  follower_.assigned(state, to, task);
  if (to.local) ++local_running_;
}

void RatePlanPolicy::refresh_mix(const NodeState&) {}

void RatePlanPolicy::count_finished(const Event& event) {
  if (std::holds_alternative<event::LocalTaskFinished>(event) && local_running_ > 0) --local_running_;
}

std::optional<std::string> RatePlanPolicy::check_direction(
    const event::PolicyMessage& message, const std::function<bool(const std::vector<std::uint8_t>&)>& is_down,
    std::string_view up, std::string_view down) const {
  try {
    const bool from_above = is_down(message.payload);
    if (message.from_parent && !from_above) return std::string(up) + " from the parent";
    if (!message.from_parent && from_above) return std::string(down) + " from a child";
  } catch (const DecodeError& e) {
    return "bad " + std::string(name()) + " message: " + e.what();
  }
  return std::nullopt;
}

std::uint8_t RatePlanPolicy::read_head(ByteReader& reader, std::size_t apps, std::string_view policy) {
  constexpr std::uint32_t max_apps = 1'000;
  const auto kind = reader.u8();
  if (kind != 1 && kind != 2) throw DecodeError("unknown " + std::string(policy) + " message kind " + std::to_string(kind));
  const auto announced = reader.count(max_apps);
  if (announced != apps)
    throw DecodeError(std::string(policy) + " message for " + std::to_string(announced) + " applications, this run has " +
                      std::to_string(apps));
  return kind;
}

double RatePlanPolicy::read_non_negative(ByteReader& reader, std::string_view policy, std::string_view what) {
  const double v = reader.f64();
  if (!(v >= 0)) throw DecodeError(std::string(policy) + " message holds a negative or NaN " + std::string(what));
  return v;
}

}  // namespace treefarm::core
