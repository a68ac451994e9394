#include "runtime/core/policies/PlanFollower.hpp"

#include <algorithm>
#include <cmath>

namespace treefarm::core {

namespace {
// Per choice, the index of its requester's oldest pending request (choices come in runs
// of `apps`, one run per requester: the executor, then each child).
std::vector<std::optional<std::size_t>> oldest_requests(const std::vector<PlanFollower::Choice>& choices,
                                                         std::size_t apps, const NodeState& state) {
  std::vector<std::optional<std::size_t>> out(choices.size());
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i % apps != 0) {
      out[i] = out[i - i % apps];
      continue;
    }
    for (std::size_t r = 0; r < state.requests.size() && !out[i]; ++r)
      if (state.requests[r].from == choices[i].to) out[i] = r;
  }
  return out;
}
}  // namespace

void PlanFollower::set_plan(std::optional<NodePlan> plan) {
  plan_ = std::move(plan);
  dirty_ = true;
}

void PlanFollower::sync(const NodeState& state) {
  if (!dirty_ && same_children(state.children, children_seen_)) return;
  dirty_ = false;
  children_seen_ = child_ids(state.children);
  choices_.clear();
  std::vector<double> f;
  const std::size_t k = state.config.apps.size();
  if (plan_) {
    for (std::size_t a = 0; a < k; ++a) {
      choices_.push_back(Choice{Target::executor(), AppId{static_cast<std::uint32_t>(a)}});
      f.push_back(a < plan_->local.size() ? std::max(0.0, plan_->local[a]) : 0.0);
    }
    for (const auto& [id, c] : state.children) {
      auto it = plan_->children.find(c.info.name);
      for (std::size_t a = 0; a < k; ++a) {
        choices_.push_back(Choice{Target::to_child(id), AppId{static_cast<std::uint32_t>(a)}});
        f.push_back(it != plan_->children.end() && a < it->second.size() ? std::max(0.0, it->second[a]) : 0.0);
      }
    }
  }
  balancer_ = LoadBalancer1D(std::move(f));
}

const std::vector<PlanFollower::Choice>& PlanFollower::choices(const NodeState& state) {
  sync(state);
  return choices_;
}

std::optional<Assignment> PlanFollower::select(const NodeState& state) {
  sync(state);
  if (!plan_ || state.buffer.empty() || state.requests.empty()) return std::nullopt;
  const std::size_t k = state.config.apps.size();
  std::vector<std::optional<std::size_t>> oldest_task(k);
  for (std::size_t t = 0; t < state.buffer.size(); ++t) {
    const auto a = state.buffer[t].app().value;
    if (a < k && !oldest_task[a]) oldest_task[a] = t;
  }
  const auto request_of = oldest_requests(choices_, k, state);
  auto feasible = [&](std::size_t i) {
    const auto& task = oldest_task[choices_[i].app.value];
    if (!request_of[i] || !task || !state.can_assign(choices_[i].to, state.buffer[*task])) return false;
    if (caps_.empty() || choices_[i].to.local) return true;
    const auto c = state.children.find(choices_[i].to.child);
    return c == state.children.end() || below_cap(c->second);
  };
  auto i = balancer_.peek(feasible);
  if (!i) return std::nullopt;
  return Assignment{*request_of[*i], *oldest_task[choices_[*i].app.value]};
}

PlanFollower::Draw PlanFollower::next_draw(const NodeState& state) {
  sync(state);
  Draw draw;
  if (!plan_ || state.requests.empty()) return draw;
  const std::size_t k = state.config.apps.size();
  std::vector<bool> buffered(k, false);
  for (const TaskRef t : state.buffer)
    if (t.app().value < k) buffered[t.app().value] = true;
  const auto request_of = oldest_requests(choices_, k, state);
  auto feasible = [&](std::size_t i) {
    const AppId a = choices_[i].app;
    return request_of[i] && (buffered[a.value] || state.source_remaining(a) > 0) &&
           state.can_assign(choices_[i].to, TaskRef{TaskId::make(a, 0)});
  };
  const auto i = balancer_.peek(feasible);
  if (!i) return draw;
  draw.planned = true;
  if (!buffered[choices_[*i].app.value]) draw.app = choices_[*i].app;
  return draw;
}

void PlanFollower::assigned(const NodeState& state, const Target& to, TaskRef task) {
  sync(state);
  for (std::size_t i = 0; i < choices_.size(); ++i)
    if (choices_[i].to == to && choices_[i].app == task.app()) {
      balancer_.record(i);
      return;
    }
}

std::vector<double> PlanFollower::totals(std::size_t apps) const {
  std::vector<double> t(apps, 0.0);
  if (!plan_) return t;
  for (std::size_t a = 0; a < apps && a < plan_->local.size(); ++a) t[a] += std::max(0.0, plan_->local[a]);
  for (const auto& [name, rates] : plan_->children)
    for (std::size_t a = 0; a < apps && a < rates.size(); ++a) t[a] += std::max(0.0, rates[a]);
  return t;
}

NodePlan without_crumbs(NodePlan plan) {
  std::vector<double> total;
  auto add = [&](const std::vector<double>& rates) {
    if (total.size() < rates.size()) total.resize(rates.size(), 0.0);
    for (std::size_t a = 0; a < rates.size(); ++a) total[a] += std::max(0.0, rates[a]);
  };
  add(plan.local);
  for (const auto& [name, rates] : plan.children) add(rates);
  auto clean = [&](std::vector<double>& rates) {
    for (std::size_t a = 0; a < rates.size(); ++a)
      if (rates[a] < 1e-4 * total[a]) rates[a] = 0.0;
  };
  clean(plan.local);
  for (auto& [name, rates] : plan.children) clean(rates);
  return plan;
}

bool rates_close(double a, double b, double tolerance) {
  return std::abs(a - b) <= tolerance * std::max(std::abs(a), std::abs(b)) + 1e-12;
}

bool rates_close(const std::vector<double>& a, const std::vector<double>& b, double tolerance) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!rates_close(a[i], b[i], tolerance)) return false;
  return true;
}

bool plans_close(const NodePlan& a, const NodePlan& b, double tolerance) {
  if (!rates_close(a.local, b.local, tolerance) || a.children.size() != b.children.size()) return false;
  for (const auto& [name, rates] : a.children) {
    auto it = b.children.find(name);
    if (it == b.children.end() || !rates_close(rates, it->second, tolerance)) return false;
  }
  return true;
}

double planned_total(const std::vector<double>& rates) {
  double sum = 0.0;
  for (double r : rates) sum += std::max(0.0, r);
  return sum;
}

std::optional<std::uint64_t> held_share(const NodePlan& plan, std::uint32_t buffer, const std::string& child,
                                        std::uint32_t cores) {
  const auto it = plan.children.find(child);
  if (it == plan.children.end()) return std::nullopt;
  double top = planned_total(plan.local);
  for (const auto& [name, rates] : plan.children) top = std::max(top, planned_total(rates));
  if (!(top > 0)) return std::nullopt;
  const double share = static_cast<double>(buffer) * planned_total(it->second) / top;
  return static_cast<std::uint64_t>(std::ceil(share)) + std::max<std::uint32_t>(1, cores);
}

}  // namespace treefarm::core
