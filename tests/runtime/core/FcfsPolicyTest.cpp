// FCFS (papers/beaumont2006 §4.2): requests served in arrival order, with the tasks in
// the order they came from the parent; the root mixes task types with the 1D mechanism
// (§4.1) and the weights.
#include "runtime/core/policies/FcfsPolicy.hpp"

#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

// One worker with two children and an executor.
std::unique_ptr<NodeScheduler> worker_with_two_children(bool one_port) {
  auto node = make_node(node_config(false, 6, {app("a", 1, 20), app("b", 1, 20)}, one_port));
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  node->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  return node;
}

TEST(FcfsPolicy, ServesRequestsInArrivalOrder) {
  auto node = worker_with_two_children(/*one_port=*/false);
  EXPECT_EQ(node->policy().name(), "fcfs");
  node->handle(event::WorkRequested{child(2), 2}, 1);
  node->handle(event::WorkRequested{Target::executor(), 1}, 2);
  node->handle(event::WorkRequested{child(1), 1}, 3);
  node->handle(event::WorkRequested{child(2), 1}, 4);
  ASSERT_EQ(node->state().requests.size(), 5u);
  Strings sent;
  for (std::uint64_t i = 0; i < 5; ++i) {
    // Alternate the apps: the order of the parent must be kept, whatever the type.
    for (const auto& s : names(node->handle(event::TaskArrived{task(i % 2, i)}, 5)))
      if (s.rfind("RequestWork", 0) != 0) sent.push_back(s);
  }
  EXPECT_EQ(sent, (Strings{"SendTask child 2 0:0", "SendTask child 2 1:1", "StartTask 0:2",
                           "SendTask child 1 1:3", "SendTask child 2 0:4"}));
  EXPECT_TRUE(node->state().requests.empty());
}

// One-port, the port busy with a send: the executor's request behind the children's is
// served at once, the children's wait for SendDone, and the count of the executor's
// requests the policy relies on follows every request taken.
TEST(FcfsPolicy, WhileThePortIsBusyTheExecutorsRequestBehindChildrenIsServed) {
  auto node = worker_with_two_children(/*one_port=*/true);
  node->handle(event::WorkRequested{child(1), 3}, 1);
  node->handle(event::WorkRequested{child(2), 2}, 1);
  node->handle(event::WorkRequested{Target::executor(), 1}, 2);
  EXPECT_EQ(node->state().local_requests, 1u);
  Strings sent;
  for (std::uint64_t i = 0; i < 3; ++i)
    for (const auto& s : names(node->handle(event::TaskArrived{task(0, i)}, 3)))
      if (s.rfind("RequestWork", 0) != 0) sent.push_back(s);
  EXPECT_EQ(sent, (Strings{"SendTask child 1 0:0", "StartTask 0:1"}));  // 0:2 waits for the port
  EXPECT_EQ(node->state().local_requests, 0u);
  EXPECT_EQ(node->state().requests.size(), 4u);
  sent.clear();
  for (const auto& s : names(node->handle(event::SendDone{ChildId{1}}, 4)))
    if (s.rfind("RequestWork", 0) != 0) sent.push_back(s);
  EXPECT_EQ(sent, (Strings{"SendTask child 1 0:2"}));
}

TEST(FcfsPolicy, HandsOutTasksInTheOrderTheyCameFromTheParent) {
  auto node = worker_with_two_children(/*one_port=*/false);
  node->handle(event::WorkRequested{Target::executor(), 1}, 0);  // asks the parent for 6
  ASSERT_EQ(node->state().requested_from_parent, 6u);
  node->handle(event::TaskArrived{task(1, 7)}, 1);  // to the executor
  const std::vector<TaskRef> order{task(0, 3), task(1, 2), task(0, 0), task(1, 9)};
  for (auto t : order) EXPECT_EQ(names(node->handle(event::TaskArrived{t}, 1)), Strings{});
  Strings sent;
  for (auto c : {1u, 2u, 2u, 1u})
    for (const auto& s : names(node->handle(event::WorkRequested{child(c), 1}, 2))) sent.push_back(s);
  EXPECT_EQ(sent, (Strings{"SendTask child 1 0:3", "RequestWork x1", "SendTask child 2 1:2", "RequestWork x1",
                           "SendTask child 2 0:0", "RequestWork x1", "SendTask child 1 1:9", "RequestWork x1"}));
}

TEST(FcfsPolicy, ServesNothingWithoutATaskOrARequest) {
  FcfsPolicy p;
  NodeState s;
  EXPECT_FALSE(p.select(s).has_value());
  s.requests.push_back(PendingRequest{Target::executor(), 0, 0});
  EXPECT_FALSE(p.select(s).has_value()) << "no task";
  s.requests.clear();
  s.buffer.push_back(task(0, 0));
  EXPECT_FALSE(p.select(s).has_value()) << "no request";
  // Only a child's request while the port is busy: wait.
  s.config.one_port = true;
  s.port_busy = true;
  s.requests.push_back(PendingRequest{child(1), 0, 0});
  EXPECT_FALSE(p.select(s).has_value());
  s.requests.push_back(PendingRequest{Target::executor(), 0, 1});
  s.local_requests = 1;  // kept by the scheduler beside requests
  auto a = p.select(s);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->request, 1u);
  EXPECT_EQ(a->task, 0u);
}

// The order in which tasks leave the root (FCFS keeps the drawn order) stays within one
// task of n·w_k/Σw for every prefix while every application still has tasks in the bag.
void expect_root_mix(const std::vector<double>& weights) {
  TreeSpec spec;
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    spec.apps.push_back(app("app" + std::to_string(k), weights[k], static_cast<std::uint64_t>(weights[k] * 40)));
    total += spec.apps.back().tasks;
  }
  spec.nodes.resize(4);
  spec.nodes[0].cores = 1;
  spec.nodes[0].buffer = 3;
  for (std::size_t v = 1; v < 4; ++v) {
    spec.nodes[v].parent = v == 3 ? 1 : 0;
    spec.nodes[v].cores = static_cast<std::uint32_t>(v);
    spec.nodes[v].task_seconds = {0.5 * static_cast<double>(v)};
    spec.nodes[v].buffer = 2;
  }
  TreeHarness h(spec);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());

  std::vector<AppId> left_root;
  for (const auto& r : h.log()) {
    if (r.node != 0) continue;
    if (const auto* a = std::get_if<Action>(&r.what)) {
      if (const auto* s = std::get_if<action::SendTask>(a)) left_root.push_back(s->task.app());
      if (const auto* s = std::get_if<action::StartTask>(a)) left_root.push_back(s->task.app());
    }
  }
  ASSERT_EQ(left_root.size(), total);
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::uint64_t> count(weights.size(), 0);
  for (std::size_t n = 1; n <= left_root.size(); ++n) {
    ++count[left_root[n - 1].value];
    bool all_have_tasks_left = true;
    for (std::size_t k = 0; k < weights.size(); ++k) all_have_tasks_left &= count[k] < spec.apps[k].tasks;
    if (!all_have_tasks_left) break;
    for (std::size_t k = 0; k < weights.size(); ++k) {
      const double ideal = static_cast<double>(n) * weights[k] / sum;
      ASSERT_LE(std::abs(static_cast<double>(count[k]) - ideal), 1.0 + 1e-9)
          << "app " << k << " after " << n << " tasks: " << count[k] << " vs " << ideal;
    }
  }
}

TEST(FcfsPolicy, RootDrawsTaskTypesInProportionToTheWeights) {
  expect_root_mix({1, 3});
  expect_root_mix({1, 2, 5});
}

}  // namespace
}  // namespace treefarm::core::testing
