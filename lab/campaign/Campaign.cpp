#include "lab/campaign/Campaign.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/sim/Simulation.hpp"
#include "lab/campaign/CampaignPlan.hpp"
#include "lab/campaign/CampaignReport.hpp"
#include "lab/campaign/CampaignStats.hpp"
#include "lab/campaign/ProcessPool.hpp"

namespace treefarm::lab::campaign {

namespace {

using namespace campaign;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

nlohmann::json summary_of(const sim::SimulationOutcome& o) {
  nlohmann::json j;
  j["completed"] = o.completed && o.results.ok();
  j["error"] = o.error;
  j["fair"] = o.results.fair_throughput;
  j["lp_optimum"] = o.results.predicted_fair_throughput.value_or(0.0);
  if (o.policy_planned_fair_throughput) j["planned_fair"] = *o.policy_planned_fair_throughput;
  std::vector<double> rho;
  for (const auto& a : o.results.apps) rho.push_back(a.throughput);
  j["rho"] = rho;
  j["simulated_seconds"] = o.simulated_seconds;
  j["wall_seconds"] = o.wall_seconds;
  j["events"] = o.events;
  j["lost"] = o.results.lost;
  return j;
}

/// The RunResult of a child's answer (summary_of's JSON, or {"exception": ...}).
RunResult result_of(const ProcessOutcome& outcome) {
  RunResult r;
  if (outcome.killed) {
    r.error = "killed after " + std::to_string(static_cast<int>(outcome.wall_seconds)) + " s wall";
  } else if (WIFSIGNALED(outcome.status)) {
    r.error = std::string("simulation process killed by signal ") + strsignal(WTERMSIG(outcome.status));
  } else if (outcome.output.empty()) {
    r.error = "simulation process exited without a result";
  } else {
    try {
      const auto j = nlohmann::json::parse(outcome.output);
      if (j.contains("exception")) {
        r.error = j["exception"].get<std::string>();
      } else {
        r.done = true;
        r.completed = j["completed"].get<bool>();
        r.error = j["error"].get<std::string>();
        r.fair = j["fair"].get<double>();
        r.lp_optimum = j["lp_optimum"].get<double>();
        r.rho = j["rho"].get<std::vector<double>>();
        if (j.contains("planned_fair")) r.planned_fair = j["planned_fair"].get<double>();
        r.simulated_seconds = j["simulated_seconds"].get<double>();
        r.wall_seconds = j["wall_seconds"].get<double>();
        r.events = j["events"].get<std::uint64_t>();
        r.lost = j["lost"].get<std::uint64_t>();
      }
    } catch (const std::exception& e) {
      r.error = std::string("unreadable result: ") + e.what();
    }
  }
  return r;
}

/// Runs every job, at most `parallel` forked simulations at once (ProcessPool). Each
/// child runs SimGrid once (sim::simulate_in_this_process: it solves the LP for the lp
/// policy's plan and the prediction) and sends a small JSON summary through a pipe.
/// `ran[i]` says whether job i ran to its end (false: never started, or stopped by `stop`).
std::vector<RunResult> run_jobs(const std::vector<Platform>& platforms, const std::vector<Job>& jobs,
                                const CampaignOptions& o, std::uint32_t parallel, std::ostream& progress,
                                const std::atomic<bool>* stop, std::vector<bool>& ran) {
  std::vector<RunResult> results(jobs.size());
  ran.assign(jobs.size(), false);
  std::size_t finished = 0, failed = 0;
  const auto t0 = Clock::now();
  auto last_report = t0;
  sim::SimulationOptions so;
  so.wall_limit = o.wall_limit;
  // A child past its own wall limit by two minutes is killed.
  const ProcessPool pool(parallel, o.wall_limit > 0 ? o.wall_limit + 120 : 0, &progress);
  pool.run(
      jobs.size(),
      [&](std::size_t i) -> ProcessPool::Work {
        const auto& job = jobs[i];
        auto platform = sim::make_sim_platform(variant(platforms[job.platform], job, o));
        return [platform = std::move(platform), so]() {
          nlohmann::json j;
          try {
            j = summary_of(sim::simulate_in_this_process(platform, so));
          } catch (const std::exception& e) {
            j = {{"exception", e.what()}};
          } catch (...) {
            j = {{"exception", "unknown exception"}};
          }
          return j.dump();
        };
      },
      [&](std::size_t i, const ProcessOutcome& outcome) {
        if (outcome.stopped) return;  // ended by us on SIGINT/SIGTERM: neither a result nor a failure
        ran[i] = true;
        auto& r = results[i] = result_of(outcome);
        ++finished;
        if (!r.done || !r.completed) {
          ++failed;
          const auto& job = jobs[i];
          progress << "  run " << platforms[job.platform].name << " " << job.policy << " (" << kind_key[job.kind]
                   << ") did not complete: " << r.error << std::endl;
        }
        if (seconds_since(last_report) >= 10 || finished == jobs.size()) {
          last_report = Clock::now();
          const double el = seconds_since(t0);
          char line[200];
          std::snprintf(line, sizeof line, "  [%zu/%zu simulations] %.0f s elapsed, about %.0f s left%s", finished,
                        jobs.size(), el, el / static_cast<double>(finished) * static_cast<double>(jobs.size() - finished),
                        failed ? (", " + std::to_string(failed) + " incomplete").c_str() : "");
          progress << line << std::endl;
        }
      },
      stop);
  return results;
}

}  // namespace

CampaignOptions quick_subset(CampaignOptions o) {
  o.sizes = {5, 10};
  o.degrees = {2, 5};
  o.trees = 1;
  o.tasks = 50;
  o.big_tasks = 300;
  return o;
}

int paper_campaign(const CampaignOptions& options, std::ostream& progress, const std::atomic<bool>* stop) {
  const auto o = options.quick ? quick_subset(options) : options;
  check_options(o);
  const std::uint32_t parallel = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  const fs::path out = o.out_dir;
  fs::create_directories(out);
  const auto t0 = Clock::now();
  const std::time_t started = std::time(nullptr);

  progress << "paper campaign (papers/beaumont2006 §5): generating " << o.sizes.size() * o.degrees.size() * o.trees
           << " platforms" << std::endl;
  const auto platforms = make_platforms(o);
  const double gen_seconds = seconds_since(t0);
  auto jobs = make_jobs(platforms, o);
  progress << "  " << jobs.size() << " simulations, " << parallel << " at once (platforms and theoretical "
           << "throughputs in " << fmt("%.1f", gen_seconds) << " s)" << std::endl;
  std::vector<bool> ran;
  auto results = run_jobs(platforms, jobs, o, parallel, progress, stop, ran);
  const double wall = seconds_since(t0);
  const bool interrupted = stop && stop->load();
  std::string note;
  if (interrupted) {
    // Interrupted (SIGINT/SIGTERM): the report covers the simulations that ran to their end.
    const std::size_t planned = jobs.size();
    std::vector<Job> kept_jobs;
    std::vector<RunResult> kept_results;
    for (std::size_t i = 0; i < planned; ++i)
      if (ran[i]) {
        kept_jobs.push_back(jobs[i]);
        kept_results.push_back(std::move(results[i]));
      }
    jobs = std::move(kept_jobs);
    results = std::move(kept_results);
    note = "interrupted after " + std::to_string(jobs.size()) + " of " + std::to_string(planned) +
           " simulations: the figures cover only those";
    progress << "paper campaign: " << note << std::endl;
  }

  const auto stats = compute_stats(platforms, jobs, results, o);
  const CampaignRun run{o, parallel, started, wall, platforms, jobs, stats, note};
  const std::string plot_error = plot_histograms(out, run);
  if (!plot_error.empty()) progress << "  histograms: " << plot_error << std::endl;
  write_json(out, run);
  write_report(out, run, plot_error);

  progress << "paper campaign: " << jobs.size() << " simulations in " << fmt("%.0f", wall) << " s wall; "
           << (out / "paper-campaign.md").string() << ", " << (out / "campaign.json").string() << std::endl;
  for (const auto& pol : o.policies) {
    const auto& s = stats.policies.at(pol);
    progress << "  " << pol << ": geometric mean of LP/" << pol << " " << fmt("%.3f", std::exp(s.ln_ratio.mean()))
             << ", worst " << fmt("%.2f", std::exp(s.ln_ratio.max())) << " (" << s.ln_ratio.size() << " platforms)"
             << std::endl;
  }
  if (interrupted) return 130;
  return stats.incomplete == 0 ? 0 : 4;
}

}  // namespace treefarm::lab::campaign
