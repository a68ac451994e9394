// Whole trees of node schedulers under the in-memory harness: randomized runs that must
// complete, with the buffer bound, the request rule and the one-port model checked after
// every event; children leaving mid-run. Parameterized over every policy make_policy()
// knows, so each new policy is held to the same rules.
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

constexpr int random_tree_count = 200;

/// A random tree: 1-30 nodes, degree up to 5, C in {0,1,2} (at least one node with
/// cores), B in 1..12, 1-4 apps with random weights and 1-60 tasks each, random task
/// durations per node and app, random link times and latencies.
TreeSpec random_tree(std::uint64_t seed, const std::string& policy) {
  std::mt19937_64 rng(seed);
  auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  TreeSpec spec;
  spec.policy = policy;
  spec.one_port = uniform_int(0, 3) != 0;
  const int apps = uniform_int(1, 4);
  for (int k = 0; k < apps; ++k)
    spec.apps.push_back(app("app" + std::to_string(k), uniform(0.25, 5.0), static_cast<std::uint64_t>(uniform_int(1, 60))));
  const int n = uniform_int(1, 30);
  const int max_degree = uniform_int(1, 5);
  std::vector<int> degree(static_cast<std::size_t>(n), 0);
  bool any_cores = false;
  for (int v = 0; v < n; ++v) {
    NodeSpec node;
    if (v > 0) {
      std::vector<std::size_t> open;
      for (int u = 0; u < v; ++u)
        if (degree[static_cast<std::size_t>(u)] < max_degree) open.push_back(static_cast<std::size_t>(u));
      node.parent = open[static_cast<std::size_t>(uniform_int(0, static_cast<int>(open.size()) - 1))];
      ++degree[node.parent];
    }
    node.cores = static_cast<std::uint32_t>(uniform_int(0, 2));
    any_cores |= node.cores > 0;
    node.buffer = static_cast<std::uint32_t>(uniform_int(1, 12));
    node.task_seconds.clear();
    for (int k = 0; k < apps; ++k) node.task_seconds.push_back(uniform(0.05, 4.0));
    node.link_seconds = uniform(0.001, 1.5);
    node.latency_seconds = uniform(0.0, 0.2);
    spec.nodes.push_back(node);
  }
  if (!any_cores) spec.nodes[static_cast<std::size_t>(uniform_int(0, n - 1))].cores = static_cast<std::uint32_t>(uniform_int(1, 2));
  return spec;
}

std::string describe_tree(const TreeSpec& spec) {
  std::string s = std::to_string(spec.nodes.size()) + " nodes, " + std::to_string(spec.apps.size()) + " apps, " +
                  (spec.one_port ? "one-port" : "multi-port") + ", (parent,C,B):";
  for (std::size_t v = 0; v < spec.nodes.size(); ++v)
    s += " " + std::to_string(v) + "=(" + (v ? std::to_string(spec.nodes[v].parent) : "-") + "," +
         std::to_string(spec.nodes[v].cores) + "," + std::to_string(spec.nodes[v].buffer) + ")";
  return s;
}

class TreeRun : public ::testing::TestWithParam<std::string> {};

TEST_P(TreeRun, RandomTreesCompleteWithEveryTaskRecordedOnce) {
  for (int seed = 1; seed <= random_tree_count; ++seed) {
    const TreeSpec spec = random_tree(static_cast<std::uint64_t>(seed), GetParam());
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe_tree(spec));
    TreeHarness h(spec);
    h.start();
    h.run();
    ASSERT_TRUE(h.emptiness_check());
    EXPECT_EQ(h.run_complete_count(), 1u);
    EXPECT_EQ(h.node(0).completed(), h.node(0).total_tasks());
    EXPECT_EQ(h.node(0).duplicates(), 0u);
    EXPECT_EQ(h.duplicate_completions(), 0u);
    if (HasFatalFailure() || HasNonfatalFailure()) return;
  }
}

// After every handle(): the buffer never exceeds B (at the root: the policy's root_stock,
// at least B; lp's holds about one task of its rarest planned application); a worker that
// was asked for work holds exactly B (buffered + requested from its parent), one that never
// was holds nothing; and the RequestWork it issued asked for exactly the room left after
// its assignments.
TEST_P(TreeRun, BufferBoundAndRequestsMatchTheRoomAfterEveryEvent) {
  std::uint64_t checked = 0;
  std::uint64_t requests_seen = 0;
  for (int seed = 1; seed <= random_tree_count; ++seed) {
    const TreeSpec spec = random_tree(static_cast<std::uint64_t>(seed), GetParam());
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe_tree(spec));
    TreeHarness h(spec);
    h.on_step = [&](const TreeHarness& t, const Step& s) {
      const auto& st = t.node(s.node).state();
      const std::uint64_t b = st.config.buffer;
      ++checked;
      if (s.node == 0) {
        const std::uint64_t stock = std::max<std::uint64_t>(b, t.node(0).policy().root_stock(st));
        ASSERT_LE(stock, 1000u);
        ASSERT_LE(st.buffer.size(), stock) << "root after " << describe(*s.event);
        return;
      }
      ASSERT_LE(st.buffer.size(), b) << "node " << s.node << " after " << describe(*s.event);
      std::uint64_t assigned = 0;
      std::uint64_t requested = 0;
      std::size_t request_actions = 0;
      for (const auto& a : *s.actions) {
        if (std::holds_alternative<action::SendTask>(a) || std::holds_alternative<action::StartTask>(a)) ++assigned;
        // Tasks given back to the parent (a pull: lp takes waiting tasks back at the end of
        // the bag) leave the buffer as assigned ones do.
        if (const auto* r = std::get_if<action::ReturnTasks>(&a)) assigned += r->tasks.size();
        if (const auto* r = std::get_if<action::RequestWork>(&a)) {
          requested += r->count;
          ++request_actions;
        }
      }
      requests_seen += request_actions;
      const std::uint64_t held = st.buffer.size() + st.requested_from_parent;
      const std::uint64_t held_before = s.buffer_before + s.requested_before;
      ASSERT_GE(held_before, assigned);
      ASSERT_LE(request_actions, 1u) << "node " << s.node << " after " << describe(*s.event);
      if (t.asked(s.node)) {
        ASSERT_EQ(held, b) << "node " << s.node << " after " << describe(*s.event);
        ASSERT_EQ(requested, b - (held_before - assigned))
            << "node " << s.node << " after " << describe(*s.event) << ": asked for other than the room";
      } else {
        ASSERT_EQ(held, 0u) << "node " << s.node << " holds tasks nothing below asked for";
        ASSERT_EQ(requested, 0u);
      }
    };
    h.start();
    h.run();
    ASSERT_TRUE(h.emptiness_check());
  }
  EXPECT_GT(checked, 10000u);
  EXPECT_GT(requests_seen, 1000u);
}

// One-port: between a SendTask and its SendDone a node issues no other SendTask, while
// its executor is still served. Under multi-port, sends do overlap. A policy with
// PortModel::one_port_per_app ("pbc") may overlap sends of different applications to
// different children, never two to one child or two of one application.
TEST_P(TreeRun, OnePortNeverOverlapsSendsButKeepsTheExecutorBusy) {
  std::uint64_t starts_during_send = 0;
  std::uint64_t overlapping_sends = 0;
  std::uint64_t per_app_overlaps = 0;
  for (int seed = 1; seed <= random_tree_count; ++seed) {
    const TreeSpec spec = random_tree(static_cast<std::uint64_t>(seed), GetParam());
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + describe_tree(spec));
    TreeHarness h(spec);
    std::vector<std::map<std::uint32_t, AppId>> sending(spec.nodes.size());  // child -> app
    h.on_step = [&](const TreeHarness& t, const Step& s) {
      auto& mine = sending[s.node];
      if (const auto* d = std::get_if<event::SendDone>(s.event)) mine.erase(d->child.value);
      const bool per_app = t.node(s.node).state().port == PortModel::one_port_per_app;
      for (const auto& a : *s.actions) {
        if (const auto* send = std::get_if<action::SendTask>(&a)) {
          if (per_app) {
            ASSERT_FALSE(mine.contains(send->child.value)) << "node " << s.node << " sent twice at once to one child";
            for (const auto& [c, app] : mine)
              ASSERT_NE(app, send->task.app()) << "node " << s.node << " sent two tasks of one application at once";
            if (!mine.empty()) ++per_app_overlaps;
          } else if (t.spec().one_port) {
            ASSERT_TRUE(mine.empty()) << "node " << s.node << " sent while a send was in progress";
          } else if (!mine.empty()) {
            ++overlapping_sends;
          }
          if (t.spec().one_port || !mine.contains(send->child.value)) mine[send->child.value] = send->task.app();
        }
        if (std::holds_alternative<action::StartTask>(a) && t.spec().one_port && !mine.empty())
          ++starts_during_send;
      }
      ASSERT_EQ(t.node(s.node).state().port_busy, t.spec().one_port && !mine.empty());
    };
    h.start();
    h.run();
    ASSERT_TRUE(h.emptiness_check());
  }
  EXPECT_GT(starts_during_send, 100u) << "the executor must not wait for the port";
  EXPECT_GT(overlapping_sends, 100u) << "multi-port sends must overlap";
  if (make_policy(GetParam())->one_port_per_application()) {
    EXPECT_GT(per_app_overlaps, 100u) << "one port per application: sends of different applications overlap";
  }
}

TEST_P(TreeRun, SubtreeWithoutCoresNeverHoardsTasks) {
  // root (1 core) -> relay (0) -> leaf (0), and root -> worker (2): the relay and the
  // leaf must not take tasks they can never compute.
  TreeSpec spec;
  spec.policy = GetParam();
  spec.apps = {app("a", 1, 30), app("b", 2, 30)};
  spec.nodes.resize(4);
  spec.nodes[0].cores = 1;
  spec.nodes[1].cores = 0;
  spec.nodes[2].parent = 1;
  spec.nodes[2].cores = 0;
  spec.nodes[3].cores = 2;
  spec.nodes[3].buffer = 2;
  TreeHarness h(spec);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());
  EXPECT_EQ(h.node(1).state().requested_from_parent, 0u);
  EXPECT_EQ(h.node(2).state().requested_from_parent, 0u);
  EXPECT_EQ(h.node(0).state().children.at(ChildId{1}).sent, 0u);
}

// A subtree dies mid-run: its tasks in flight are re-queued at its parent and completed
// elsewhere, each recorded once.
TEST_P(TreeRun, TasksOfADeadSubtreeAreCompletedElsewhere) {
  TreeSpec spec;
  spec.policy = GetParam();
  spec.apps = {app("a", 1, 60), app("b", 1, 40)};
  spec.nodes.resize(5);
  spec.nodes[0].cores = 1;
  spec.nodes[1].cores = 2;  // node 1 and its child 2 die
  spec.nodes[1].buffer = 6;
  spec.nodes[2].parent = 1;
  spec.nodes[2].cores = 2;
  spec.nodes[3].cores = 1;
  spec.nodes[4].parent = 3;
  spec.nodes[4].cores = 2;
  TreeHarness h(spec);
  h.kill(1, 4.0);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());
  EXPECT_EQ(h.node(0).duplicates(), 0u);
  EXPECT_FALSE(h.alive(1));
  EXPECT_FALSE(h.alive(2));
  EXPECT_FALSE(h.node(0).state().children.contains(ChildId{1}));

  // The tasks the root had sent to node 1 and not seen done by the kill were sent again,
  // to node 3 or the root's executor, and completed.
  std::set<TaskId> lost;
  std::set<TaskId> resent;
  for (const auto& r : h.log()) {
    if (r.node != 0) continue;
    if (const auto* a = std::get_if<Action>(&r.what)) {
      if (const auto* s = std::get_if<action::SendTask>(a)) {
        if (s->child.value == 1) lost.insert(s->task.id);
        else if (lost.contains(s->task.id)) resent.insert(s->task.id);
      }
      if (const auto* s = std::get_if<action::StartTask>(a); s && lost.contains(s->task.id)) resent.insert(s->task.id);
      if (const auto* c = std::get_if<action::TaskCompleted>(a); c && r.time < 4.0) lost.erase(c->task.id);
    }
  }
  EXPECT_FALSE(lost.empty()) << "node 1 should have held tasks when it died";
  EXPECT_EQ(resent, lost);
}

TEST_P(TreeRun, RandomTreesSurviveAChildLeaving) {
  int runs = 0;
  for (int seed = 1; seed <= random_tree_count && runs < 60; ++seed) {
    const TreeSpec spec = random_tree(static_cast<std::uint64_t>(seed) * 7919, GetParam());
    // Kill a worker whose parent keeps a consumer (its own cores or a sibling subtree
    // with cores): tasks re-queued at a node with nothing below would wait forever.
    std::vector<bool> subtree_cores(spec.nodes.size(), false);
    for (std::size_t v = spec.nodes.size(); v-- > 0;) {
      subtree_cores[v] = subtree_cores[v] || spec.nodes[v].cores > 0;
      if (v > 0 && subtree_cores[v]) subtree_cores[spec.nodes[v].parent] = true;
    }
    std::optional<std::size_t> victim;
    for (std::size_t v = 1; v < spec.nodes.size() && !victim; ++v) {
      const std::size_t p = spec.nodes[v].parent;
      bool parent_keeps_consumer = spec.nodes[p].cores > 0;
      for (std::size_t u = 1; u < spec.nodes.size(); ++u)
        if (u != v && spec.nodes[u].parent == p && subtree_cores[u]) parent_keeps_consumer = true;
      if (subtree_cores[v] && parent_keeps_consumer) victim = v;
    }
    if (!victim) continue;
    ++runs;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", node " + std::to_string(*victim) + " dies: " + describe_tree(spec));
    TreeHarness h(spec);
    h.kill(*victim, 0.5 + static_cast<double>(seed % 10));
    h.start();
    h.run();
    ASSERT_TRUE(h.emptiness_check());
  }
  EXPECT_GE(runs, 30);
}

INSTANTIATE_TEST_SUITE_P(Policies, TreeRun, ::testing::ValuesIn(policy_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = param_info.param;  // gtest names: letters, digits, '_'
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace treefarm::core::testing
