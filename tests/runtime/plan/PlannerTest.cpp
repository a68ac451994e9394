#include "runtime/plan/Planner.hpp"

#include <gtest/gtest.h>

#include "runtime/lp/PlatformModel.hpp"
#include "tests/runtime/plan/PlanTestSupport.hpp"

namespace treefarm::plan {
namespace {

TEST(Planner, ParsesQos) {
  const auto apps = test::two_apps();
  EXPECT_TRUE(parse_qos("maximum", apps).maximum);
  auto q = parse_qos("0.5", apps);
  EXPECT_FALSE(q.maximum);
  EXPECT_EQ(q.rates, (std::vector<double>{0.5, 0.5}));
  q = parse_qos("high=2, low=0.25", apps);
  EXPECT_EQ(q.rates, (std::vector<double>{0.25, 2.0}));
  EXPECT_THROW(parse_qos("low=1", apps), std::invalid_argument);          // high missing
  EXPECT_THROW(parse_qos("low=1,nope=2", apps), std::invalid_argument);   // unknown app
  EXPECT_THROW(parse_qos("low=-1,high=1", apps), std::invalid_argument);  // not > 0
  EXPECT_THROW(parse_qos("fast", apps), std::invalid_argument);
}

TEST(Planner, WrittenExperimentPredictsThePlannedThroughput) {
  const auto set = test::generated(7, 2, 9);
  const auto apps = test::two_apps();
  for (Method m : {Method::rmshc, Method::qlse, Method::greedy}) {
    PlanOptions o;
    o.method = m;
    const auto r = plan(set, apps, {}, o);
    ASSERT_TRUE(r.found) << to_string(m);
    EXPECT_GT(r.fair_throughput, 0);
    EXPECT_TRUE(r.qos_satisfied);
    const auto text = experiment_toml(r, set, apps, {}, "test");
    const auto ex = model::parse_experiment(text, "planned.toml");
    EXPECT_EQ(ex.nodes.size(), r.tree.size());
    const auto lp = lp::solve(lp::model_from_experiment(ex));
    EXPECT_NEAR(lp.fair_throughput, r.fair_throughput, 1e-9 * r.fair_throughput) << to_string(m);
    const auto j = to_json(r, set);
    EXPECT_TRUE(j.contains("fair_throughput"));
    EXPECT_TRUE(j.contains("seconds"));
    EXPECT_EQ(j["tree"].size(), r.tree.size());
  }
}

TEST(Planner, ExplicitQosIsCheckedAgainstTheLp) {
  const auto set = test::generated(6, 2, 2);
  const auto apps = test::two_apps();
  PlanOptions o;
  o.method = Method::rmshc;
  const double best = plan(set, apps, {}, o).fair_throughput;
  o.qos.maximum = false;
  o.qos.rates = {0.5 * best, 0.5 * best};
  auto r = plan(set, apps, {}, o);
  EXPECT_TRUE(r.qos_satisfied);
  EXPECT_NEAR(r.qos_scale, 2.0, 1e-6);
  o.qos.rates = {2 * best, 2 * best};
  r = plan(set, apps, {}, o);
  EXPECT_FALSE(r.qos_satisfied);
  o.method = Method::qlse;
  r = plan(set, apps, {}, o);
  EXPECT_FALSE(r.found && r.qos_satisfied);
}

TEST(Planner, AppsFileHoldsAppsAndRunOnly) {
  const std::string apps = "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 10\n\n[run]\npolicy = \"lp\"\n";
  const auto ex = parse_apps(apps, "apps.toml");
  ASSERT_EQ(ex.apps.size(), 1u);
  EXPECT_EQ(ex.run.policy, "lp");
  EXPECT_TRUE(ex.nodes.empty());
  try {
    parse_apps(apps + "[[node]]\nname = \"m\"\n", "apps.toml");
    FAIL();
  } catch (const model::FileError& e) {
    EXPECT_EQ(e.line(), 9);
    EXPECT_EQ(e.field(), "node");
  }
  try {  // the experiment parser's errors keep the file's line numbers
    parse_apps("[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = -3\ntasks = 10\n", "apps.toml");
    FAIL();
  } catch (const model::FileError& e) {
    EXPECT_EQ(e.line(), 4);
  }
}

}  // namespace
}  // namespace treefarm::plan
