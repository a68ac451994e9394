#include "runtime/plan/TreeEvaluator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "runtime/lp/ClpSolver.hpp"

namespace treefarm::plan {

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::size_t max_cache_entries = 2'000'000;
}  // namespace

std::size_t TreeEvaluator::Hash::operator()(const std::vector<int>& v) const noexcept {
  std::size_t h = 1469598103934665603ull;
  for (int x : v) h = (h ^ static_cast<std::size_t>(static_cast<unsigned>(x))) * 1099511628211ull;
  return h;
}

TreeEvaluator::TreeEvaluator(MachineSet machines, std::vector<model::AppSpec> apps, model::RunSpec run)
    : machines_(std::move(machines)), apps_(std::move(apps)), run_(std::move(run)),
      solver_(std::make_unique<lp::ClpSolver>()) {
  validate(machines_);
  if (apps_.empty()) throw std::invalid_argument("plan: no application");
  task_seconds_.assign(machines_.machines.size(), std::vector<double>(apps_.size(), inf));
  for (std::size_t k = 0; k < apps_.size(); ++k) {
    const auto& a = apps_[k];
    if (!(a.task_flops() > 0))
      throw std::invalid_argument("plan: application '" + a.name +
                                  "' has no work (kernel noop): the planner needs flop per task");
    bool runnable = false;
    for (std::size_t i = 0; i < machines_.machines.size(); ++i) {
      const auto& m = machines_.machines[i];
      if (m.cores < a.cores_per_task) continue;
      task_seconds_[i][k] = a.task_flops() / (static_cast<double>(a.cores_per_task) * m.speed);
      runnable = true;
    }
    if (!runnable)
      throw std::invalid_argument("plan: application '" + a.name + "' needs " + std::to_string(a.cores_per_task) +
                                  " cores per task and no machine has that many");
  }
}

TreeEvaluator::~TreeEvaluator() = default;

lp::PlatformModel TreeEvaluator::model(const PlanTree& tree, std::vector<std::size_t>* order_out) const {
  const auto order = tree.breadth_first();
  std::vector<int> position(tree.parent.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  lp::PlatformModel m;
  m.comm_model = run_.comm_model;
  m.buffer = run_.buffer;  // the latency rows, as lp::model_from_experiment builds them
  for (const auto& a : apps_) m.apps.push_back({a.name, static_cast<double>(a.input_bytes()), a.weight, a.cores_per_task});
  const double out_bw = run_.max_out_bandwidth.value_or(inf);
  m.nodes.reserve(order.size());
  for (std::size_t machine : order) {
    lp::PlatformModel::Node n;
    n.name = machines_.machines[machine].name;
    const int p = tree.parent[machine];
    n.parent = p >= 0 ? position[static_cast<std::size_t>(p)] : -1;
    n.cores = machines_.machines[machine].cores;
    n.link_bandwidth = p >= 0 ? machines_.bandwidth(static_cast<std::size_t>(p), machine) : inf;
    if (p >= 0) {  // the written experiment's link latency: request round trip 2·latency, port held latency
      const double latency = machines_.latency(static_cast<std::size_t>(p), machine);
      n.request_round_trip = 2 * latency;
      n.port_hold = latency;
    }
    n.task_seconds = task_seconds_[machine];
    n.max_out_bandwidth = out_bw;
    m.nodes.push_back(std::move(n));
  }
  if (order_out) *order_out = order;
  return m;
}

lp::Solution TreeEvaluator::solve(const PlanTree& tree) const {
  lp::ClpSolver solver;
  return lp::solve(model(tree), solver);
}

double TreeEvaluator::upper_bound(const PlanTree& tree) const { return upper_bound(tree, tree.breadth_first()); }

double TreeEvaluator::upper_bound(const PlanTree& tree, const std::vector<std::size_t>& order) const {
  const std::size_t n = tree.parent.size();
  const bool one_port = run_.comm_model == model::CommModel::one_port;
  const double max_out = run_.max_out_bandwidth.value_or(inf);
  double bound = inf;
  auto& absorb = absorb_;  // tasks/s of app k that machine i's subtree can take in
  absorb.assign(n, 0.0);
  auto& c = kids_;  // u's children: (link bandwidth bytes/s, absorb tasks/s), leaves first
  for (std::size_t k = 0; k < apps_.size(); ++k) {
    const double bytes = static_cast<double>(apps_[k].input_bytes());
    const double cpt = static_cast<double>(apps_[k].cores_per_task);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::size_t u = *it;
      const double t = task_seconds_[u][k];
      double rate = std::isfinite(t) && t > 0 ? static_cast<double>(machines_.machines[u].cores) / (t * cpt) : 0.0;
      c.clear();  // in reverse breadth-first order, as they were absorbed
      for (auto v = order.rbegin(); v != it; ++v)
        if (tree.parent[*v] == static_cast<int>(u)) c.push_back({machines_.bandwidth(u, *v), absorb[*v]});
      if (one_port) {
        // Fractional knapsack: a task to child v costs bytes/bw_v seconds of u's port.
        std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        double port = 1.0;
        for (const auto& [bw, cap] : c) {
          if (port <= 0) break;
          const double x = std::isfinite(bw) ? std::min(cap, port * bw / bytes) : cap;
          rate += x;
          if (std::isfinite(bw)) port -= x * bytes / bw;
        }
      } else {
        double fwd = 0.0;
        for (const auto& [bw, cap] : c) fwd += std::min(cap, bw / bytes);
        rate += std::min(fwd, max_out / bytes);
      }
      absorb[u] = rate;
    }
    bound = std::min(bound, absorb[order.front()] / apps_[k].weight);
  }
  return bound;
}

double TreeEvaluator::fair_throughput_uncached(const PlanTree& tree) {
  ++evaluations_;
  return lp::solve(model(tree), *solver_).fair_throughput;
}

double TreeEvaluator::fair_throughput(const PlanTree& tree) {
  if (auto it = cache_.find(tree.parent); it != cache_.end()) {
    ++cache_hits_;
    return it->second;
  }
  const double v = fair_throughput_uncached(tree);
  if (cache_.size() >= max_cache_entries) cache_.clear();
  cache_.emplace(tree.parent, v);
  return v;
}

}  // namespace treefarm::plan
