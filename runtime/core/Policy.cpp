#include "runtime/core/Policy.hpp"

#include <stdexcept>
#include <string>

#include "runtime/core/FcfsPolicy.hpp"

namespace treefarm::core {

void Policy::start(const NodeState& state) {
  std::vector<double> weights;
  for (const auto& app : state.config.apps) weights.push_back(app.weight);
  root_mix_ = LoadBalancer1D(std::move(weights));
}

std::optional<AppId> Policy::next_source_app(const NodeState& state) {
  auto k = root_mix_.next([&](std::size_t i) {
    return state.source_remaining(AppId{static_cast<std::uint32_t>(i)}) > 0;
  });
  if (!k) return std::nullopt;
  return AppId{static_cast<std::uint32_t>(*k)};
}

void Policy::observe(const NodeState&, const Event&) {}
void Policy::assigned(const NodeState&, const Target&, TaskRef) {}

std::vector<std::string> policy_names() { return {"fcfs"}; }

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "fcfs") return std::make_unique<FcfsPolicy>();
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown policy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace treefarm::core
