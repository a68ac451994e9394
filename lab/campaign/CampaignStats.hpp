#pragma once
/// @file CampaignStats.hpp
/// The statistics of the paper campaign: per policy, the distribution of
/// ln(fair throughput of lp / that of the policy) (papers/beaumont2006 §5.2.2), and the
/// deviation of the experimental fair throughput from the theoretical one (§5.2.1), per
/// policy and pooled, per kind of run. Internal to tools/sim (Campaign.cpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "lab/campaign/CampaignPlan.hpp"

namespace treefarm::lab::campaign {

/// ln(ratio) is normalized to ±8 when a fair throughput is (close to) zero, as the paper
/// does for PBC (§5.2.2: "normalized to 8").
constexpr double ln_cap = 8.0;

/// ln(reference / x), normalized to ±ln_cap when a throughput is zero or the ratio beyond.
double capped_ln_ratio(double reference, double x);

/// What one simulation gave back.
struct RunResult {
  bool done = false;       ///< A result came back (else: the process died or was killed).
  bool completed = false;  ///< Every task recorded.
  std::string error;
  double fair = 0;         ///< Experimental fair throughput min_k ρ_k/w_k, tasks/s.
  double lp_optimum = 0;   ///< LP optimum of the simulated variant, tasks/s.
  /// The policy's own expected fair throughput at the end of the run (DATA-CENTRIC's
  /// root plan, core::Policy::planned_fair_throughput), tasks/s; none for the others.
  std::optional<double> planned_fair;
  std::vector<double> rho; ///< ρ_k, tasks/s.
  double simulated_seconds = 0, wall_seconds = 0;
  std::uint64_t events = 0, lost = 0;
};

/// A sample of values; every statistic of an empty one is NaN.
struct Distribution {
  std::vector<double> values;
  std::size_t size() const { return values.size(); }
  double mean() const;
  double mean_abs() const;
  /// Linear interpolation between the order statistics, q in [0, 1].
  double quantile(double q) const;
  double max() const;
  double min() const;
  std::size_t count_if_above(double x) const;
};

/// §5.2.2 of one policy.
struct PolicyStats {
  Distribution ln_ratio;       ///< ln(LP fair / policy fair), capped (§5.2.2).
  Distribution ln_vs_optimum;  ///< ln(LP optimum / policy fair), capped.
  std::map<std::uint32_t, Distribution> ln_ratio_by_size;
  std::map<std::uint32_t, Distribution> ln_ratio_by_degree;
  Distribution large_ln_ratio;  ///< Trees of 50 nodes and more.
  Distribution small_ln_ratio;  ///< Trees of fewer than 50 nodes.
  std::size_t starved = 0;      ///< Fair throughput zero or ln ratio capped.
  double sim_wall = 0;          ///< Summed wall seconds of its simulations.
};

/// Everything the report and campaign.json show.
struct CampaignStats {
  /// Each job's result by (platform, policy, kind).
  std::map<std::tuple<std::size_t, std::string, int>, const RunResult*> at;
  std::size_t incomplete = 0;   ///< Simulations without a complete result.
  double sim_wall = 0;          ///< Summed wall seconds of every simulation.
  std::map<std::string, PolicyStats> policies;  ///< §5.2.2, every main-run policy.
  std::array<bool, kinds> kind_ran{};           ///< Which kinds of runs the campaign had.
  /// §5.2.1: (theoretical − experimental) / theoretical, per policy and kind.
  std::map<std::string, std::array<Distribution, kinds>> deviation;
  std::array<Distribution, kinds> pooled;       ///< The same, lp + cgbc + data-centric pooled.
  std::vector<std::string> deviation_policies;  ///< The keys of `deviation`, in report order.
  std::array<std::string, kinds> kind_title;    ///< "buffer 10, 200 tasks/app", ...
};

/// The theoretical fair throughput (tasks/s) of `policy` on `p` (NaN: none), and its name.
double theoretical(const Platform& p, const std::string& policy, const RunResult& r);
std::string theoretical_name(const std::string& policy);

/// The statistics of `results` (results[i] is that of jobs[i]).
CampaignStats compute_stats(const std::vector<Platform>& platforms, const std::vector<Job>& jobs,
                            const std::vector<RunResult>& results, const CampaignOptions& o);

}  // namespace treefarm::lab::campaign
