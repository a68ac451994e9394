// The campaign of papers/beaumont2006 §5 (lab/campaign/Campaign.hpp), in quick mode and on
// tiny subsets. The full campaign is DISABLED_FullPaperCampaign (run it with
// --gtest_also_run_disabled_tests; TREEFARM_CAMPAIGN_OUT sets its output directory,
// TREEFARM_CAMPAIGN_JOBS the simulations at once, TREEFARM_CAMPAIGN_QUICK=1 quick mode).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lab/campaign/Campaign.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::lab::campaign {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

nlohmann::json summary(const fs::path& dir) { return nlohmann::json::parse(slurp(dir / "campaign.json")); }

bool have_gnuplot() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

TEST(CampaignTest, QuickSubsetIsSmall) {
  CampaignOptions o;
  o.out_dir = "x";
  o.jobs = 3;
  const auto q = quick_subset(o);
  EXPECT_EQ(q.sizes, (std::vector<std::uint32_t>{5, 10}));
  EXPECT_EQ(q.degrees, (std::vector<std::uint32_t>{2, 5}));
  EXPECT_EQ(q.trees, 1u);
  EXPECT_LT(q.tasks, o.tasks);
  EXPECT_LT(q.big_tasks, o.big_tasks);
  EXPECT_EQ(q.out_dir, "x");
  EXPECT_EQ(q.jobs, 3u);
  EXPECT_EQ(q.policies, o.policies);
}

TEST(CampaignTest, QuickRunWritesReportSummaryAndHistograms) {
  TempDir dir("campaign-test");
  CampaignOptions o;
  o.out_dir = dir.path().string();
  o.quick = true;
  o.jobs = 2;
  std::ostringstream progress;
  ASSERT_EQ(paper_campaign(o, progress), 0) << progress.str();

  const auto j = summary(dir.path());
  EXPECT_EQ(j["platforms"].size(), 4u);  // 2 sizes × 2 degrees × 1 tree
  EXPECT_EQ(j["simulations"].get<int>(), 4 * (5 + 3 + 3));  // main, big buffer, big buffer without latency
  EXPECT_EQ(j["incomplete"].get<int>(), 0);
  EXPECT_TRUE(j["options"]["quick"].get<bool>());

  // The LP policy against itself: every ratio is exactly 1.
  const auto& lp = j["ratio_to_lp"]["lp"];
  EXPECT_EQ(lp["runs"].get<int>(), 4);
  EXPECT_DOUBLE_EQ(lp["geometric_mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(lp["worst"].get<double>(), 1.0);
  for (const auto& v : lp["ln_ratio"]) EXPECT_EQ(v.get<double>(), 0.0);

  for (const auto& pol : {"fcfs", "cgbc", "pbc", "lp", "data-centric"}) {
    SCOPED_TRACE(pol);
    const auto& s = j["ratio_to_lp"][pol];
    EXPECT_EQ(s["runs"].get<int>(), 4);
    const double gm = s["geometric_mean"].get<double>();
    EXPECT_TRUE(std::isfinite(gm));
    EXPECT_GT(gm, 0.0);
    EXPECT_TRUE(std::isfinite(s["geometric_mean_to_lp_optimum"].get<double>()));
    // No policy beats the LP optimum by more than the measurement window's noise.
    EXPECT_GT(s["geometric_mean_to_lp_optimum"].get<double>(), 0.9);
    EXPECT_TRUE(std::isfinite(s["highest_to_lp_optimum"].get<double>()));
  }

  // The theoretical values: the LP optimum bounds the heuristics' plans.
  for (const auto& p : j["platforms"]) {
    const double opt = p["lp_optimum"].get<double>();
    EXPECT_GT(opt, 0.0);
    EXPECT_LE(p["cgbc_theoretical"].get<double>(), opt * (1 + 1e-6));
    EXPECT_LE(p["data_centric_full_view"].get<double>(), opt * (1 + 1e-6));
    // DATA-CENTRIC's theoretical value is its root's plan in the run itself (§5.2.1);
    // the other policies report none.
    for (const auto& kind : {"runs", "big_buffer_runs", "big_buffer_no_latency_runs"}) {
      const double planned = p[kind]["data-centric"]["planned_fair"].get<double>();
      EXPECT_GT(planned, 0.0) << kind;
      EXPECT_LE(planned, opt * (1 + 1e-6)) << kind;
      EXPECT_TRUE(p[kind]["cgbc"]["planned_fair"].is_null()) << kind;
    }
    EXPECT_GT(p["cgbc_theoretical"].get<double>(), 0.0);
    EXPECT_EQ(p["runs"].size(), 5u);
    EXPECT_EQ(p["big_buffer_runs"].size(), 3u);
    EXPECT_EQ(p["big_buffer_no_latency_runs"].size(), 3u);
  }
  for (const auto& pol : {"lp", "cgbc", "data-centric"}) {
    SCOPED_TRACE(pol);
    for (const auto& kind : {"runs", "big_buffer_runs", "big_buffer_no_latency_runs"}) {
      EXPECT_EQ(j["deviation"][pol][kind]["values"].size(), 4u);
      EXPECT_TRUE(std::isfinite(j["deviation"][pol][kind]["mean"].get<double>()));
    }
  }
  // A run of the LP policy stays below its own optimum (up to the window's noise).
  for (const auto& d : j["deviation"]["lp"]["runs"]["values"]) EXPECT_GT(d.get<double>(), -0.05);
  // Without latencies, with big buffers, the LP policy reaches its optimum closely.
  EXPECT_LT(j["deviation"]["lp"]["big_buffer_no_latency_runs"]["mean_abs"].get<double>(), 0.05);

  const auto md = slurp(dir.path() / "paper-campaign.md");
  EXPECT_THAT(md, ::testing::HasSubstr("§5.2.2"));
  EXPECT_THAT(md, ::testing::HasSubstr("§5.2.1"));
  EXPECT_THAT(md, ::testing::HasSubstr("--quick"));
  EXPECT_THAT(md, ::testing::HasSubstr("| data-centric | 4 |"));
  EXPECT_THAT(md, ::testing::HasSubstr("1.564"));  // the paper's FCFS figure beside ours
  EXPECT_THAT(md, ::testing::HasSubstr("wall time"));
  if (have_gnuplot()) {
    EXPECT_GT(fs::file_size(dir.path() / "ln-ratio.png"), 1000u);
    EXPECT_GT(fs::file_size(dir.path() / "deviation.png"), 1000u);
    EXPECT_THAT(md, ::testing::HasSubstr("![ln(LP / policy) histograms](ln-ratio.png)"));
  }
}

TEST(CampaignTest, ResultsDoNotDependOnTheNumberOfJobs) {
  CampaignOptions o;
  o.sizes = {5};
  o.degrees = {3};
  o.trees = 3;
  o.tasks = 20;
  o.big_buffer = 0;
  o.policies = {"lp", "fcfs"};
  std::vector<nlohmann::json> runs;
  for (const std::uint32_t jobs : {1u, 3u}) {
    TempDir dir("campaign-test");
    o.out_dir = dir.path().string();
    o.jobs = jobs;
    std::ostringstream progress;
    ASSERT_EQ(paper_campaign(o, progress), 0) << progress.str();
    const auto j = summary(dir.path());
    ASSERT_EQ(j["platforms"].size(), 3u);
    nlohmann::json fair;
    for (const auto& p : j["platforms"])
      for (const auto& pol : {"lp", "fcfs"}) {
        EXPECT_FALSE(p["runs"].contains("pbc"));
        EXPECT_FALSE(p.contains("big_buffer_runs"));
        EXPECT_FALSE(p.contains("big_buffer_no_latency_runs"));
        fair.push_back(p["runs"][pol]["fair"]);
      }
    runs.push_back(fair);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(CampaignTest, RejectsBadOptions) {
  std::ostringstream progress;
  CampaignOptions o;
  o.policies = {"fcfs", "cgbc"};
  EXPECT_THROW(
      {
        try {
          paper_campaign(o, progress);
        } catch (const std::invalid_argument& e) {
          EXPECT_THAT(e.what(), ::testing::HasSubstr("\"lp\""));
          throw;
        }
      },
      std::invalid_argument);
  o.policies = {"lp", "round-robin"};
  EXPECT_THROW(paper_campaign(o, progress), std::invalid_argument);
  o = CampaignOptions{};
  o.ccr_max_low = 0.0001;
  EXPECT_THROW(paper_campaign(o, progress), std::invalid_argument);
  o = CampaignOptions{};
  o.sizes.clear();
  EXPECT_THROW(paper_campaign(o, progress), std::invalid_argument);
}

// The full campaign (docs/results/paper-campaign.md), about half an hour on 2 cores.
TEST(CampaignTest, DISABLED_FullPaperCampaign) {
  CampaignOptions o;
  const char* out = std::getenv("TREEFARM_CAMPAIGN_OUT");
  o.out_dir = out ? out : "out/paper-campaign";
  if (const char* jobs = std::getenv("TREEFARM_CAMPAIGN_JOBS")) o.jobs = static_cast<std::uint32_t>(std::atoi(jobs));
  if (const char* cmd = std::getenv("TREEFARM_CAMPAIGN_COMMAND")) o.command = cmd;
  o.quick = std::getenv("TREEFARM_CAMPAIGN_QUICK") != nullptr;
  EXPECT_EQ(paper_campaign(o, std::cout), 0);
}

}  // namespace
}  // namespace treefarm::lab::campaign
