#include "master/LiveRun.hpp"

#include <spdlog/spdlog.h>

namespace treefarm::master {

LiveRun::LiveRun(const model::Experiment& ex, std::optional<Prediction> prediction)
    : ex_(ex), prediction_(std::move(prediction)) {
  if (prediction_ && lp::replans(ex_)) live_.emplace(prediction_->model, prediction_->solution);
}

void LiveRun::install(node::RootSetup& root, RunRecord& record) {
  root.on_estimates = [this, &record](const std::vector<net::msg::Estimate>& estimates,
                                      double now) -> std::optional<std::vector<net::msg::NodeHint>> {
    if (!estimates.empty()) latest_ = estimates;
    if (!live_) return std::nullopt;
    const auto replan = live_->update(estimates, record.elapsed(now));
    if (!replan) return std::nullopt;
    spdlog::warn("master: re-plan at {:.1f} s ({}): {} of {} moved from {:.4g} to {:.4g} s; LP optimum {:.4f} -> {:.4f} "
                 "tasks/s", replan->at, replan->cause, replan->figure, replan->node, replan->old_value,
                 replan->new_value, replan->old_optimum, replan->new_optimum);
    record.results().replans.push_back(lp::to_json(*replan));
    return live_->hints();
  };
  record.on_computed([this](metrics::RunResults& results) { a_posteriori(results); });
}

void LiveRun::a_posteriori(metrics::RunResults& results) const {
  // Task times: each node's mean compute seconds per application over the steady window
  // [εT, (1−ε)T] of papers/beaumont2006 §5.1.1 (the window the measured throughput is from).
  const double lo = results.epsilon * results.steady_end, hi = (1 - results.epsilon) * results.steady_end;
  std::map<std::string, std::map<std::string, double>> sum, count;
  results.for_each_task([&](const metrics::TaskView& t) {
    if (t.completed_at < lo || t.completed_at > hi || t.app >= results.apps.size() || !(t.compute_seconds > 0)) return;
    const auto& app = results.apps[t.app].name;
    sum[std::string(t.node)][app] += t.compute_seconds;
    count[std::string(t.node)][app] += 1;
  });
  lp::MeasuredSeconds seconds;
  for (const auto& [node, apps] : sum)
    for (const auto& [app, s] : apps) seconds[node][app] = s / count[node][app];
  lp::MeasuredBandwidth bandwidth;
  for (const auto& e : latest_)
    if (e.what == net::msg::Estimate::What::link_bandwidth && e.samples >= 3) bandwidth[e.node] = e.mean;
  try {
    const lp::PlatformModel model = prediction_ ? lp::observed_model(prediction_->model, seconds, bandwidth)
                                                : lp::model_from_experiment(ex_, &seconds, &bandwidth);
    const auto solution = lp::solve(model);
    results.predicted_fair_a_posteriori = solution.fair_throughput;
    spdlog::info("master: a-posteriori LP optimum (the rates this run observed) {:.4f} tasks/s", solution.fair_throughput);
  } catch (const std::exception& e) {
    spdlog::info("master: no a-posteriori prediction: {}", e.what());
  }
}

}  // namespace treefarm::master
