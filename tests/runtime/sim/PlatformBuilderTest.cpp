// The simulated platform (runtime/sim/PlatformBuilder): one zone, and between a parent and
// a child exactly the edge's link (behind the parent's port on the way down). Each case
// builds the platform in a child process (SimGrid's engine is one per process).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include "runtime/sim/PlatformBuilder.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"

namespace treefarm::sim {
namespace {

namespace sg4 = simgrid::s4u;

// m (no cores) -> a -> {b, c}; a's link 2 ms, b's 3 ms, c's 5 ms; every node's sends
// share a 50 MB/s port (bounded multi-port).
const std::string tree = R"(
[[node]]
name = "m"
cores = 0
[[node]]
name = "a"
parent = "m"
cores = 1
speed = "1Gf"
bandwidth = "10MBps"
latency = "2ms"
[[node]]
name = "b"
parent = "a"
cores = 1
speed = "1Gf"
bandwidth = "20MBps"
latency = "3ms"
[[node]]
name = "c"
parent = "a"
cores = 2
speed = "2Gf"
bandwidth = "30MBps"
latency = "5ms"
[[app]]
name = "x"
bytes = "1MB"
flops = "1Gf"
tasks = 4
[run]
comm_model = "multi-port"
max_out_bandwidth = "50MBps"
)";

// Names of the links from `from` to `to` and the route's latency ("names @ seconds").
std::string route(const sg4::Host* from, const sg4::Host* to) {
  std::vector<sg4::Link*> links;
  double latency = 0;
  from->route_to(to, links, &latency);
  std::string out;
  for (const auto* l : links) out += l->get_name() + " ";
  return out + "@ " + std::to_string(latency);
}

// Builds `tree` in this process's engine and checks it; exits 0 when all holds, else
// prints what differs and exits 1.
void build_and_check() {
  int argc = 2;
  std::string arg0 = "platform-test", arg1 = "--log=root.thres:critical";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  sg4::Engine engine(&argc, argv);
  const auto platform = make_sim_platform(test::experiment(tree));
  const auto built = build_platform(platform);
  int wrong = 0;
  const auto expect = [&](const std::string& got, const std::string& want) {
    if (got != want) {
      std::cerr << "got '" << got << "', want '" << want << "'\n";
      ++wrong;
    }
  };
  // One zone whatever the tree's size: SimGrid seals a zone by walking every host.
  expect(std::to_string(engine.get_netzone_root()->get_children().size()), "0");
  const auto& h = built.hosts;  // m, a, b, c
  expect(route(h[0], h[1]), "out-m link-a_DOWN @ " + std::to_string(0.002));
  expect(route(h[1], h[0]), "link-a_UP @ " + std::to_string(0.002));
  expect(route(h[1], h[2]), "out-a link-b_DOWN @ " + std::to_string(0.003));
  expect(route(h[2], h[1]), "link-b_UP @ " + std::to_string(0.003));
  expect(route(h[1], h[3]), "out-a link-c_DOWN @ " + std::to_string(0.005));
  expect(route(h[3], h[1]), "link-c_UP @ " + std::to_string(0.005));
  expect(built.down_links[0] == nullptr ? "none" : built.down_links[0]->get_name(), "none");
  expect(built.down_links[3]->get_name(), "link-c_DOWN");
  expect(std::to_string(h[3]->get_core_count()) + " " + std::to_string(h[3]->get_speed()), "2 " + std::to_string(2e9));
  expect(std::to_string(sg4::Link::by_name("link-b_DOWN")->get_bandwidth()), std::to_string(20e6));
  std::exit(wrong == 0 ? 0 : 1);
}

TEST(SimPlatformBuilder, OneZoneAndEachEdgeCrossesExactlyItsLinkBehindTheParentsPort) {
  EXPECT_EXIT(build_and_check(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace treefarm::sim
