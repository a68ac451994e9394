#include "lab/campaign/CampaignPlan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "runtime/core/policies/CgbcPolicy.hpp"
#include "runtime/core/policies/DataCentricPlanner.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/sim/Simulation.hpp"
#include "tools/simulate/GenPlatform.hpp"

namespace treefarm::lab::campaign {

namespace {

/// Uniform doubles in [0, 1), the same conversion as gen-platform (portable across
/// standard libraries).
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  double next() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  std::uint64_t seed() { return rng_() >> 1; }

 private:
  std::mt19937_64 rng_;
};

// Theoretical throughputs (§5.2.1: "For the heuristics LP, DATA-CENTRIC and CGBC, we can
// easily compute an expected theoretical fair throughput").

/// Tasks/s of application k on node u computed alone: executor slots / task seconds.
double rate(const lp::PlatformModel& m, std::size_t u, std::size_t k) {
  if (!m.can_run(u, k)) return 0.0;
  const double slots = std::floor(static_cast<double>(m.nodes[u].cores) / m.apps[k].cores_per_task);
  return slots / m.nodes[u].task_seconds[k];
}

std::vector<core::ViewNode> view_of(const lp::PlatformModel& m) {
  std::vector<core::ViewNode> view(m.nodes.size());
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    view[u].name = m.nodes[u].name;
    view[u].parent = m.nodes[u].parent;
    const double b = m.nodes[u].link_bandwidth;
    view[u].bandwidth = u == 0 ? 0.0 : (std::isfinite(b) ? b : sim::unbounded_bandwidth);
  }
  return view;
}

double data_centric_full_view(const lp::PlatformModel& m, const model::Experiment& ex) {
  auto view = view_of(m);
  for (std::size_t u = 0; u < view.size(); ++u)
    for (std::size_t k = 0; k < m.apps.size(); ++k) view[u].rate.push_back(rate(m, u, k));
  std::vector<core::PlannerApp> apps;
  for (std::size_t k = 0; k < m.apps.size(); ++k)
    apps.push_back({m.apps[k].weight, m.apps[k].bytes, ex.apps[k].task_flops()});
  const auto r = core::DataCentricPlanner::plan(view, apps, m.comm_model == model::CommModel::one_port);
  double fair = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < apps.size(); ++k) fair = std::min(fair, r.totals[k] / apps[k].weight);
  return fair;
}

/// CGBC (§4.3) schedules macro-tasks of m(k) tasks of each type bandwidth-centric: its
/// steady state is the bandwidth-centric throughput of one composite application whose
/// task is a macro-task (Σ m(k)·b(k) bytes, Σ m(k)/rate_u(k) seconds on node u). The
/// planner's start is exactly that solution; with one application it stops there.
double cgbc_theoretical(const lp::PlatformModel& m, const model::Experiment& ex) {
  std::vector<core::AppParams> params;
  for (const auto& a : ex.apps) params.push_back({a.name, a.weight, a.tasks, 0, 0, a.cores_per_task});
  const auto macro = core::CgbcPolicy::macro_task_of(params);
  auto view = view_of(m);
  for (std::size_t u = 0; u < view.size(); ++u) {
    double seconds = 0;
    for (std::size_t k = 0; k < m.apps.size(); ++k) {
      const double r = rate(m, u, k);
      seconds = r > 0 ? seconds + macro[k] / r : std::numeric_limits<double>::infinity();
    }
    view[u].rate = {std::isfinite(seconds) ? 1.0 / seconds : 0.0};
  }
  core::PlannerApp composite{1.0, 0.0, 0.0};
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    composite.bytes += macro[k] * m.apps[k].bytes;
    composite.flops += macro[k] * ex.apps[k].task_flops();
  }
  const auto r = core::DataCentricPlanner::plan(view, {composite}, m.comm_model == model::CommModel::one_port);
  double per_weight = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < m.apps.size(); ++k) per_weight = std::min(per_weight, macro[k] / m.apps[k].weight);
  return r.totals[0] * per_weight;
}

}  // namespace

void check_options(const CampaignOptions& o) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("experiment paper: " + what); };
  if (o.sizes.empty() || o.degrees.empty()) bad("sizes and degrees must not be empty");
  if (o.trees < 1) bad("trees per configuration must be >= 1");
  if (o.apps < 1) bad("apps must be >= 1");
  if (o.tasks < 1 || o.buffer < 1) bad("tasks and buffer must be >= 1");
  if (o.big_buffer > 0 && o.big_tasks < 1) bad("big-buffer tasks must be >= 1");
  if (!(o.ccr_max_low >= 0.001 && o.ccr_max_high >= o.ccr_max_low))
    bad("CCR_max range must be ordered and >= the minimum CCR 0.001 bytes/flop");
  if (std::find(o.policies.begin(), o.policies.end(), "lp") == o.policies.end())
    bad("policies must include \"lp\", the reference of the ratios (§5.2.2)");
  for (const auto& p : o.policies) (void)core::make_policy(p);  // unknown: invalid_argument naming them
  for (const auto& p : o.big_policies) (void)core::make_policy(p);
}

std::vector<Platform> make_platforms(const CampaignOptions& o) {
  Draw draw(o.seed);
  std::vector<Platform> out;
  for (const auto n : o.sizes)
    for (const auto d : o.degrees)
      for (std::uint32_t t = 0; t < o.trees; ++t) {
        Platform p;
        p.nodes = n;
        p.max_degree = d;
        p.tree = t;
        p.seed = draw.seed();
        const double x = draw.next();
        p.ccr_max = o.ccr_log_uniform
                        ? std::exp(std::log(o.ccr_max_low) + x * (std::log(o.ccr_max_high) - std::log(o.ccr_max_low)))
                        : o.ccr_max_low + x * (o.ccr_max_high - o.ccr_max_low);
        simulate::GenOptions g;
        g.nodes = n;
        g.max_degree = d;
        g.apps = o.apps;
        g.seed = p.seed;
        g.ccr_max = p.ccr_max;
        g.tasks = o.tasks;
        g.buffer = o.buffer;
        g.task_sizes = o.task_sizes;
        p.name = "n" + std::to_string(n) + "-d" + std::to_string(d) + "-t" + std::to_string(t);
        p.experiment = model::parse_experiment(simulate::generate_platform(g), p.name + ".toml");
        for (std::size_t u = 0; u < p.experiment.nodes.size(); ++u) {
          p.depth = std::max(p.depth, p.experiment.depth(u));
          p.widest = std::max(p.widest, p.experiment.children(u).size());
        }
        // The paper's LP (3) has no latency (§3.1): the theoretical values of this table
        // come from the model without the latency rows (docs/lp.md "Latency"), as the
        // heuristics' plans below know none either. The lp policy's own runs follow the
        // LP with latency (runtime/sim/Simulation.cpp).
        auto model = lp::model_from_experiment(p.experiment);
        for (auto& node : model.nodes) node.request_round_trip = node.port_hold = 0.0;
        p.lp_optimum = lp::solve(model).fair_throughput;
        p.cgbc_theoretical = cgbc_theoretical(model, p.experiment);
        p.data_centric_full_view = data_centric_full_view(model, p.experiment);
        out.push_back(std::move(p));
      }
  return out;
}

std::vector<Job> make_jobs(const std::vector<Platform>& platforms, const CampaignOptions& o) {
  std::vector<Job> jobs;
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    for (const auto& pol : o.policies) jobs.push_back({p, pol, main_run});
    if (o.big_buffer > 0)
      for (const auto& pol : o.big_policies) {
        jobs.push_back({p, pol, big_run});
        if (o.latency_control) jobs.push_back({p, pol, no_latency_run});
      }
  }
  std::stable_sort(jobs.begin(), jobs.end(), [&](const Job& a, const Job& b) {
    auto cost = [&](const Job& j) {
      return platforms[j.platform].nodes * (j.kind != main_run ? o.big_tasks : o.tasks);
    };
    return cost(a) > cost(b);
  });
  return jobs;
}

model::Experiment variant(const Platform& p, const Job& job, const CampaignOptions& o) {
  auto ex = p.experiment;
  ex.run.policy = job.policy;
  if (job.kind != main_run) {
    ex.run.buffer = o.big_buffer;
    for (auto& a : ex.apps) a.tasks = o.big_tasks;
  }
  if (job.kind == no_latency_run)
    for (auto& n : ex.nodes) n.latency = 0;
  return ex;
}

}  // namespace treefarm::lab::campaign
