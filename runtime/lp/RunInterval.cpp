#include "runtime/lp/RunInterval.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "runtime/lp/LiveModel.hpp"
#include "runtime/lp/SteadyState.hpp"

#include <boost/math/distributions/students_t.hpp>

namespace treefarm::lp {

double t975(std::size_t df) {
  if (df == 0) return std::numeric_limits<double>::infinity();
  return boost::math::quantile(boost::math::complement(boost::math::students_t(static_cast<double>(df)), 0.025));
}

using net::msg::Estimate;

namespace {


std::string percent_line(const IntervalFigure& f, double bound) {
  char text[96];
  std::snprintf(text, sizeof text, ": ±%.1f %% > ±%.1f %%", f.half * 100, bound * 100);
  return f.name + text;
}

/// A figure without an interval is loose; one whose half-width, times `weight` (its share of
/// what it moves), passes `bound` is wide, named with `note`.
void judge(const IntervalFigure& f, double weight, double bound, RunInterval& out, std::vector<std::string>& wide,
           const std::string& note = "") {
  if (!std::isfinite(f.half)) out.loose.push_back(f.name + ": no interval yet");
  else if (!(f.half * weight <= bound)) wide.push_back(percent_line(f, bound) + note);
}

bool alone(const PlatformModel& model, int host) {
  if (host < 0) return true;
  int n = 0;
  for (const auto& node : model.nodes) n += node.host == host ? 1 : 0;
  return n <= 1;
}

/// Each application's unit of work on the host: its whole-task CPU cost when the host has
/// one for every application, else 1.
std::map<std::string, double> work_units(const PlatformModel& model, int host) {
  std::map<std::string, double> out;
  bool costs = host >= 0 && static_cast<std::size_t>(host) < model.hosts.size();
  if (costs) {
    const auto& c = model.hosts[static_cast<std::size_t>(host)].task_cpu_seconds;
    for (std::size_t k = 0; k < model.apps.size(); ++k)
      if (k >= c.size() || !(c[k] > 0) || !std::isfinite(c[k])) costs = false;
  }
  for (std::size_t k = 0; k < model.apps.size(); ++k)
    out[model.apps[k].name] = costs ? model.hosts[static_cast<std::size_t>(host)].task_cpu_seconds[k] : 1.0;
  return out;
}

double work_of(const std::map<std::string, double>& tasks, const std::map<std::string, double>& units) {
  double w = 0;
  for (const auto& [app, n] : tasks)
    if (const auto it = units.find(app); it != units.end()) w += n * it->second;
  return w;
}

/// The host's figures over its windows and the factor each node's CPU takes at the
/// pessimistic end (1 + h) — the optimistic end is 1 − h.
struct HostFigures {
  IntervalFigure available;
  IntervalFigure tree;
  std::map<std::string, double> node_half;  ///< per node of the observation: h
};

HostFigures host_figures(const PlatformModel& model, const HostWindows& host, const RunIntervalOptions& options,
                         RunInterval& out, std::vector<std::string>& wide) {
  const auto units = work_units(model, host.whole.host);
  std::vector<double> available, tree;
  std::map<std::string, std::vector<double>> per_node;
  for (const auto& p : host.parts) {
    if (!(p.window_seconds > 0)) continue;
    available.push_back(p.available_cpu_seconds / p.window_seconds);
    double work = 0, cpu = 0;
    for (const auto& [node, tasks] : p.tasks) work += work_of(tasks, units);
    for (const auto& [node, c] : p.node_cpu_seconds) cpu += c;
    tree.push_back(work > 0 ? cpu / work : std::numeric_limits<double>::infinity());
    for (const auto& [node, tasks] : p.tasks) {
      const double w = work_of(tasks, units);
      const auto c = p.node_cpu_seconds.find(node);
      if (w > 0 && c != p.node_cpu_seconds.end()) per_node[node].push_back(c->second / w);
    }
  }
  HostFigures f;
  f.available = mean_interval("host: CPUs available to the tree", available);
  f.tree = mean_interval("host: the tree's CPU per task", tree);
  if (available.size() < options.min_windows) {
    char text[96];
    std::snprintf(text, sizeof text, "host: %zu of %u windows", available.size(), options.min_windows);
    out.loose.push_back(text);
  }
  for (const auto* fig : {&f.available, &f.tree}) {
    out.figures.push_back(*fig);
    judge(*fig, 1.0, options.max_half_width, out, wide);
  }
  double tree_cpu = 0;
  for (const auto& [node, c] : host.whole.node_cpu_seconds) tree_cpu += c;
  for (const auto& [node, c] : host.whole.node_cpu_seconds) {
    f.node_half[node] = f.tree.half;  // a node with too few windows of its own work: the tree's
    const auto it = per_node.find(node);
    if (it == per_node.end() || it->second.size() < options.min_windows) continue;
    auto fig = mean_interval(node + ": CPU per task of its own", it->second);
    f.node_half[node] = fig.half;
    out.figures.push_back(fig);
    // Tight when its interval moves the tree's CPU by at most the bound: a node that ran
    // a few tasks weighs as little.
    const double weight = tree_cpu > 0 ? c / tree_cpu : 1.0;
    judge(fig, weight, options.max_half_width, out, wide, " (of the tree's CPU: weighed by its share)");
  }
  return f;
}

HostObservation at_end(HostObservation obs, const HostFigures& f, bool optimistic) {
  const double sign = optimistic ? -1.0 : 1.0;
  // Halves beyond 99 % (a figure with few windows) are taken at 99 %: a CPU count or a
  // cost of zero has no LP.
  obs.available_cpu_seconds = std::max(0.0, obs.available_cpu_seconds * (1 - sign * std::min(f.available.half, 0.99)));
  const auto factor = [&](double half) { return 1 + sign * std::min(half, 0.99); };  // a cost's, at this end
  for (auto& [node, c] : obs.node_cpu_seconds) {
    const auto it = f.node_half.find(node);
    const double own = factor(it == f.node_half.end() ? f.tree.half : it->second);
    const auto k = obs.kernel_cpu_seconds.find(node);
    if (k == obs.kernel_cpu_seconds.end()) {
      c *= own;  // its process's CPU is its node row's: at the ends of its own interval
      continue;
    }
    // Its kernels' CPU is its node row's, at the ends of its own interval; its process's
    // CPU is the host row's, which charges the tree's sum: at the ends of the tree's
    // interval, measured over the same windows. The nodes' own figures move against one
    // another from window to window (which node ran which tasks); each at its own end at
    // once widened the quickstart's interval to ±9-12 % where the tree's CPU per task
    // was within ±3-6 %.
    c *= factor(f.tree.half);
    for (auto& [app, seconds] : k->second) seconds *= own;
  }
  return obs;
}

}  // namespace

IntervalFigure mean_interval(std::string name, const std::vector<double>& samples) {
  IntervalFigure f{std::move(name), 0, std::numeric_limits<double>::infinity(), samples};
  const auto m = samples.size();
  if (m == 0) return f;
  for (const double x : samples) f.mean += x / static_cast<double>(m);
  if (m < 2 || !(f.mean > 0) || !std::isfinite(f.mean)) return f;
  double ss = 0;
  for (const double x : samples) ss += (x - f.mean) * (x - f.mean);
  const double sd = std::sqrt(ss / static_cast<double>(m - 1));
  f.half = t975(m - 1) * sd / (std::sqrt(static_cast<double>(m)) * f.mean);
  return f;
}

RunInterval run_interval(const PlatformModel& model, const std::vector<Estimate>& estimates,
                         const std::optional<HostWindows>& host, const RunIntervalOptions& options) {
  RunInterval out;
  std::vector<std::string> wide;  // figures wider than ±max_half_width: why the interval is wide
  // The estimates of nodes alone on their machine: task times and bounded links.
  MeasuredSeconds seconds[3];  // mean, pessimistic, optimistic
  MeasuredBandwidth bandwidth[3];
  for (const auto& e : estimates) {
    const auto node = std::find_if(model.nodes.begin(), model.nodes.end(), [&](const auto& n) { return n.name == e.node; });
    if (node == model.nodes.end() || !alone(model, node->host) || e.samples == 0 || !(e.mean > 0) || !std::isfinite(e.mean))
      continue;
    const bool task = e.what == Estimate::What::task_seconds && e.app < model.apps.size();
    const bool link = e.what == Estimate::What::link_bandwidth && std::isfinite(node->link_bandwidth) && node->link_bandwidth > 0;
    if (!task && !link) continue;
    IntervalFigure f{e.node + (task ? ": task time of '" + model.apps[e.app].name + "'" : std::string(": link")), e.mean,
                     1.96 * e.spread / (e.mean * std::sqrt(std::min(static_cast<double>(e.samples), options.effective_samples)))};
    out.figures.push_back(f);
    if (e.samples < options.min_samples) {
      char text[64];
      std::snprintf(text, sizeof text, ": %u of %u samples", e.samples, options.min_samples);
      out.loose.push_back(f.name + text);
    } else {
      judge(f, 1.0, options.max_half_width, out, wide);
    }
    const double h = std::min(f.half, 0.99);
    if (task) {
      const auto& app = model.apps[e.app].name;
      seconds[0][e.node][app] = e.mean;
      seconds[1][e.node][app] = e.mean * (1 + h);
      seconds[2][e.node][app] = e.mean * (1 - h);
    } else {
      bandwidth[0][e.node] = e.mean;
      bandwidth[1][e.node] = e.mean * (1 - h);
      bandwidth[2][e.node] = e.mean * (1 + h);
    }
  }
  std::optional<HostFigures> hf;
  if (host) hf = host_figures(model, *host, options, out, wide);
  if (out.figures.empty()) out.loose.push_back("no estimate yet");
  if (!out.tight()) return out;
  double optimum[3];
  double cores = 0;  // the host's CPUs in the model at the figures' means
  for (int end = 0; end < 3; ++end) {
    auto m = observed_model(model, seconds[end], bandwidth[end]);
    if (host) {
      const auto obs = end == 0 ? host->whole : at_end(host->whole, *hf, end == 2);
      m = observed_host_model(std::move(m), obs);
      // The CPUs available at their end (observed_host_model never gives the tree fewer than
      // it used, which at the ends is a figure of its own), never beyond the machine's.
      auto& c = m.hosts[static_cast<std::size_t>(obs.host)].cores;
      const double at_its_end = obs.available_cpu_seconds / obs.window_seconds;
      if (end == 0) cores = c;
      else if (end == 1) c = std::min(cores, at_its_end);
      else c = std::max(cores, std::min(model.hosts[static_cast<std::size_t>(obs.host)].cores, at_its_end));
    }
    optimum[end] = solve(m).fair_throughput;
    if (end == 0) out.model = std::move(m);
  }
  out.median = optimum[0];
  // The LP is solved to a tolerance: keep the three in order.
  out.low = std::min(optimum[1], out.median);
  out.high = std::max(optimum[2], out.median);
  // Made when every figure is within ±max_half_width, or else once the interval itself is
  // within ±max_interval; the wide figures say why it is not yet.
  const double below = out.median > 0 ? 1 - out.low / out.median : 1, above = out.median > 0 ? out.high / out.median - 1 : 1;
  if (!wide.empty() && !(below <= options.max_interval && above <= options.max_interval)) {
    char text[96];
    std::snprintf(text, sizeof text, "the interval: %+.1f %% to %+.1f %% > ±%.1f %%", -below * 100, above * 100,
                  options.max_interval * 100);
    out.loose = {text};
    out.loose.insert(out.loose.end(), wide.begin(), wide.end());
  }
  return out;
}

}  // namespace treefarm::lp
