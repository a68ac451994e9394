#include "runtime/core/policies/CgbcPolicy.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/core/policies/BandwidthCentric.hpp"

namespace treefarm::core {

std::vector<std::uint32_t> CgbcPolicy::macro_task_of(const std::vector<AppParams>& apps) {
  double smallest = 0;
  for (const auto& a : apps) smallest = smallest == 0 ? a.weight : std::min(smallest, a.weight);
  std::vector<std::uint32_t> m;
  for (const auto& a : apps)
    m.push_back(static_cast<std::uint32_t>(std::max(1.0, std::round(a.weight / smallest))));
  return m;
}

void CgbcPolicy::start(const NodeState& state) {
  macro_ = macro_task_of(state.config.apps);
  used_.assign(macro_.size(), 0);
  std::vector<double> f(macro_.begin(), macro_.end());
  root_mix_ = LoadBalancer1D(std::move(f));
}

// §4.3: the root draws whole macro-tasks, m(k) tasks of each type k each.
std::optional<AppId> CgbcPolicy::next_source_app(const NodeState& state) {
  auto has_tasks = [&](std::size_t i) { return state.source_remaining(AppId{static_cast<std::uint32_t>(i)}) > 0; };
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto k = root_mix_.next([&](std::size_t i) { return used_[i] < macro_[i] && has_tasks(i); });
    if (k) {
      ++used_[*k];
      return AppId{static_cast<std::uint32_t>(*k)};
    }
    // The macro-task is complete (or what is left of it has no tasks): start the next one.
    used_.assign(macro_.size(), 0);
    root_mix_.reset_counts();
  }
  return std::nullopt;
}

// §4.3: always the highest-priority requester, with the oldest task.
std::optional<Assignment> CgbcPolicy::select(const NodeState& state) {
  return BandwidthCentric::oldest_task_best_request(state);
}

}  // namespace treefarm::core
