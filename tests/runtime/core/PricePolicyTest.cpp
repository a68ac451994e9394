// The "price" policy (papers/bertin2008 §4): options, messages, and the agents' updates
// against closed-form proportional-fair optima.
#include <gtest/gtest.h>

#include <cmath>
#include <variant>

#include "runtime/core/ByteCodec.hpp"
#include "runtime/core/policies/PricePolicy.hpp"
#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core {
namespace {

using testing::app;
using testing::node_config;

AppParams sized(std::string name, double bytes, double flops) {
  AppParams a = app(std::move(name), 1.0, 1000);
  a.bytes = bytes;
  a.flops = flops;
  return a;
}

const PricePolicy& price_of(const NodeScheduler& n) { return dynamic_cast<const PricePolicy&>(n.policy()); }

std::vector<action::SendPolicyMessage> messages(std::vector<Action> actions) {
  std::vector<action::SendPolicyMessage> out;
  for (auto& a : actions)
    if (auto* m = std::get_if<action::SendPolicyMessage>(&a)) out.push_back(std::move(*m));
  return out;
}

TEST(PriceParams, DefaultsAreTable1) {
  const PriceParams p;
  EXPECT_EQ(p.gamma_rho_tilde, 0.02);
  EXPECT_EQ(p.gamma_rho1, 0.02);
  EXPECT_EQ(p.gamma_rho2, 100.0);
  EXPECT_EQ(p.gamma_lambda, 5e-3);
  EXPECT_EQ(p.gamma_mu, 5e-4);
  EXPECT_EQ(p.rho_init, 6e5);
  EXPECT_EQ(p.lambda_init, 2e-2);
  EXPECT_EQ(p.mu_init, 2e-2);
  EXPECT_EQ(p.scaled, 1);
}

TEST(PriceParams, OptionsAreReadAndChecked) {
  const auto p = PriceParams::from_options({{"gamma_rho2", 5.0}, {"scaled", 0}});
  EXPECT_EQ(p.gamma_rho2, 5.0);
  EXPECT_EQ(p.scaled, 0);
  try {
    (void)PriceParams::from_options({{"gamma_rh02", 1.0}});
    FAIL() << "unknown key accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gamma_rh02"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gamma_rho2"), std::string::npos) << "lists the known keys: " << e.what();
  }
  EXPECT_THROW((void)PriceParams::from_options({{"gamma_mu", -1.0}}), std::invalid_argument);
  EXPECT_THROW((void)PriceParams::from_options({{"gamma_rho1", 1.5}}), std::invalid_argument);
  EXPECT_THROW((void)PriceParams::from_options({{"scaled", 0.5}}), std::invalid_argument);
  EXPECT_THROW((void)PriceParams::from_options({{"period", 0}}), std::invalid_argument);
}

TEST(PricePolicy, IsRegisteredAndOtherPoliciesTakeNoOptions) {
  EXPECT_TRUE(is_policy_name("price"));
  EXPECT_EQ(make_policy("price", {{"gamma_rho2", 3.0}})->name(), "price");
  EXPECT_FALSE(policy_option_keys("price").empty());
  EXPECT_TRUE(policy_option_keys("fcfs").empty());
  EXPECT_THROW((void)make_policy("fcfs", {{"gamma_rho2", 3.0}}), std::invalid_argument);
}

// A root alone, two applications at r_1 = 1000 and r_2 = 250 tasks/s on its executor:
// max log ϱ_1 + log ϱ_2 s.t. ϱ_1/r_1 + ϱ_2/r_2 <= 1 gives ϱ_k = r_k/2.
TEST(PricePolicy, SingleNodeReachesTheProportionalOptimum) {
  auto config = node_config(true, 10, {sized("a", 0, 1e6), sized("b", 0, 4e6)}, false);
  config.cores = 1;
  config.local_seconds = {1e-3, 4e-3};
  NodeScheduler node(config, make_policy("price"));
  (void)node.start(0);
  const auto& p = price_of(node);
  for (int t = 1; t <= 400; ++t) (void)node.handle(event::Tick{}, t * p.params().period);
  EXPECT_GE(p.iterations(), 400u);
  EXPECT_NEAR(p.local_rates()[0], 500, 5);
  EXPECT_NEAR(p.local_rates()[1], 125, 1.25);
  EXPECT_GT(p.compute_price(), 0) << "a saturated executor has a positive price";
  // The root draws the applications in proportion to ϱ_k.
  EXPECT_NEAR(p.global_rates()[0] / p.global_rates()[1], 4.0, 0.1);
}

// The unscaled updates (eq. 14-15) with Table 1's steps do not settle on this node (the
// paper's §5.2 instability): the scaled ones do (above). Guards that `scaled` switches.
TEST(PricePolicy, UnscaledUpdatesDifferFromScaled) {
  auto run = [](double scaled) {
    auto config = node_config(true, 10, {sized("a", 0, 1e6), sized("b", 0, 4e6)}, false);
    config.cores = 1;
    config.local_seconds = {1e-3, 4e-3};
    NodeScheduler node(config, make_policy("price", {{"scaled", scaled}}));
    (void)node.start(0);
    for (int t = 1; t <= 400; ++t) (void)node.handle(event::Tick{}, t * 0.1);
    return price_of(node).local_rates();
  };
  const auto s = run(1), u = run(0);
  EXPECT_GT(std::abs(s[0] - u[0]) + std::abs(s[1] - u[1]), 1.0);
}

TEST(PricePolicy, RootSendsPricesDownAndChecksMessages) {
  auto config = node_config(true, 10, {sized("a", 1000, 1e6)}, false);
  config.cores = 1;
  config.local_seconds = {1e-3};
  NodeScheduler root(config, make_policy("price", {{"relative", 0}}));
  (void)root.start(0);
  auto out = messages(root.handle(event::ChildJoined{ChildId{7}, ChildInfo{"c", 1, 1e6}}, 0));
  out = messages(root.handle(event::Tick{}, 0.1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].to_parent);
  EXPECT_EQ(out[0].child, ChildId{7});
  // η of the child = b/B · μ_init (Table 1, per unit of the link).
  ByteReader r(out[0].payload);
  EXPECT_EQ(r.u8(), 1);
  EXPECT_EQ(r.u32(), 1u);
  for (int i = 0; i < 15; ++i) (void)r.f64();
  EXPECT_NEAR(r.f64(), 1000 / 1e6 * 2e-2, 1e-12);
  (void)r.f64();                              // ϱ_k
  EXPECT_EQ(r.f64(), 1.0);                    // n_k: the root alone can run it so far
  EXPECT_NEAR(r.f64(), 1e6 / 1000, 1e-9);     // the path's capacity: B/b tasks/s

  // A child applies the parent's message; a "down" message from a child is refused, and
  // so is a truncated one.
  auto cconf = node_config(false, 10, {sized("a", 1000, 1e6)}, false);
  cconf.cores = 1;
  cconf.local_seconds = {1e-3};
  NodeScheduler child(cconf, make_policy("price"));
  (void)child.start(0);
  EXPECT_FALSE(price_of(child).active());
  auto up = messages(child.handle(event::PolicyMessage{true, ChildId{}, out[0].payload}, 0.1));
  EXPECT_TRUE(price_of(child).active());
  ASSERT_EQ(up.size(), 1u);
  EXPECT_TRUE(up[0].to_parent);
  EXPECT_THROW((void)root.handle(event::PolicyMessage{false, ChildId{7}, out[0].payload}, 0.2), ProtocolError);
  auto cut = up[0].payload;
  cut.pop_back();
  EXPECT_THROW((void)root.handle(event::PolicyMessage{false, ChildId{7}, cut}, 0.2), ProtocolError);
  auto negative = PricePolicy::encode_up({-1.0}, {1.0}, {0.0});
  EXPECT_THROW((void)root.handle(event::PolicyMessage{false, ChildId{7}, negative}, 0.2), ProtocolError);
  (void)root.handle(event::PolicyMessage{false, ChildId{7}, up[0].payload}, 0.2);
  EXPECT_GT(price_of(root).subtree_rates()[0], price_of(root).local_rates()[0]) << "σ includes the child's report";
}

// A forwarding root (no cores) over one child behind a link of B bytes/s: the link
// bounds the child at B/b tasks/s of the one application, the executor at r; the optimum
// of log ϱ is min(r, B/b). Messages go through the core both ways.
TEST(PricePolicy, TwoNodesConvergeToTheBottleneck) {
  for (const double bandwidth : {2e5, 2e6}) {
    auto rconf = node_config(true, 10, {sized("a", 1000, 1e6)}, false);
    NodeScheduler root(rconf, make_policy("price"));
    auto cconf = node_config(false, 10, {sized("a", 1000, 1e6)}, false);
    cconf.cores = 1;
    cconf.local_seconds = {1e-3};  // r = 1000 tasks/s
    NodeScheduler child(cconf, make_policy("price"));
    (void)root.start(0);
    (void)child.start(0);
    std::vector<std::uint8_t> to_child, to_root;
    auto route = [&](std::vector<Action> actions, bool from_root) {
      for (auto& m : messages(std::move(actions))) (from_root ? to_child : to_root) = m.payload;
    };
    route(root.handle(event::ChildJoined{ChildId{1}, ChildInfo{"c", 1, bandwidth}}, 0), true);
    for (int t = 1; t <= 1500; ++t) {
      const double now = t * 0.1;
      route(root.handle(event::Tick{}, now), true);
      route(child.handle(event::Tick{}, now), false);
      if (!to_child.empty()) route(child.handle(event::PolicyMessage{true, ChildId{}, to_child}, now), false);
      if (!to_root.empty()) route(root.handle(event::PolicyMessage{false, ChildId{1}, to_root}, now), true);
    }
    const double expected = std::min(1000.0, bandwidth / 1000);
    EXPECT_NEAR(price_of(child).local_rates()[0], expected, 0.02 * expected) << "B = " << bandwidth;
    EXPECT_NEAR(price_of(root).global_rates()[0], expected, 0.02 * expected) << "B = " << bandwidth;
  }
}

// Relative steps (the default, bertin2008 §6): a node starts from its own executor shared
// by weight (here 2:1 over r = 1000 and 250 tasks/s), with prices at 0; Table 1
// (relative = 0) starts every rate at ϱ_init.
TEST(PricePolicy, RelativeStepsStartFromTheNodesOwnShare) {
  auto config = node_config(true, 10, {sized("a", 0, 1e6), sized("b", 0, 4e6)}, false);
  config.apps[0].weight = 2;
  config.cores = 1;
  config.local_seconds = {1e-3, 4e-3};
  NodeScheduler rel(config, make_policy("price"));
  (void)rel.start(0);
  // start() makes the first update: prices 0, so each rate grows by g = 0.05 times itself
  // (ϱ_k/n_k with n_k = 1).
  EXPECT_NEAR(price_of(rel).local_rates()[0], 1000.0 * 2 / 3 * 1.05, 1e-9);
  EXPECT_NEAR(price_of(rel).local_rates()[1], 250.0 / 3 * 1.05, 1e-9);
  NodeScheduler table1(config, make_policy("price", {{"relative", 0}}));
  (void)table1.start(0);
  EXPECT_GT(price_of(table1).local_rates()[0], 5e5);
  EXPECT_THROW((void)PriceParams::from_options({{"relative", 2}}), std::invalid_argument);
  EXPECT_THROW((void)PriceParams::from_options({{"relative_gain", 0}}), std::invalid_argument);
  EXPECT_THROW((void)PriceParams::from_options({{"relative_price_gain", 1.5}}), std::invalid_argument);
  // Weighted proportional optimum: max 2·log(ϱ_a/2) + log ϱ_b s.t. ϱ_a/1000 + ϱ_b/250 <= 1
  // gives ϱ_a = 2/3·1000, ϱ_b = 1/3·250: the start is the optimum and stays there.
  for (int t = 1; t <= 200; ++t) (void)rel.handle(event::Tick{}, t * 0.1);
  EXPECT_NEAR(price_of(rel).local_rates()[0], 1000.0 * 2 / 3, 0.01 * 1000 * 2 / 3);
  EXPECT_NEAR(price_of(rel).local_rates()[1], 250.0 / 3, 0.01 * 250 / 3);
}

}  // namespace
}  // namespace treefarm::core
