// The hosts file of `treefarm launch` and the placement of nodes on hosts (tools/deploy/HostsFile).
#include <gtest/gtest.h>

#include "tools/deploy/HostsFile.hpp"
#include "tools/deploy/SshLaunch.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::deploy {
namespace {

// A forwarding master, w1 (with w1a under it) and w2, one core each.
model::Experiment quickstart_tree() {
  return model::parse_experiment(test_support::star_nodes_toml(2) + test_support::node_toml("w1a", "w1", 1) + R"(
[[app]]
name = "mm"
kernel = "matmul"
n = 64
tasks = 10
)", "exp.toml");
}

TEST(HostsFile, DefaultsApplyAndHostsOverride) {
  const auto hf = parse_hosts(R"(
[defaults]
user = "alice"
bin_dir = "/opt/treefarm/bin"
ssh_options = ["-i", "/k"]
port_base = 7000

[[host]]
address = "10.0.0.1"

[[host]]
name = "big"
address = "big.lan"
user = "bob"
port = 2222
work_dir = "/scratch"
nodes = ["w1"]
)", "hosts.toml");
  ASSERT_EQ(hf.hosts.size(), 2u);
  EXPECT_EQ(hf.hosts[0].name, "10.0.0.1");
  EXPECT_EQ(hf.hosts[0].user, "alice");
  EXPECT_EQ(hf.hosts[0].bin_dir, "/opt/treefarm/bin");
  EXPECT_EQ(hf.hosts[0].work_dir, "/tmp");
  EXPECT_EQ(hf.hosts[0].port_base, 7000);
  EXPECT_EQ(hf.hosts[0].ssh_options, (std::vector<std::string>{"-i", "/k"}));
  EXPECT_EQ(hf.hosts[1].name, "big");
  EXPECT_EQ(hf.hosts[1].user, "bob");
  EXPECT_EQ(hf.hosts[1].port, 2222);
  EXPECT_EQ(hf.hosts[1].work_dir, "/scratch");
  EXPECT_EQ(hf.hosts[1].line, 11);  // the [[host]] header
}

void expect_error(const std::string& text, const std::string& where) {
  try {
    parse_hosts(text, "hosts.toml");
    FAIL() << "accepted: " << text;
  } catch (const model::FileError& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

TEST(HostsFile, ErrorsNameFileLineAndField) {
  expect_error("[[host]]\nname = \"a\"\n", "hosts.toml:1: field 'host[0].address'");
  expect_error("[[host]]\naddress = \"a\"\nport = 70000\n", "hosts.toml:3: field 'host[0].port'");
  expect_error("[[host]]\naddress = \"a\"\nadress = \"b\"\n", "field 'host[0].adress': unknown key");
  expect_error("[[host]]\naddress = \"a; rm -rf /\"\n", "field 'host[0].address'");
  expect_error("[[host]]\naddress = \"a\"\nbin_dir = \"bin\"\n", "host[0].bin_dir': must be an absolute path");
  expect_error("[[host]]\naddress = \"a\"\n[[host]]\naddress = \"a\"\n", "host 'a' is also defined on line 1");
  expect_error("[defaults]\nuser = \"x\"\n", "no [[host]] entry");
}

TEST(HostsFile, PlacementHonoursNodesThenRoundRobinOverTheOthers) {
  const auto ex = quickstart_tree();
  const auto hf = parse_hosts(R"(
[[host]]
address = "h1"
nodes = ["master", "w1a"]
[[host]]
address = "h2"
[[host]]
address = "h3"
)", "hosts.toml");
  const auto p = place_nodes(ex, hf);
  const auto at = [&](const char* name) { return p.host_of[*ex.node_index(name)]; };
  EXPECT_EQ(at("master"), 0u);
  EXPECT_EQ(at("w1a"), 0u);
  EXPECT_EQ(at("w1"), 1u);
  EXPECT_EQ(at("w2"), 2u);
  // Two nodes on h1: two ports from its port_base.
  EXPECT_EQ(p.port_of[*ex.node_index("master")], 5555);
  EXPECT_EQ(p.port_of[*ex.node_index("w1a")], 5556);
  EXPECT_EQ(p.port_of[*ex.node_index("w1")], 5555);
}

TEST(HostsFile, PlacementRejectsUnknownAndTwiceListedNodes) {
  const auto ex = quickstart_tree();
  EXPECT_THROW(place_nodes(ex, parse_hosts("[[host]]\naddress = \"a\"\nnodes = [\"nope\"]\n", "h.toml")), model::FileError);
  try {
    place_nodes(ex, parse_hosts("[[host]]\naddress = \"a\"\nnodes = [\"w1\"]\n[[host]]\naddress = \"b\"\nnodes = [\"w1\"]\n", "h.toml"));
    FAIL();
  } catch (const model::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("h.toml:4: field 'host[1].nodes': node 'w1' is already placed on host 'a'"),
              std::string::npos) << e.what();
  }
}

TEST(SshLaunch, ShellQuoteSurvivesQuotesAndSpaces) {
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(SshLaunch, SshCommandIsNonInteractiveAndCarriesTheHostSettings) {
  Host h;
  h.address = "10.0.0.2";
  h.user = "bob";
  h.port = 2222;
  h.ssh_options = {"-F", "/cfg"};
  SshLaunchOptions o;
  const auto argv = ssh_argv(h, o, "true");
  const auto has = [&](const std::vector<std::string>& seq) {
    return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end();
  };
  EXPECT_EQ(argv.front(), "ssh");
  EXPECT_TRUE(has({"-o", "BatchMode=yes"}));
  EXPECT_TRUE(has({"-p", "2222"}));
  EXPECT_TRUE(has({"-l", "bob"}));
  EXPECT_TRUE(has({"-F", "/cfg", "--", "10.0.0.2", "true"}));
}

}  // namespace
}  // namespace treefarm::deploy
