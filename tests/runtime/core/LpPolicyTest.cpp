// LP (papers/beaumont2006 §4.1): each node follows the LP rates with the 1D mechanism
// over (requester, application); the root draws types in proportion to α(k).
#include "runtime/core/policies/FcfsPolicy.hpp"
#include "runtime/core/policies/LpPolicy.hpp"
#include "runtime/core/policies/PlanFollower.hpp"

#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

// A worker with two children "left" and "right" and an executor, 2 apps; the plan.
NodeState worker_state(const NodePlan& plan) {
  NodeState s;
  s.config = node_config(false, 100, {app("a", 1, 1000), app("b", 1, 1000)}, /*one_port=*/false);
  s.config.plan = plan;
  ChildState l, r;
  l.info.name = "left";
  r.info.name = "right";
  s.children.emplace(ChildId{1}, l);
  s.children.emplace(ChildId{2}, r);
  return s;
}

// Scripted: every requester always has a request pending and the buffer always holds
// both types, so every choice is feasible; over every prefix each (requester, app) pair
// stays within the D'Hondt bound of LoadBalancer1D, and is exact at every period end.
TEST(LpPolicy, EveryNodeFollowsThePlanFrequenciesOverEveryPeriod) {
  NodePlan plan;
  plan.local = {2, 1};
  plan.children["left"] = {3, 0};
  plan.children["right"] = {0.5, 1.5};  // Σ = 8 tasks/s: one period = 8 choices
  NodeState s = worker_state(plan);
  LpPolicy p;
  p.start(s);
  const std::vector<Target> who{Target::executor(), child(1), child(2)};
  std::uint64_t seq = 0, next_task = 0;
  for (const auto& t : who) s.requests.push_back(PendingRequest{t, 0, seq++});
  for (int i = 0; i < 4; ++i) s.buffer.push_back(task(static_cast<std::uint32_t>(i % 2), next_task++));
  const std::vector<double> f{2, 1, 3, 0, 0.5, 1.5};  // (executor,a) (executor,b) (left,a) ...
  const double sum = std::accumulate(f.begin(), f.end(), 0.0);
  std::vector<std::uint64_t> count(6, 0);
  for (std::uint64_t n = 1; n <= 800; ++n) {
    auto a = p.select(s);
    ASSERT_TRUE(a.has_value());
    const Target to = s.requests[a->request].from;
    const TaskRef t = s.buffer[a->task];
    s.requests.erase(s.requests.begin() + static_cast<std::ptrdiff_t>(a->request));
    s.buffer.erase(s.buffer.begin() + static_cast<std::ptrdiff_t>(a->task));
    p.assigned(s, to, t);
    s.requests.push_back(PendingRequest{to, 0, seq++});  // it asks again at once
    s.buffer.push_back(task(t.app().value, next_task++));  // the parent refills that type
    const std::size_t i = (to.local ? 0 : to.child.value * 2) + t.app().value;
    ++count[i];
    for (std::size_t c = 0; c < 6; ++c) {
      const double ideal = static_cast<double>(n) * f[c] / sum;
      ASSERT_GT(static_cast<double>(count[c]), ideal - 1.0 - 1e-9) << "choice " << c << " after " << n;
      ASSERT_LE(static_cast<double>(count[c]), static_cast<double>(n + 6) * f[c] / sum + 1e-9) << "choice " << c;
      if (n % 16 == 0) {
        ASSERT_EQ(static_cast<double>(count[c]), ideal) << "choice " << c << " at period end " << n;
      }
    }
  }
}

TEST(LpPolicy, WithoutAFeasiblePlannedChoiceItServesFirstComeFirstServed) {
  NodePlan plan;
  plan.local = {1, 0};  // the executor should only get a
  NodeState s = worker_state(plan);
  LpPolicy p;
  p.start(s);
  s.requests.push_back(PendingRequest{child(2), 0, 0});
  s.requests.push_back(PendingRequest{Target::executor(), 0, 1});
  s.buffer.push_back(task(1, 0));  // only b: nobody planned for it
  EXPECT_EQ(p.fallbacks(), 0u);
  auto a = p.select(s);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->request, 0u);
  EXPECT_EQ(p.fallbacks(), 1u) << "the FCFS choice is counted";
  s.buffer.push_back(task(0, 1));
  a = p.select(s);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->request, 1u) << "the executor's planned a";
  EXPECT_EQ(a->task, 1u);
  EXPECT_EQ(p.fallbacks(), 1u) << "a planned choice is not a fallback";
}

// docs/policies.md, lp: a requester the plan gives nothing is not served
// outside the plan while a planned requester is connected.
TEST(LpPolicy, ARequesterThePlanGivesNothingStaysIdleWhileAPlannedOneIsConnected) {
  NodePlan plan;
  plan.local = {1, 1};
  plan.children["left"] = {1e-6, 0};  // a crumb of the LP's second stage: no rate
  plan.children["right"] = {2, 0};
  NodeState s = worker_state(plan);
  s.config.cores = 1;
  LpPolicy p;
  p.start(s);
  s.requests.push_back(PendingRequest{child(1), 0, 0});  // left asks first
  s.buffer.push_back(task(1, 0));  // b: only the executor is planned for it, and it does not ask
  EXPECT_FALSE(p.select(s).has_value()) << "left is not served outside the plan";
  EXPECT_EQ(p.fallbacks(), 0u);
  s.requests.push_back(PendingRequest{child(2), 0, 1});  // right (planned for a) asks
  const auto a = p.select(s);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->request, 1u) << "the fallback serves the planned requester, not the older idle one";
  EXPECT_EQ(p.fallbacks(), 1u);
}

TEST(LpPolicy, WithNoPlannedRequesterLeftEveryRequesterIsServed) {
  NodePlan plan;
  plan.local = {0, 0};
  plan.children["left"] = {0, 0};
  plan.children["right"] = {1, 1};
  NodeState s = worker_state(plan);
  s.config.cores = 1;
  LpPolicy p;
  p.start(s);
  s.requests.push_back(PendingRequest{child(1), 0, 0});
  s.buffer.push_back(task(0, 0));
  EXPECT_FALSE(p.select(s).has_value()) << "right, planned, is still there";
  s.children.erase(ChildId{2});  // right left the tree: the bag must still drain
  const auto a = p.select(s);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->request, 0u);
  EXPECT_EQ(p.fallbacks(), 1u);
}

TEST(PlanFollower, CrumbsOfTheLpCountAsNoRate) {
  NodePlan plan;
  plan.local = {100, 0};
  plan.children["left"] = {1e-3, 50};  // 1e-5 of a's total: a crumb; b's 50 is real
  plan.children["right"] = {0.5, 1e-2};  // 5e-3 of a's: kept; 2e-4 of b's: kept
  const NodePlan c = without_crumbs(plan);
  EXPECT_EQ(c.local, (std::vector<double>{100, 0}));
  EXPECT_EQ(c.children.at("left"), (std::vector<double>{0, 50}));
  EXPECT_EQ(c.children.at("right"), (std::vector<double>{0.5, 1e-2}));
}

/// Runs the tree of `spec` to its end: the application of each task its root (node 0)
/// sent, in the order it sent them.
std::vector<std::uint32_t> apps_the_root_sent(const TreeSpec& spec) {
  TreeHarness h(spec);
  h.start();
  h.run();
  EXPECT_TRUE(h.emptiness_check());
  std::vector<std::uint32_t> apps;
  for (const auto& r : h.log())
    if (const auto* x = std::get_if<Action>(&r.what); x && r.node == 0)
      if (const auto* s = std::get_if<action::SendTask>(x)) apps.push_back(s->task.app().value);
  return apps;
}

/// The root's mix: among the first n tasks of `sent`, those of application 0 are within
/// `slack` of share · n — for every n up to `up_to`, while fewer than `below` of them were
/// sent (once a bag is empty the mix changes).
void expect_mix(const std::vector<std::uint32_t>& sent, double share, double slack, std::uint64_t up_to,
                std::uint64_t below) {
  std::uint64_t a = 0, n = 0;
  for (const std::uint32_t app_sent : sent) {
    ++n;
    a += app_sent == 0;
    if (n > up_to || a >= below) return;
    ASSERT_LE(std::abs(static_cast<double>(a) - share * static_cast<double>(n)), slack) << n;
  }
}

TEST(LpPolicy, RootDrawsTypesInProportionToThePlannedThroughputs) {
  TreeSpec spec;
  spec.policy = "lp";
  spec.apps = {app("a", 1, 60), app("b", 1, 60)};
  spec.nodes.resize(3);
  spec.nodes[0].cores = 0;
  spec.nodes[0].buffer = 2;
  spec.nodes[1].cores = 2;
  spec.nodes[2].cores = 2;
  NodePlan root;
  root.local = {0, 0};
  root.children[node_name(1)] = {1.5, 0.5};
  root.children[node_name(2)] = {1.5, 0.5};  // α = (3, 1)
  NodePlan leaf1, leaf2;
  leaf1.local = {1.5, 0.5};
  leaf2.local = {1.5, 0.5};
  spec.plans = {root, leaf1, leaf2};
  const auto sent = apps_the_root_sent(spec);
  expect_mix(sent, 0.75, 1.0 + 2.0, sent.size(), 60);
  EXPECT_EQ(sent.size(), 120u);
}

// A plan that lists every node of the tree (as the runtime passes it down) must not count
// a grandchild's tasks twice at the root: they already pass through its child.
TEST(LpPolicy, RootMixCountsOnlyItsOwnChildrenNotDeeperNodesOfThePlan) {
  TreeSpec spec;
  spec.policy = "lp";
  spec.apps = {app("a", 1, 60), app("b", 1, 60)};
  spec.nodes.resize(3);
  spec.nodes[0].cores = 0;
  spec.nodes[0].buffer = 2;
  spec.nodes[1].cores = 0;  // n1 forwards to n2
  spec.nodes[2].cores = 2;
  spec.nodes[2].parent = 1;
  NodePlan root;
  root.local = {0, 0};
  root.children[node_name(1)] = {1, 1};  // α = (1, 1): equal mix
  root.children[node_name(2)] = {1, 1};  // deeper: must not be added again...
  root.children["elsewhere"] = {5, 0};   // ...nor a node that is not a child at all
  NodePlan mid, leaf;
  mid.children[node_name(2)] = {1, 1};
  leaf.local = {1, 1};
  spec.plans = {root, mid, leaf};
  const auto sent = apps_the_root_sent(spec);
  expect_mix(sent, 0.5, 3.0, 100, sent.size() + 1);
  EXPECT_EQ(sent.size(), 120u);
}

// lan-slices: a stock of B = 4 drawn ten a to one b rarely holds the b that
// the node planned on b alone asks for, and lp falls back to giving it a. The root's stock
// is made large enough to hold about one task of the rarest planned application:
// ceil(Σα / min α) = ceil(11 / 1) = 11 here; never below B; a figure of the plan, the same
// whatever is left in the bags.
TEST(LpPolicy, TheRootStockHoldsAboutOneTaskOfTheRarestPlannedApplication) {
  NodeState s;
  s.config = node_config(true, 4, {app("a", 10, 200), app("b", 1, 20)}, /*one_port=*/false);
  NodePlan plan;
  plan.local = {0, 0};
  plan.children["wide"] = {10, 0};
  plan.children["narrow"] = {0, 1};
  s.config.plan = plan;
  s.drawn = {0, 0};
  s.done_ahead = {0, 0};
  LpPolicy p;
  p.start(s);
  EXPECT_EQ(p.root_stock(s), 11u);
  s.config.buffer = 20;
  EXPECT_EQ(p.root_stock(s), 20u) << "never below B";
  s.config.buffer = 4;
  s.drawn = {0, 20};  // b's bag is empty: the size stays
  EXPECT_EQ(p.root_stock(s), 11u);
  FcfsPolicy f;
  EXPECT_EQ(f.root_stock(s), 4u) << "other policies keep B";
}

// PlanFollower::next_draw, what a root that draws on demand ("price") takes from its bag:
// the application of the choice the 1D rule would make if every application with tasks
// left were buffered — here the executor is planned on a, child 1 on b.
TEST(PlanFollowerDraw, NamesTheApplicationThePlanGivesTheRequesterWaiting) {
  NodeState s;
  s.config = node_config(true, 4, {app("a", 1, 10), app("b", 1, 10)}, /*one_port=*/false);
  s.drawn.assign(2, 0);
  s.done_ahead.assign(2, 0);
  ChildState c;
  c.info.name = "c";
  s.children.emplace(ChildId{1}, c);
  NodePlan plan;
  plan.local = {1, 0};
  plan.children["c"] = {0, 1};
  PlanFollower f;
  f.set_plan(plan);
  EXPECT_FALSE(f.next_draw(s).planned) << "nobody waits";
  s.requests.push_back(PendingRequest{child(1), 0, 0});
  auto d = f.next_draw(s);
  EXPECT_TRUE(d.planned);
  ASSERT_TRUE(d.app.has_value());
  EXPECT_EQ(d.app->value, 1u) << "the child is planned on b";
  s.buffer.push_back(task(1, 0));
  d = f.next_draw(s);
  EXPECT_TRUE(d.planned);
  EXPECT_FALSE(d.app.has_value()) << "a buffered b serves it: nothing to draw";
  // The executor waits instead; the buffer holds a b (the stock a mix would keep): draw an a.
  s.requests.clear();
  s.requests.push_back(PendingRequest{Target::executor(), 0, 1});
  d = f.next_draw(s);
  ASSERT_TRUE(d.app.has_value());
  EXPECT_EQ(d.app->value, 0u);
  // a's bag is empty: no planned choice for the executor.
  s.drawn[0] = 10;
  EXPECT_FALSE(f.next_draw(s).planned);
}

}  // namespace
}  // namespace treefarm::core::testing
