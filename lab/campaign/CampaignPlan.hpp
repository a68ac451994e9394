#pragma once
/// @file CampaignPlan.hpp
/// What `treefarm experiment paper` simulates (papers/beaumont2006 §5.1): the random
/// platforms with their theoretical fair throughputs (§5.2.1), and the jobs, one
/// simulation each (platform, policy, kind of run). Internal to tools/sim (Campaign.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "lab/campaign/Campaign.hpp"

namespace treefarm::lab::campaign {

/// One generated platform (§5.1.2) and its CCR_max draw (§5.1.3).
struct Platform {
  std::string name;                   ///< "n<nodes>-d<max degree>-t<tree>"
  std::uint32_t nodes = 0, max_degree = 0, tree = 0;
  std::uint64_t seed = 0;
  double ccr_max = 0;                 ///< bytes/flop
  model::Experiment experiment;       ///< 200 tasks per app, buffer 10, as generated.
  std::size_t depth = 0;              ///< Of the generated tree (master = 0).
  std::size_t widest = 0;             ///< Most children of a node in the generated tree.
  double lp_optimum = 0;              ///< LP (3) without latency (the paper's): max-min fair throughput, tasks/s.
  double cgbc_theoretical = 0;        ///< Bandwidth-centric on the macro-task, tasks/s.
  /// DataCentricPlanner over the whole true tree, tasks/s: a reference only (the run's
  /// own root plan is DATA-CENTRIC's theoretical value, RunResult::planned_fair).
  double data_centric_full_view = 0;
};

/// The three kinds of runs: main (§5.2.2), big buffer (§5.2.1), and big buffer on the same
/// platform with every link latency set to 0 (our control: the LP ignores latencies).
enum Kind : int { main_run = 0, big_run = 1, no_latency_run = 2 };
constexpr int kinds = 3;
/// The JSON key of each kind's runs.
constexpr const char* kind_key[kinds] = {"runs", "big_buffer_runs", "big_buffer_no_latency_runs"};

/// One simulation.
struct Job {
  std::size_t platform = 0;  ///< Index into the platforms.
  std::string policy;
  Kind kind = main_run;
};

/// Throws std::invalid_argument naming the first bad option.
void check_options(const CampaignOptions& o);

/// The platforms of `o.sizes` × `o.degrees` × `o.trees`, drawn from `o.seed`, each with
/// its LP optimum and the theoretical throughputs of cgbc and data-centric (tasks/s).
std::vector<Platform> make_platforms(const CampaignOptions& o);

/// Every (platform, policy, kind) of the campaign, the largest platforms first (so that
/// the tail of the run keeps every core busy).
std::vector<Job> make_jobs(const std::vector<Platform>& platforms, const CampaignOptions& o);

/// The experiment a job simulates: the platform's, with the job's policy, and the big
/// buffer, task count and zero latencies of its kind.
model::Experiment variant(const Platform& p, const Job& job, const CampaignOptions& o);

}  // namespace treefarm::lab::campaign
