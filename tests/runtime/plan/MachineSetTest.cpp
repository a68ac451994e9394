#include "runtime/plan/MachineSet.hpp"

#include <gtest/gtest.h>

#include "runtime/model/Experiment.hpp"
#include "runtime/plan/MachineGenerator.hpp"

namespace treefarm::plan {
namespace {

const char* const two_lans = R"(
[network]
inter_bandwidth = "10Mbps"
inter_latency = "20ms"

[[lan]]
name = "a"
bandwidth = "1Gbps"
latency = "100us"

[[lan]]
name = "b"
bandwidth = 50e6

[[lan]]
name = "c"
bandwidth = "100MBps"

[[link]]
lans = ["a", "c"]
bandwidth = "100Mbps"
latency = "1ms"

[[machine]]
name = "a1"
lan = "a"
cores = 4
speed = "2Gf"
memory = "16GiB"

[[machine]]
name = "b1"
lan = "b"
speed = 1e9

[[machine]]
name = "c1"
lan = "c"
speed = "3Gf"

[[pair]]
machines = ["b1", "c1"]
bandwidth = "40MBps"
latency = "2ms"
)";

TEST(MachineSet, ParsesLansLinksMachinesAndPairs) {
  const auto s = parse_machines(two_lans, "m.toml");
  ASSERT_EQ(s.lans.size(), 3u);
  ASSERT_EQ(s.machines.size(), 3u);
  EXPECT_DOUBLE_EQ(s.lans[0].bandwidth, 125e6);
  EXPECT_DOUBLE_EQ(s.lans[0].latency, 100e-6);
  EXPECT_EQ(s.machines[0].cores, 4u);
  EXPECT_DOUBLE_EQ(s.machines[0].speed, 2e9);
  EXPECT_DOUBLE_EQ(s.machines[0].power(), 8e9);
  EXPECT_EQ(s.machines[0].memory, 16ull << 30);
  EXPECT_EQ(s.machines[1].cores, 1u);
  EXPECT_DOUBLE_EQ(s.bandwidth(0, 2), 12.5e6);   // [[link]] a-c
  EXPECT_DOUBLE_EQ(s.latency(2, 0), 1e-3);
  EXPECT_DOUBLE_EQ(s.bandwidth(0, 1), 1.25e6);   // default inter_bandwidth a-b
  EXPECT_DOUBLE_EQ(s.latency(0, 1), 20e-3);
  EXPECT_DOUBLE_EQ(s.bandwidth(1, 2), 40e6);     // measured pair overrides b-c
  EXPECT_DOUBLE_EQ(s.latency(2, 1), 2e-3);
}

TEST(MachineSet, WritesTextThatParsesBackToTheSameSet) {
  GenMachinesOptions o;
  o.machines = 9;
  o.lans = 3;
  o.seed = 7;
  auto s = generate_machines(o);
  s.pair_bandwidth.assign(9, std::vector<double>(9, 0.0));
  s.pair_latency.assign(9, std::vector<double>(9, -1.0));
  s.pair_bandwidth[2][5] = s.pair_bandwidth[5][2] = 3.5e6;
  const auto back = parse_machines(to_toml(s, "a header"), "back.toml");
  ASSERT_EQ(back.machines.size(), s.machines.size());
  for (std::size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(back.machines[i].name, s.machines[i].name);
    EXPECT_EQ(back.machines[i].lan, s.machines[i].lan);
    EXPECT_EQ(back.machines[i].cores, s.machines[i].cores);
    EXPECT_DOUBLE_EQ(back.machines[i].speed, s.machines[i].speed);
    for (std::size_t j = 0; j < 9; ++j)
      if (i != j) {
        EXPECT_DOUBLE_EQ(back.bandwidth(i, j), s.bandwidth(i, j)) << i << "," << j;
      }
  }
}

void expect_error(const std::string& text, int line, const std::string& field, const std::string& words) {
  try {
    parse_machines(text, "bad.toml");
    FAIL() << "no error for: " << text;
  } catch (const model::FileError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.toml:"), std::string::npos) << e.what();
  }
}

TEST(MachineSet, ErrorsNameFileLineAndField) {
  const std::string lan = "[[lan]]\nname = \"a\"\nbandwidth = \"1Gbps\"\n";
  expect_error(lan + "[[machine]]\nname = \"x\"\nlan = \"zz\"\nspeed = 1e9\n", 6, "machine[0].lan", "unknown LAN 'zz'");
  expect_error(lan + "[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = \"fast\"\n", 7, "machine[0].speed", "");
  expect_error(lan + "[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = 1e9\ncolour = 1\n", 8, "machine[0].colour",
               "unknown key");
  expect_error(lan + "[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = 0\n", 7, "machine[0].speed", "must be > 0");
  expect_error(lan + "[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = 1e9\ncores = 0\n", 8, "machine[0].cores", "");
  expect_error(lan + "[[lan]]\nname = \"b\"\nbandwidth = 1e6\n[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = 1e9\n", 1,
               "network.inter_bandwidth", "no [[link]]");
  expect_error(lan, 1, "machine", "no [[machine]]");
  expect_error(lan + "[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = 1e9\n[[machine]]\nname = \"x\"\nlan = \"a\"\nspeed = 1e9\n",
               8, "machine[1].name", "defined twice");
}

TEST(MachineGenerator, SameSeedSameSetEveryLanPopulatedRangesRespected) {
  GenMachinesOptions o;
  o.machines = 40;
  o.lans = 5;
  o.seed = 11;
  const auto a = generate_machines(o), b = generate_machines(o);
  EXPECT_EQ(to_toml(a), to_toml(b));
  o.seed = 12;
  EXPECT_NE(to_toml(a), to_toml(generate_machines(o)));
  std::vector<int> per_lan(5, 0);
  for (const auto& m : a.machines) {
    ++per_lan[m.lan];
    EXPECT_GE(m.cores, o.cores_min);
    EXPECT_LE(m.cores, o.cores_max);
    EXPECT_GE(m.speed, o.speed_min);
    EXPECT_LE(m.speed, o.speed_max);
  }
  for (int c : per_lan) EXPECT_GE(c, 1);
  for (std::size_t x = 0; x < 5; ++x)
    for (std::size_t y = 0; y < 5; ++y)
      if (x != y) {
        EXPECT_GE(a.lan_bandwidth[x][y], o.inter_bandwidth_min);
        EXPECT_LE(a.lan_bandwidth[x][y], o.inter_bandwidth_max);
      }
  o.lans = 41;
  EXPECT_THROW(generate_machines(o), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::plan
