#include "runtime/plan/Qlse.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/plan/PlanTestSupport.hpp"

namespace treefarm::plan {
namespace {

/// LAN "big" of 6 machines, LAN "small" of 2 faster ones, a thin link between them.
MachineSet two_lan_set(double inter_bandwidth) {
  MachineSet s;
  s.lans = {{"big", 100e6, 0}, {"small", 100e6, 0}};
  s.lan_bandwidth = {{0, inter_bandwidth}, {inter_bandwidth, 0}};
  s.lan_latency = {{0, 0}, {0, 0}};
  for (int i = 0; i < 6; ++i) s.machines.push_back({"b" + std::to_string(i), 0, 4, 1e9, 0, 0});
  for (int i = 0; i < 2; ++i) s.machines.push_back({"s" + std::to_string(i), 1, 4, 1.2e9, 0, 0});
  return s;
}

TEST(Qlse, TaskGraphFromTheQos) {
  const auto s = two_lan_set(1e6);
  const auto apps = test::two_apps();  // 20 Gflop and 1 Gflop, 16 MB each
  // 0.5 tasks/s of each: D = 10.5 Gflop/s, B = 16 MB/s. Powers 4.8, 4.8, 4, ...: n = 3
  // (3 machines of >= 3.5 Gflop/s), not 2 (5.25 > 4.8).
  QlseOptions o;
  o.fan_out = 2;
  const auto g = build_task_graph(s, apps, {0.5, 0.5}, o);
  ASSERT_EQ(g.parent.size(), 3u);
  EXPECT_DOUBLE_EQ(g.computational_request, 10.5e9);
  EXPECT_DOUBLE_EQ(g.bandwidth_request, 16e6);
  EXPECT_DOUBLE_EQ(g.mcr, 3.5e9);
  EXPECT_EQ(g.parent, (std::vector<int>{-1, 0, 0}));
  EXPECT_DOUBLE_EQ(g.mbr[1], 16e6 / 3);
  // More than the whole grid can compute: no graph.
  EXPECT_TRUE(build_task_graph(s, apps, {10, 10}, o).parent.empty());
}

TEST(Qlse, KeepsCommunicatingTasksInsideOneLanWhenTheLinkIsThin) {
  const auto s = two_lan_set(1e3);  // 1 kB/s between the LANs: nothing fits across it
  const auto apps = test::two_apps();
  const std::vector<double> rates{0.5, 0.5};  // 3 tasks of 3.5 Gflop/s
  const auto q = qlse_map(s, apps, rates, {});
  ASSERT_TRUE(q.found);
  EXPECT_DOUBLE_EQ(q.lan_hit_ratio, 1.0);
  for (std::size_t t = 0; t < q.host.size(); ++t) EXPECT_EQ(s.machines[q.host[t]].lan, 0u) << t;
  EXPECT_TRUE(is_valid(q.tree));
  EXPECT_EQ(q.tree.size(), 3u);
  // Greedy best fit takes the 4 Gflop/s hosts first... of the LAN with more power, "big"
  // (24 vs 9.6 Gflop/s): it also stays inside one LAN here.
  const auto g = greedy_map(s, apps, rates, {});
  EXPECT_TRUE(g.found);
  // A request that needs the two fast machines only (MCR 4.41 Gflop/s > 4): both put
  // the two tasks in "small".
  const std::vector<double> heavy{0.42, 0.42};
  for (const auto& m : {qlse_map(s, apps, heavy, {}), greedy_map(s, apps, heavy, {})}) {
    ASSERT_TRUE(m.found);
    ASSERT_EQ(m.host.size(), 2u);
    for (std::size_t h : m.host) EXPECT_EQ(s.machines[h].lan, 1u);
  }
}

TEST(Qlse, SevenTasksCannotCrossAThinLink) {
  // 7 tasks of 3.9 Gflop/s: the six 4 Gflop/s machines of "big" and one of "small".
  const auto apps = test::two_apps();
  const std::vector<double> rates{1.3, 1.3};
  {
    const auto s = two_lan_set(1e3);
    const auto q = qlse_map(s, apps, rates, {});
    EXPECT_EQ(q.graph.parent.size(), 7u);
    EXPECT_FALSE(q.found);  // the edge into the 7th task does not fit the link
    const auto g = greedy_map(s, apps, rates, {});
    EXPECT_FALSE(g.found);  // greedy places it anyway, then fails the bandwidth check
    EXPECT_LT(g.lan_hit_ratio, 1.0);
  }
  {
    const auto s = two_lan_set(1e9);
    const auto q = qlse_map(s, apps, rates, {});
    ASSERT_TRUE(q.found);
    EXPECT_EQ(q.tree.size(), 7u);
    EXPECT_LT(q.lan_hit_ratio, 1.0);
    EXPECT_TRUE(greedy_map(s, apps, rates, {}).found);
  }
}

TEST(Qlse, GreedyFailsWhereQlseFitsTheLinkBudget) {
  // Fast link: everything fits, both succeed and use the same number of machines.
  const auto s = two_lan_set(1e9);
  const auto apps = test::two_apps();
  const auto q = qlse_map(s, apps, {0.8, 0.8}, {});
  const auto g = greedy_map(s, apps, {0.8, 0.8}, {});
  ASSERT_TRUE(q.found);
  ASSERT_TRUE(g.found);
  EXPECT_EQ(q.tree.size(), g.tree.size());
  EXPECT_GE(q.computational_ratio, 1.0);
}

}  // namespace
}  // namespace treefarm::plan
