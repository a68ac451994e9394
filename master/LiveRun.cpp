#include "master/LiveRun.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include "master/HostWindow.hpp"
#include "runtime/lp/HostObservation.hpp"
#include "runtime/metrics/MachineCpu.hpp"
#include "runtime/metrics/ProcessMemory.hpp"

namespace treefarm::master {

namespace {
/// Heartbeats: the shortest window of the interval from the estimates on a shared machine
/// (its CPU samples come once a heartbeat, from each process at its own phase).
constexpr double kIntervalWindowHeartbeats = 2.0;

/// The first three of `lines`, "; " between them ("; ..." when there are more and `more`).
std::string first_three(const std::vector<std::string>& lines, bool more = false) {
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < 3; ++i) out += (i ? "; " : "") + lines[i];
  return more && lines.size() > 3 ? out + "; ..." : out;
}
}  // namespace

std::pair<double, double> LiveRun::seen_span(double at, double after) const {
  return {std::max({heartbeat_, 0.1 * at, after}), at - heartbeat_};
}

LiveRun::LiveRun(const model::Experiment& ex, std::optional<Prediction> prediction, bool one_machine,
                 double heartbeat_seconds)
    : ex_(ex),
      prediction_(std::move(prediction)),
      cpu_limit_(metrics::cgroup_cpu_limit()),
      one_machine_(one_machine),
      heartbeat_(heartbeat_seconds > 0 ? heartbeat_seconds : 1.0) {
  if (prediction_ && lp::replans(ex_)) live_.emplace(prediction_->model, prediction_->solution);
  // The interval's figures are tight by the rule of the plan made from the estimates.
  if (const auto it = ex_.run.policy_options.find("lp"); it != ex_.run.policy_options.end()) {
    const auto o = lp::EstimatePlanOptions::from_policy_options(it->second);
    interval_options_.max_half_width = o.max_half_width;
    interval_options_.min_samples = o.min_samples;
  }
}

void LiveRun::install(node::RootSetup& root, RunRecord& record) {
  record_ = &record;
  root.on_estimates = [this, &record](const std::vector<net::msg::Estimate>& estimates,
                                      double now) -> std::optional<std::vector<net::msg::NodeHint>> {
    if (!estimates.empty()) latest_ = estimates;
    // The CPU the tree used and the CPU the machine left idle, for the a-posteriori model.
    const double at = record.clock(now);
    clock_ = at;
    cpu_.estimates(estimates, at);
    cpu_.node(ex_.nodes.at(0).name, at, metrics::process_cpu_seconds());  // the root's own process
    if (const auto m = metrics::machine_cpu()) cpu_.machine(at, m->idle_seconds);
    std::optional<std::vector<net::msg::NodeHint>> hints;
    if (warmup_ && !warmup_->made()) {
      hints = first_plan(estimates, record.elapsed(now), record);
      if (hints) plan_at_ = at;
    } else if (live_) {
      if (const auto replan = live_->update(estimates, record.elapsed(now))) {
        spdlog::warn("master: re-plan at {:.1f} s ({}): {} of {} moved from {:.4g} to {:.4g} s; LP optimum {:.4f} -> "
                     "{:.4f} tasks/s", replan->at, replan->cause, replan->figure, replan->node, replan->old_value,
                     replan->new_value, replan->old_optimum, replan->new_optimum);
        record.results().replans.push_back(lp::to_json(*replan));
        hints = live_->hints();
      }
    }
    if (!hints) estimate_interval(at, record.results());
    return hints;
  };
  record.on_computed([this](metrics::RunResults& results) {
    if (warmup_ && !warmup_->made()) {
      const auto loose = first_three(warmup_->loose());
      spdlog::warn("master: no plan from the run's estimates: the run ended before they were tight ({})",
                   loose.empty() ? "no estimate yet" : loose);
      if (!interval_figures_.empty()) spdlog::info("master: their figures at the end: {}", interval_figures_);
    }
    if (prediction_ && !interval_made_) {
      const auto loose = first_three(interval_loose_);
      spdlog::info("master: no prediction interval from this run's estimates: {}",
                   loose.empty() ? "the run ended before its span held enough windows" : loose);
      if (!interval_figures_.empty()) spdlog::info("master: its figures at the end: {}", interval_figures_);
    }
    a_posteriori(results);
  });
}

void LiveRun::plan_from_estimates(std::optional<model::Calibration> hosts, bool pooled_inputs) {
  std::set<std::string> free_links;  // a link within one host: its bytes are the host row's CPU
  if (hosts)
    for (std::size_t u = 1; u < ex_.nodes.size(); ++u) {
      const auto& n = ex_.nodes[u];
      const auto me = hosts->nodes.find(n.name), parent = hosts->nodes.find(n.parent.value_or(""));
      if (me != hosts->nodes.end() && parent != hosts->nodes.end() && !me->second.host.empty() &&
          me->second.host == parent->second.host)
        free_links.insert(n.name);
    }
  // Every node on the root's machine, as the host measurement found it.
  bool hosts_shared = false;
  if (hosts) {
    const auto root = hosts->nodes.find(ex_.nodes.at(0).name);
    hosts_shared = root != hosts->nodes.end() && !root->second.host.empty() && free_links.size() + 1 == ex_.nodes.size();
  }
  auto build = [this, hosts = std::move(hosts), pooled_inputs](const lp::MeasuredSeconds& seconds,
                                                               const lp::MeasuredBandwidth& bandwidth) {
    lp::PlatformModel model;
    if (!hosts) {
      model = lp::model_from_experiment(ex_, &seconds, &bandwidth);
    } else {  // the calibration's description of the machines, filled with the estimates
      model::Calibration cal = *hosts;
      for (const auto& node : ex_.nodes) {
        auto& nc = cal.nodes[node.name];
        if (const auto it = seconds.find(node.name); it != seconds.end()) nc.task_seconds = it->second;
        if (const auto it = bandwidth.find(node.name); it != bandwidth.end()) nc.link_bandwidth = it->second;
      }
      model = lp::model_from_calibration(ex_, cal);
    }
    if (pooled_inputs)  // no input is generated per task (docs/security.md, "Secret inputs")
      for (auto& h : model.hosts) h.input_cpu_seconds_per_byte = 0.0;
    return model;
  };
  const auto it = ex_.run.policy_options.find("lp");
  warmup_.emplace(ex_, std::move(free_links), std::move(build),
                  lp::EstimatePlanOptions::from_policy_options(it == ex_.run.policy_options.end()
                                                                   ? std::map<std::string, double>{}
                                                                   : it->second));
  if (one_machine_ && hosts_shared)
    warmup_->follow_host([this](const lp::PlatformModel& built) { return host_plan(built); });
  const auto& o = warmup_->options();
  if (one_machine_ && hosts_shared) {
    spdlog::warn("master: no calibration: the run starts with FCFS and follows the LP's plan once the CPU this machine "
                 "gives the tree, the tree's CPU per task and each node's are tight over at least {} windows of {:.3g} s "
                 "(each within ±{:.0f}% or the LP between their ends within ±{:.0f}%; at most {:.0f} s; "
                 "docs/live-model.md)",
                 interval_options_.min_windows, kIntervalWindowHeartbeats * heartbeat_, o.max_half_width * 100,
                 interval_options_.max_interval * 100, o.max_wait);
    return;
  }
  spdlog::warn("master: no calibration: the run starts with FCFS and follows the LP's plan once every figure the "
               "LP needs has {} samples and a 95% interval within ±{:.0f}% (at most {:.0f} s; docs/live-model.md)",
               o.min_samples, o.max_half_width * 100, o.max_wait);
}

std::optional<std::vector<net::msg::NodeHint>> LiveRun::first_plan(const std::vector<net::msg::Estimate>& estimates,
                                                                   double at, RunRecord& record) {
  std::optional<lp::EstimatedPlan> plan;
  try {
    plan = warmup_->update(estimates, at);
  } catch (const std::exception& e) {
    spdlog::warn("master: no plan from the run's estimates at {:.1f} s ({}): the run goes on with FCFS", at, e.what());
    return std::nullopt;
  }
  if (!plan) return std::nullopt;
  if (!plan->tight) {
    spdlog::warn("master: estimates still loose after {:.1f} s ({}): planning with them", at,
                 first_three(warmup_->loose(), true));
  }
  const double fair = plan->solution.fair_throughput;
  spdlog::warn("master: plan ready at {:.1f} s: LP optimum {:.4f} tasks/s (from the run's own estimates)", at, fair);
  auto& results = record.results();
  results.predicted_fair_throughput = fair;
  char source[64];
  std::snprintf(source, sizeof source, "estimates at %.1f s", at);
  results.prediction_source = source;
  results.plan = lp::to_json(plan->model, plan->solution);
  for (std::size_t k = 0; k < results.apps.size() && k < plan->solution.app_throughput.size(); ++k)
    results.apps[k].predicted = plan->solution.app_throughput[k];
  auto hints = lp::plan_hints(plan->model, plan->solution);
  if (lp::replans(ex_)) live_.emplace(plan->model, plan->solution);
  prediction_ = Prediction{std::move(plan->model), std::move(plan->solution)};
  return hints;
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
    // A run that ended before its plan from the estimates: the model they would have built.
    lp::PlatformModel model = prediction_ ? lp::observed_model(prediction_->model, seconds, bandwidth)
                              : warmup_   ? warmup_->build(seconds, bandwidth)
                                          : lp::model_from_experiment(ex_, &seconds, &bandwidth);
    if (const auto missing = lacks_host(model)) throw std::runtime_error(*missing);
    model = observed_host(std::move(model), results, lo, hi);
    const auto solution = lp::solve(model);
    results.predicted_fair_a_posteriori = solution.fair_throughput;
    spdlog::info("master: a-posteriori LP optimum (the rates this run observed) {:.4f} tasks/s", solution.fair_throughput);
  } catch (const std::exception& e) {
    // No figure rather than a wrong one: the reason in the log, the table and results.json.
    results.predicted_fair_a_posteriori.reset();
    results.a_posteriori = {{"reason", e.what()}};
    spdlog::info("master: no a-posteriori prediction: {}", e.what());
  }
}

std::optional<std::string> LiveRun::lacks_host(const lp::PlatformModel& model) const {
  if (!one_machine_) return std::nullopt;
  // Every node shares the root's machine: its CPUs, and moving a byte between two of its
  // processes costs them CPU time. A model without a host row holding them all gives each
  // node its declared cores to itself and moves bytes for free (the paper's platform),
  // which this tree is not: its optimum would not describe the run.
  const int h = model.nodes.empty() ? -1 : model.nodes[0].host;
  std::string alone;
  for (const auto& n : model.nodes)
    if (h < 0 || n.host != h) alone += (alone.empty() ? "" : ", ") + n.name;
  if (alone.empty() || model.nodes.size() < 2) return std::nullopt;
  return "the tree's nodes share this machine's CPUs and the model has no host row for " + alone +
         " (a calibration describes the machine: --calibrate or --calibration FILE)";
}

lp::PlatformModel LiveRun::observed_host(lp::PlatformModel model, metrics::RunResults& results, double lo, double hi) const {
  const int h = shared_root_host(model);
  if (h < 0) return model;  // no host the root shares: the nodes' own figures (observed_model) stand
  const auto obs = observe_host(model, h, HostSources{cpu_, cpu_limit_, results}, lo, hi);
  const auto idle = obs.available_cpu_seconds - [&] {
    double tree = 0;
    for (const auto& [name, c] : obs.node_cpu_seconds) tree += c;
    return tree;
  }();
  lp::HostObservationSummary s;
  auto observed = lp::observed_host_model(model, obs, &s);  // throws, naming what is missing
  results.a_posteriori = {{"window", {lo, hi}},
                          {"available_cores", s.available_cores},
                          {"busy_share", s.busy_share},
                          {"idle_cpu_seconds", idle},
                          {"tree_cpu_seconds", s.tree_cpu_seconds},
                          {"node_cpu_seconds", obs.node_cpu_seconds},
                          {"kernel_cpu_seconds", obs.kernel_cpu_seconds},
                          {"cost_factor", s.cost_factor},
                          {"kernel_factor", s.kernel_factor}};
  spdlog::info("master: over the steady window [{:.1f}, {:.1f}] s the tree used {:.1f} CPU-s of {:.1f} available "
               "({:.2f} cores); CPU per task x {:.3f} of the {}", lo, hi, s.tree_cpu_seconds,
               obs.available_cpu_seconds, s.available_cores, s.cost_factor,
               plan_at_ > 0 ? "plan's (from the run's estimates)" : "calibration's");
  return observed;
}

lp::RunInterval LiveRun::host_interval(const lp::PlatformModel& model, double lo, double hi,
                                       const metrics::RunResults& results) const {
  // At most 10 equal windows of at least two heartbeats.
  const double window = kIntervalWindowHeartbeats * heartbeat_;
  const auto parts = static_cast<std::size_t>(std::clamp(std::floor((hi - lo) / window), 0.0, 10.0));
  std::optional<lp::HostWindows> host;
  if (const int h = shared_root_host(model); h >= 0) {
    if (parts < interval_options_.min_windows) {
      char text[96];
      std::snprintf(text, sizeof text, "%zu of %u windows of %.3g s", parts, interval_options_.min_windows, window);
      lp::RunInterval none;
      none.loose = {text};
      return none;
    }
    host = observe_host_windows(model, h, HostSources{cpu_, cpu_limit_, results}, lo, hi, parts);
  }
  return lp::run_interval(model, latest_, host, interval_options_);
}

lp::EstimatePlan::HostModel LiveRun::host_plan(const lp::PlatformModel& built) {
  if (!record_) return {std::nullopt, {"no run yet"}};
  try {
    const auto [lo, hi] = seen_span(clock_, 0.0);  // on the results' clock, as the CPU samples
    auto interval = host_interval(built, lo, hi, record_->results());
    record_interval(interval, clock_, lo, hi, record_->results());
    return {std::move(interval.model), std::move(interval.loose)};
  } catch (const std::exception& e) {
    return {std::nullopt, {e.what()}};
  }
}

void LiveRun::estimate_interval(double at, metrics::RunResults& results) {
  if (interval_made_ || !prediction_) return;
  const auto& model = live_ ? live_->model() : prediction_->model;
  try {
    if (lacks_host(model)) return;  // no model of this machine: no interval (a_posteriori says why)
    const auto [lo, hi] = seen_span(at, plan_at_ + heartbeat_);
    record_interval(host_interval(model, lo, hi, results), at, lo, hi, results);
  } catch (const std::exception& e) {
    interval_loose_ = {e.what()};
  }
}

void LiveRun::record_interval(const lp::RunInterval& interval, double at, double lo, double hi,
                              metrics::RunResults& results) {
  interval_loose_ = interval.loose;
  interval_figures_.clear();
  for (const auto& f : interval.figures) {
    char text[160];
    std::snprintf(text, sizeof text, "%s %.4g ±%.1f %%", f.name.c_str(), f.mean, f.half * 100);
    interval_figures_ += (interval_figures_.empty() ? "" : "; ") + std::string(text);
    if (!f.samples.empty()) {
      interval_figures_ += " (windows";
      for (const double x : f.samples) {
        std::snprintf(text, sizeof text, " %.4g", x);
        interval_figures_ += text;
      }
      interval_figures_ += ")";
    }
  }
  if (!interval.tight()) return;
  interval_made_ = true;
  results.estimate_interval = metrics::RunResults::EstimateInterval{at, interval.low, interval.median, interval.high};
  spdlog::warn("master: prediction interval from this run's estimates at {:.1f} s: {:.4f} to {:.4f} tasks/s ({:+.1f} % "
               "to {:+.1f} %; the LP over them {:.4f})", at, interval.low, interval.high,
               100 * (interval.low / interval.median - 1), 100 * (interval.high / interval.median - 1), interval.median);
  spdlog::info("master: the interval's figures over [{:.1f}, {:.1f}] s: {}", lo, hi, interval_figures_);
}

}  // namespace treefarm::master
