#include "runtime/lp/EstimatePlan.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace treefarm::lp {

using net::msg::Estimate;

EstimatePlanOptions EstimatePlanOptions::from_policy_options(const std::map<std::string, double>& options) {
  EstimatePlanOptions o;
  if (const auto it = options.find("plan_ci"); it != options.end()) {
    if (!(it->second > 0 && it->second < 1)) throw std::invalid_argument("plan_ci must be in (0, 1) (a relative half-width)");
    o.max_half_width = it->second;
  }
  if (const auto it = options.find("plan_samples"); it != options.end()) {
    if (!(it->second >= 2 && it->second <= 1e6) || it->second != std::floor(it->second))
      throw std::invalid_argument("plan_samples must be a whole number of samples >= 2");
    o.min_samples = static_cast<std::uint32_t>(it->second);
  }
  if (const auto it = options.find("plan_wait"); it != options.end()) {
    if (!(it->second > 0) || !std::isfinite(it->second)) throw std::invalid_argument("plan_wait must be > 0 seconds");
    o.max_wait = it->second;
  }
  return o;
}

double relative_half_width(const Estimate& e, const EstimatePlanOptions& options) {
  if (e.samples == 0 || !(e.mean > 0) || !std::isfinite(e.mean)) return std::numeric_limits<double>::infinity();
  const double n = std::min(static_cast<double>(e.samples), options.effective_samples);
  return 1.96 * e.spread / (e.mean * std::sqrt(n));
}

std::set<NeededFigure> needed_figures(const model::Experiment& ex, const std::set<std::string>& free_links) {
  std::set<NeededFigure> out;
  for (std::size_t u = 0; u < ex.nodes.size(); ++u) {
    const auto& node = ex.nodes[u];
    for (std::size_t k = 0; k < ex.apps.size(); ++k)
      if (node.cores > 0 && node.cores >= ex.apps[k].cores_per_task) out.insert({node.name, static_cast<int>(k)});
    if (u > 0 && !free_links.contains(node.name)) out.insert({node.name, -1});
  }
  return out;
}

namespace {
const Estimate* find(const std::vector<Estimate>& estimates, const NeededFigure& f) {
  for (const auto& e : estimates) {
    if (e.node != f.node) continue;
    if (f.app < 0 && e.what == Estimate::What::link_bandwidth) return &e;
    if (f.app >= 0 && e.what == Estimate::What::task_seconds && e.app == static_cast<std::size_t>(f.app)) return &e;
  }
  return nullptr;
}

std::string figure_name(const NeededFigure& f, const model::Experiment& ex) {
  return f.node + ": " + (f.app < 0 ? std::string("link") : "task time of '" + ex.apps.at(static_cast<std::size_t>(f.app)).name + "'");
}
}  // namespace

std::vector<std::string> loose_figures(const std::vector<Estimate>& estimates, const std::set<NeededFigure>& needed,
                                       const model::Experiment& ex, const EstimatePlanOptions& options) {
  std::vector<std::string> out;
  char text[96];
  for (const auto& f : needed) {
    const Estimate* e = find(estimates, f);
    // A link is estimated only from transfers that had it to themselves, which a saturated
    // link may never have: one not estimated at all does not hold the plan back (it keeps
    // the model's figure).
    if (f.app < 0 && (!e || e->samples == 0)) continue;
    if (!e || e->samples < options.min_samples) {
      std::snprintf(text, sizeof text, ": %u of %u samples", e ? e->samples : 0u, options.min_samples);
      out.push_back(figure_name(f, ex) + text);
      continue;
    }
    const double w = relative_half_width(*e, options);
    if (w > options.max_half_width) {
      std::snprintf(text, sizeof text, ": ±%.1f%% > ±%.1f%%", w * 100, options.max_half_width * 100);
      out.push_back(figure_name(f, ex) + text);
    }
  }
  return out;
}

MeasuredSeconds estimated_seconds(const std::vector<Estimate>& estimates, const model::Experiment& ex) {
  MeasuredSeconds out;
  for (const auto& e : estimates)
    if (e.what == Estimate::What::task_seconds && e.samples > 0 && e.app < ex.apps.size() && e.mean > 0 &&
        std::isfinite(e.mean))
      out[e.node][ex.apps[e.app].name] = e.mean;
  return out;
}

MeasuredBandwidth estimated_bandwidth(const std::vector<Estimate>& estimates) {
  MeasuredBandwidth out;
  for (const auto& e : estimates)
    if (e.what == Estimate::What::link_bandwidth && e.samples > 0 && e.mean > 0 && std::isfinite(e.mean))
      out[e.node] = e.mean;
  return out;
}

EstimatePlan::EstimatePlan(const model::Experiment& ex, std::set<std::string> free_links, Builder build,
                           EstimatePlanOptions options)
    : ex_(ex), needed_(needed_figures(ex, free_links)), build_(std::move(build)), options_(options) {}

std::optional<EstimatedPlan> EstimatePlan::update(const std::vector<Estimate>& estimates, double at) {
  if (made_) return std::nullopt;
  // The last report of every figure (a report lists the tree's, but keep what a
  // shorter one left out).
  for (const auto& e : estimates) {
    bool replaced = false;
    for (auto& l : latest_)
      if (l.node == e.node && l.what == e.what && l.app == e.app) {
        l = e;
        replaced = true;
      }
    if (!replaced) latest_.push_back(e);
  }
  auto rule = options_;
  if (check_) {  // a shared machine: its check judges the figures, the task times need a sample
    rule.min_samples = 1;
    rule.max_half_width = std::numeric_limits<double>::infinity();
  }
  loose_ = loose_figures(latest_, needed_, ex_, rule);
  bool tight = loose_.empty();
  if (!tight && at < options_.max_wait) return std::nullopt;
  // A figure still missing at max_wait: the node does not run that application in the
  // model (+inf seconds); a link not estimated keeps what the builder gives it.
  auto seconds = estimated_seconds(latest_, ex_);
  for (const auto& f : needed_)
    if (f.app >= 0 && !seconds[f.node].contains(ex_.apps[static_cast<std::size_t>(f.app)].name))
      seconds[f.node][ex_.apps[static_cast<std::size_t>(f.app)].name] = std::numeric_limits<double>::infinity();
  MeasuredBandwidth bandwidth;
  for (const auto& [node, b] : estimated_bandwidth(latest_))
    if (needed_.contains({node, -1})) bandwidth[node] = b;  // a free link stays as the builder has it
  made_ = true;  // a builder that throws is not tried again
  EstimatedPlan plan{at, tight, build_(seconds, bandwidth), {}};
  if (check_) {
    auto host = check_(plan.model);
    if (!host.loose.empty()) {
      loose_.insert(loose_.end(), host.loose.begin(), host.loose.end());
      plan.tight = false;
      if (at < options_.max_wait) {
        made_ = false;
        return std::nullopt;
      }
    }
    if (host.model) plan.model = std::move(*host.model);
  }
  plan.solution = solve(plan.model);
  return plan;
}

}  // namespace treefarm::lp
