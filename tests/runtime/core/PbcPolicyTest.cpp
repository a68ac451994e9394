// PBC (papers/beaumont2006 §4.4): one bandwidth-centric scheduler per application; the
// root feeds them in the ratio of the weights; one send at a time per application (and
// per child) instead of one in all.
#include "runtime/core/policies/PbcPolicy.hpp"

#include <cmath>

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

TEST(PbcPolicy, SendsOneTaskPerApplicationAtOnceNeverTwoToOneChild) {
  auto node = make_node(node_config(false, 8, {app("a", 1, 20), app("b", 1, 20)}, /*one_port=*/true), "pbc");
  node->start(0);
  EXPECT_EQ(node->state().port, PortModel::one_port_per_app);
  node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"slow", 1, 1e6}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, ChildInfo{"fast", 1, 1e8}}, 0);
  node->handle(event::WorkRequested{child(1), 2}, 1);
  node->handle(event::WorkRequested{child(2), 2}, 1);
  Strings sent;
  for (auto t : {task(0, 0), task(0, 1), task(1, 2), task(1, 3)})
    for (const auto& s : names(node->handle(event::TaskArrived{t}, 2)))
      if (s.rfind("RequestWork", 0) != 0) sent.push_back(s);
  // a goes to the fast child; the second a waits for a's port; b goes to the slow child
  // (the fast one is busy receiving).
  EXPECT_EQ(sent, (Strings{"SendTask child 2 0:0", "SendTask child 1 1:2"}));
  EXPECT_TRUE(node->state().port_busy);
  // The fast child's send is done: a's port and the child are free again.
  sent = names(node->handle(event::SendDone{ChildId{2}}, 3));
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent[0], "SendTask child 2 0:1");
  // A SendDone for a child with no send in progress (it left meanwhile) is ignored.
  const bool busy = node->state().port_busy;
  EXPECT_NO_THROW(node->handle(event::SendDone{ChildId{3}}, 3));
  EXPECT_EQ(node->state().port_busy, busy);
}

TEST(PbcPolicy, RootKeepsThePerApplicationRatios) {
  TreeSpec spec;
  spec.policy = "pbc";
  spec.apps = {app("a", 1, 50), app("b", 3, 150)};
  spec.nodes.resize(4);
  spec.nodes[0].buffer = 3;
  for (std::size_t v = 1; v < 4; ++v) {
    spec.nodes[v].cores = static_cast<std::uint32_t>(v);
    spec.nodes[v].task_seconds = {0.5, 1.5};
    spec.nodes[v].link_seconds = 0.05 * static_cast<double>(v);
  }
  TreeHarness h(spec);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());
  std::vector<std::uint64_t> count(2, 0);
  std::size_t n = 0;
  for (const auto& r : h.log()) {
    if (r.node != 0) continue;
    const auto* a = std::get_if<Action>(&r.what);
    if (!a) continue;
    std::optional<std::uint32_t> k;
    if (const auto* s = std::get_if<action::SendTask>(a)) k = s->task.app().value;
    if (const auto* s = std::get_if<action::StartTask>(a)) k = s->task.app().value;
    if (!k) continue;
    ++count[*k];
    ++n;
    // Drawn 1:3, and the schedulers take turns: every prefix within B of the ratio.
    ASSERT_LE(std::abs(static_cast<double>(count[0]) - static_cast<double>(n) * 0.25), 3.0) << "after " << n;
  }
  EXPECT_EQ(n, 200u);
}

}  // namespace
}  // namespace treefarm::core::testing
