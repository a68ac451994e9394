// Applications from several masters (papers/bertin2008 §2.2): the experiment as one
// origin's master sees it (model::rerooted; `treefarm run`, `treefarm-master --origin`).
#include <gtest/gtest.h>

#include <stdexcept>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/Origins.hpp"

namespace treefarm::model {
namespace {

// Figure 2's assumed tree A(B, C(D, E)); app1 from D, app2 from A (implicit), app3 from C.
constexpr const char* figure2 = R"(
[[node]]
name = "A"
[[node]]
name = "B"
parent = "A"
bandwidth = 100
[[node]]
name = "C"
parent = "A"
bandwidth = 300
latency = 0.5
[[node]]
name = "D"
parent = "C"
bandwidth = 400
[[node]]
name = "E"
parent = "C"
bandwidth = 500
[[event]]
at = 10
node = "C"
bandwidth = 30
[[app]]
name = "app1"
kernel = "noop"
bytes = 8
tasks = 1
origin = "D"
[[app]]
name = "app2"
kernel = "noop"
bytes = 8
tasks = 1
[[app]]
name = "app3"
kernel = "noop"
bytes = 8
tasks = 1
origin = "C"
)";

TEST(Rerooted, TheTreeHangsFromTheOriginAndLinksKeepTheirBandwidth) {
  const auto ex = parse_experiment(figure2, "fig2.toml");
  EXPECT_TRUE(has_origins_below_root(ex));
  EXPECT_EQ(app_origins(ex), (std::vector<std::string>{"D", "A", "C"}));

  const auto d = rerooted(ex, "D");
  ASSERT_EQ(d.nodes.size(), 5u);
  EXPECT_EQ(d.nodes[0].name, "D");
  EXPECT_FALSE(d.nodes[0].parent);
  EXPECT_FALSE(d.nodes[0].bandwidth);
  const auto parent = [&](const std::string& n) { return *d.nodes[*d.node_index(n)].parent; };
  const auto bw = [&](const std::string& n) { return *d.nodes[*d.node_index(n)].bandwidth; };
  EXPECT_EQ(parent("C"), "D");
  EXPECT_EQ(parent("E"), "C");
  EXPECT_EQ(parent("A"), "C");
  EXPECT_EQ(parent("B"), "A");
  EXPECT_DOUBLE_EQ(bw("C"), 400);  // D's old link, now crossed from D up to C
  EXPECT_DOUBLE_EQ(bw("A"), 300);  // C's old link, crossed from C up to A
  EXPECT_DOUBLE_EQ(d.nodes[*d.node_index("A")].latency, 0.5);
  EXPECT_DOUBLE_EQ(bw("E"), 500);
  EXPECT_DOUBLE_EQ(bw("B"), 100);
  // Every parent before its children (the order the rest of treefarm expects).
  for (std::size_t i = 1; i < d.nodes.size(); ++i) EXPECT_LT(*d.parent_index(i), i);
  // Only D's application, its origin now the root.
  ASSERT_EQ(d.apps.size(), 1u);
  EXPECT_EQ(d.apps[0].name, "app1");
  EXPECT_TRUE(d.apps[0].origin.empty());
  EXPECT_FALSE(has_origins_below_root(d));
  // C's link changes now belong to the node at its child end: A.
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].node, "A");

  // From the master: the same tree, its own application.
  const auto a = rerooted(ex, "A");
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].name, ex.nodes[i].name);
    EXPECT_EQ(a.nodes[i].parent, ex.nodes[i].parent);
  }
  ASSERT_EQ(a.apps.size(), 1u);
  EXPECT_EQ(a.apps[0].name, "app2");
}

TEST(Rerooted, AnOriginWithoutApplicationsOrNodeIsRefused) {
  const auto ex = parse_experiment(figure2, "fig2.toml");
  EXPECT_THROW(rerooted(ex, "B"), std::invalid_argument);
  EXPECT_THROW(rerooted(ex, "nowhere"), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::model
