#include "runtime/lp/LiveModel.hpp"

#include <cmath>

namespace treefarm::lp {

nlohmann::json to_json(const Replan& r) {
  return {{"at", r.at},           {"cause", r.cause},          {"node", r.node},
          {"figure", r.figure},   {"old_value", r.old_value},  {"new_value", r.new_value},
          {"old_optimum", r.old_optimum}, {"new_optimum", r.new_optimum}};
}

LiveModel::LiveModel(PlatformModel model, Solution solution, LiveModelOptions options)
    : model_(std::move(model)), solution_(std::move(solution)), options_(options) {
  figures_.assign(model_.nodes.size(), std::vector<Figure>(model_.apps.size()));
}

int LiveModel::index_of(const std::string& node) const {
  for (std::size_t u = 0; u < model_.nodes.size(); ++u)
    if (model_.nodes[u].name == node) return static_cast<int>(u);
  return -1;
}

std::optional<Replan> LiveModel::update(const std::vector<net::msg::Estimate>& estimates, double at) {
  if (!estimates.empty()) latest_list_ = estimates;
  std::optional<Replan> made;
  for (const auto& e : estimates) {
    if (e.what != net::msg::Estimate::What::task_seconds) continue;
    const int u = index_of(e.node);
    if (u < 0 || e.app >= model_.apps.size()) continue;
    auto& figure = figures_[static_cast<std::size_t>(u)][e.app];
    auto& node = model_.nodes[static_cast<std::size_t>(u)];
    const double old_value = node.task_seconds.at(e.app);
    if (!(old_value > 0) || !std::isfinite(old_value)) continue;
    const bool moved = std::abs(e.mean / old_value - 1) > options_.min_change;
    // A new shift; or, once per shift, the figure's estimate settled away from the value
    // the model holds (the samples that tripped the test are few and may straddle the
    // change). Between shifts the estimate's jitter alone never re-plans.
    const bool shifted = e.shifts > figure.shifts;
    if (shifted) {
      figure.shifts = e.shifts;
      figure.at_shift = e.samples;
      figure.follow = true;
    }
    const bool settled = !shifted && figure.follow && e.samples >= figure.at_shift + options_.settle_samples;
    if (!(shifted || settled) || !moved) continue;
    if (made || (last_at_ && at - *last_at_ < options_.min_gap)) {
      if (shifted) figure.shifts = e.shifts - 1;  // looked at again with the next report
      continue;
    }
    figure.follow = shifted;  // a shift's re-plan is followed once; a settled one ends it
    // A host's measured whole-task cost follows the node's kernel (docs/live-model.md).
    if (node.host >= 0) {
      auto& per_app = model_.hosts[static_cast<std::size_t>(node.host)].task_cpu_seconds;
      if (e.app < per_app.size() && per_app[e.app] > 0) per_app[e.app] *= e.mean / old_value;
    }
    node.task_seconds[e.app] = e.mean;
    const double old_optimum = solution_.fair_throughput;
    solution_ = solve(model_);
    made = Replan{at, shifted ? "shift test" : "estimate settled", e.node, "task_seconds of '" + model_.apps[e.app].name + "'", old_value, e.mean,
                  old_optimum, solution_.fair_throughput};
    last_at_ = at;
    replans_.push_back(*made);
  }
  return made;
}

static int nodes_on_host(const PlatformModel& model, int host) {
  int n = 0;
  for (const auto& node : model.nodes) n += node.host == host ? 1 : 0;
  return n;
}

PlatformModel observed_model(PlatformModel model, const MeasuredSeconds& seconds, const MeasuredBandwidth& bandwidth) {
  for (auto& node : model.nodes) {
    if (const auto b = bandwidth.find(node.name);
        b != bandwidth.end() && std::isfinite(node.link_bandwidth) && node.link_bandwidth > 0 && b->second > 0)
      node.link_bandwidth = b->second;
    // On a host several nodes share (every node of `treefarm run` on one machine), the
    // task times were measured with the sharing of the calibration and the host's row
    // charges its whole CPU per task measured through the runtime: a kernel's run time
    // in this run is not the same figure, so they stay. A node alone on its host (an
    // emulated LAN) ran its tasks as it was calibrated: its figure is taken, and its
    // host's whole cost per task follows it (docs/live-model.md).
    if (node.host >= 0 && nodes_on_host(model, node.host) > 1) continue;
    const auto it = seconds.find(node.name);
    if (it == seconds.end()) continue;
    for (std::size_t k = 0; k < model.apps.size() && k < node.task_seconds.size(); ++k) {
      const auto s = it->second.find(model.apps[k].name);
      if (s == it->second.end() || !(s->second > 0)) continue;
      if (node.host >= 0 && node.task_seconds[k] > 0 && std::isfinite(node.task_seconds[k])) {
        auto& cost = model.hosts[static_cast<std::size_t>(node.host)].task_cpu_seconds;
        if (k < cost.size() && cost[k] > 0) cost[k] *= s->second / node.task_seconds[k];
      }
      node.task_seconds[k] = s->second;
    }
  }
  return model;
}

std::vector<net::msg::NodeHint> plan_hints(const PlatformModel& model, const Solution& solution) {
  std::vector<net::msg::NodeHint> out;
  for (std::size_t u = 0; u < model.nodes.size(); ++u) {
    net::msg::NodeHint h;
    h.name = model.nodes[u].name;
    for (std::size_t k = 0; k < model.apps.size(); ++k) {
      h.alpha.push_back(solution.alpha[u][k]);
      h.received.push_back(u == 0 ? 0.0 : solution.sent[u][k]);
    }
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace treefarm::lp
