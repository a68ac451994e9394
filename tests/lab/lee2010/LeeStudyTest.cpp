// lab/lee2010/LeeStudy: the job-level simulation of papers/lee2010 (slides 19-23) on small
// grids. The simulation checks itself (a job started twice, where it does not fit, or
// never: std::logic_error); these tests check what its results must satisfy.
#include <gtest/gtest.h>

#include <optional>

#include "lab/lee2010/LeeStudy.hpp"

namespace treefarm::lab::lee2010 {
namespace {

LeeStudyOptions small(double load, double ratio) {
  LeeStudyOptions o;
  o.nodes = 60;
  o.jobs = 400;
  o.load = load;
  o.constraint_ratio = ratio;
  o.seed = 7;
  return o;
}

TEST(LeeStudy, EverySchemeRunsEveryPlaceableJobOnceAndOnlyInterNodeSchemesSendMessages) {
  const auto o = small(0.9, 0.5);
  std::optional<std::uint64_t> unplaceable;
  for (auto s : all_lee_schemes()) {
    SCOPED_TRACE(to_string(s));
    LeeResult r;
    ASSERT_NO_THROW(r = run_lee_study(o, s));
    EXPECT_GE(r.mean_wait, 0);
    EXPECT_GE(r.p95_wait, 0);
    EXPECT_GT(r.makespan, 30 * 60);
    if (!unplaceable) unplaceable = r.unplaceable;
    EXPECT_EQ(r.unplaceable, *unplaceable) << "the same jobs and grid for every scheme";
    const bool inter = s != LeeScheme::vanilla && s != LeeScheme::l && s != LeeScheme::cent;
    if (!inter) {
      EXPECT_EQ(r.messages, 0u);
      EXPECT_EQ(r.migrations, 0u);
    } else {
      EXPECT_GT(r.migrations, 0u);
      EXPECT_GE(r.messages, r.migrations);
    }
  }
}

TEST(LeeStudy, SameSeedSameResult) {
  const auto o = small(0.9, 0.5);
  const auto a = run_lee_study(o, LeeScheme::liq_pull), b = run_lee_study(o, LeeScheme::liq_pull);
  EXPECT_EQ(a.mean_wait, b.mean_wait);
  EXPECT_EQ(a.messages, b.messages);
}

TEST(LeeStudy, CentralSchedulerStartsEveryJobAtOnceOnAnIdleGrid) {
  // Load 0.02, no constraints: a global queue always finds a free core.
  const auto r = run_lee_study(small(0.02, 0.0), LeeScheme::cent);
  EXPECT_EQ(r.mean_wait, 0);
  EXPECT_EQ(r.unplaceable, 0u);
}

TEST(LeeStudy, MigrationAndGlobalKnowledgeBeatStaticPlacementUnderLoad) {
  const auto o = small(0.9, 0.5);
  const double vanilla = run_lee_study(o, LeeScheme::vanilla).mean_wait;
  EXPECT_GT(vanilla, 0);
  EXPECT_LT(run_lee_study(o, LeeScheme::li_pull).mean_wait, vanilla);
  EXPECT_LT(run_lee_study(o, LeeScheme::cent).mean_wait, vanilla);
}

TEST(LeeStudy, RefusesBadOptions) {
  auto o = small(0.9, 0.5);
  o.constraint_ratio = 1.5;
  EXPECT_THROW(run_lee_study(o, LeeScheme::l), std::invalid_argument);
  o = small(0.9, 0.5);
  o.nodes = 1;
  EXPECT_THROW(run_lee_study(o, LeeScheme::l), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::lab::lee2010
