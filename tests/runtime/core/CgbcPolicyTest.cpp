// CGBC (papers/beaumont2006 §4.3): macro-tasks of m(k) tasks of each type, scheduled
// bandwidth-centric (the executor first, then the children by link bandwidth).
#include "runtime/core/policies/CgbcPolicy.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

TEST(CgbcPolicy, MacroTaskScalesTheSmallestWeightToOneAndRounds) {
  EXPECT_EQ(CgbcPolicy::macro_task_of({app("a", 0.5, 1), app("b", 1.2, 1), app("c", 1.6, 1)}),
            (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(CgbcPolicy::macro_task_of({app("a", 2, 1), app("b", 2, 1)}), (std::vector<std::uint32_t>{1, 1}));
}

TEST(CgbcPolicy, ServesTheFasterLinkFirstAndTheExecutorBeforeEveryLink) {
  auto node = make_node(node_config(false, 6, {app("a", 1, 20)}, /*one_port=*/false), "cgbc");
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"slow", 1, 1e6}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, ChildInfo{"fast", 1, 1e8}}, 0);
  // The slow child asks first, then the fast one, then the executor: no task yet.
  node->handle(event::WorkRequested{child(1), 1}, 1);
  node->handle(event::WorkRequested{child(2), 1}, 2);
  node->handle(event::WorkRequested{Target::executor(), 1}, 3);
  Strings sent;
  for (std::uint64_t i = 0; i < 3; ++i)
    for (const auto& s : names(node->handle(event::TaskArrived{task(0, i)}, 4)))
      if (s.rfind("RequestWork", 0) != 0) sent.push_back(s);
  EXPECT_EQ(sent, (Strings{"StartTask 0:0", "SendTask child 2 0:1", "SendTask child 1 0:2"}));
}

TEST(CgbcPolicy, LearntBandwidthReordersTheChildren) {
  auto node = make_node(node_config(false, 6, {app("a", 1, 20)}, /*one_port=*/false), "cgbc");
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"c1", 1, 0}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, ChildInfo{"c2", 1, 0}}, 0);
  node->handle(event::TransferObserved{ChildId{1}, 1000, 1.0}, 0);  // 1 kB/s
  node->handle(event::TransferObserved{ChildId{2}, 1000, 0.1}, 0);  // 10 kB/s
  node->handle(event::WorkRequested{child(1), 1}, 1);
  node->handle(event::WorkRequested{child(2), 1}, 1);
  const auto first = names(node->handle(event::TaskArrived{task(0, 0)}, 2));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0], "SendTask child 2 0:0");
}

TEST(CgbcPolicy, RootDrawsWholeMacroTasks) {
  TreeSpec spec;
  spec.policy = "cgbc";
  spec.apps = {app("a", 1, 40), app("b", 2.9, 120)};  // m = (1, 3)
  spec.nodes.resize(3);
  spec.nodes[0].buffer = 2;
  spec.nodes[1].cores = 2;
  spec.nodes[2].cores = 1;
  TreeHarness h(spec);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());
  std::vector<std::uint32_t> order;
  for (const auto& r : h.log()) {
    if (r.node != 0) continue;
    if (const auto* a = std::get_if<Action>(&r.what)) {
      if (const auto* s = std::get_if<action::SendTask>(a)) order.push_back(s->task.app().value);
      if (const auto* s = std::get_if<action::StartTask>(a)) order.push_back(s->task.app().value);
    }
  }
  ASSERT_EQ(order.size(), 160u);
  // Every block of 4 consecutive tasks leaving the root is one macro-task: 1 a, 3 b.
  for (std::size_t i = 0; i + 4 <= order.size(); i += 4) {
    int a = 0;
    for (std::size_t j = i; j < i + 4; ++j) a += order[j] == 0;
    ASSERT_EQ(a, 1) << "macro-task starting at " << i;
  }
}

}  // namespace
}  // namespace treefarm::core::testing
