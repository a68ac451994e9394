#include "runtime/core/Policy.hpp"

#include <stdexcept>
#include <string>

#include "runtime/core/policies/CgbcPolicy.hpp"
#include "runtime/core/policies/DataCentricPolicy.hpp"
#include "runtime/core/policies/FcfsPolicy.hpp"
#include "runtime/core/policies/LpPolicy.hpp"
#include "runtime/core/policies/PbcPolicy.hpp"

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
std::optional<std::string> Policy::check_message(const NodeState&, const event::PolicyMessage&) const { return std::nullopt; }
void Policy::take_messages(const NodeState&, std::vector<Action>&) {}
std::optional<Seconds> Policy::next_deadline(const NodeState&) const { return std::nullopt; }

std::vector<std::string> policy_names() { return {"fcfs", "cgbc", "pbc", "lp", "data-centric"}; }

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "fcfs") return std::make_unique<FcfsPolicy>();
  if (name == "cgbc") return std::make_unique<CgbcPolicy>();
  if (name == "pbc") return std::make_unique<PbcPolicy>();
  if (name == "lp") return std::make_unique<LpPolicy>();
  if (name == "data-centric") return std::make_unique<DataCentricPolicy>();
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown policy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace treefarm::core
