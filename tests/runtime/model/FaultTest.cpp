// runtime/model/Fault and the [[fault]] table of an experiment file.
#include "runtime/model/Fault.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::model {
namespace {

const std::string tree = R"([[node]]
name = "master"
[[node]]
name = "w1"
parent = "master"
[[node]]
name = "w2"
parent = "w1"
[[app]]
name = "a"
kernel = "noop"
bytes = 100
tasks = 10
)";

/// The FileError's message for `faults` appended to the tree (lines 13 and on).
std::string error_of(const std::string& faults) {
  try {
    parse_experiment(tree + faults, "exp.toml");
  } catch (const FileError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Fault, EntriesAreReadAndSortedByTime) {
  const test_support::TempDir dir;
  const auto path = (dir.path() / "exp.toml").string();
  std::ofstream(path) << tree + R"(
[[fault]]
at = "10s"
duration = 4
node = "w2"
partition = true
[[fault]]
at = 2
duration = 3.5
node = "w1"
loss = 0.05
[[fault]]
at = 6
duration = 2
node = "w1"
down = true
)";
  const auto e = load_experiment(path);
  const auto faults = load_faults(path, e);
  ASSERT_EQ(faults.size(), 3u);
  EXPECT_EQ(faults[0].node, "w1");
  EXPECT_EQ(faults[0].kind, FaultKind::loss);
  EXPECT_DOUBLE_EQ(faults[0].loss, 0.05);
  EXPECT_DOUBLE_EQ(faults[0].at, 2);
  EXPECT_DOUBLE_EQ(faults[0].duration, 3.5);
  EXPECT_EQ(faults[0].line, 20);
  EXPECT_EQ(faults[0].where, path + ":20: [[fault]]");
  EXPECT_EQ(faults[1].kind, FaultKind::down);
  EXPECT_EQ(faults[2].kind, FaultKind::partition);
  EXPECT_DOUBLE_EQ(faults[2].at, 10);
}

TEST(Fault, ErrorsNameTheFileTheLineAndTheField) {
  const std::string head = "\n[[fault]]\nat = 1\nduration = 2\n";  // [[fault]] on line 15
  EXPECT_EQ(error_of(head + "node = \"w9\"\ndown = true\n"),
            "exp.toml:18: field 'fault[0].node': no [[node]] is called 'w9'");
  EXPECT_EQ(error_of(head + "node = \"master\"\ndown = true\n"),
            "exp.toml:18: field 'fault[0].node': 'master' is the master: it has no link to a parent to fault");
  EXPECT_EQ(error_of(head + "node = \"w1\"\nloss = 1.5\n"),
            "exp.toml:19: field 'fault[0].loss': must be a probability in (0, 1], e.g. 0.05");
  EXPECT_EQ(error_of(head + "node = \"w1\"\nloss = 0\n"),
            "exp.toml:19: field 'fault[0].loss': must be a probability in (0, 1], e.g. 0.05");
  EXPECT_EQ(error_of(head + "node = \"w1\"\ndown = false\n"),
            "exp.toml:19: field 'fault[0].down': must be true (leave the [[fault]] out for no fault)");
  EXPECT_EQ(error_of(head + "node = \"w1\"\n"),
            "exp.toml:15: field 'fault[0].loss': missing the fault: give one of loss = P, down = true, partition = true");
  EXPECT_EQ(error_of(head + "node = \"w1\"\ndown = true\npartition = true\n"),
            "exp.toml:15: field 'fault[0].loss': give only one of loss, down, partition per [[fault]]");
  EXPECT_EQ(error_of(head + "node = \"w1\"\ndown = true\nlength = 3\n"),
            "exp.toml:20: field 'fault[0].length': unknown key 'length' in [[fault]]; expected one of: at, duration, "
            "node, loss, down, partition");
  EXPECT_EQ(error_of("\n[[fault]]\nat = 1\nduration = 0\nnode = \"w1\"\ndown = true\n"),
            "exp.toml:17: field 'fault[0].duration': must be > 0 seconds");
  EXPECT_EQ(error_of("\n[[fault]]\nat = 1\nnode = \"w1\"\ndown = true\n"),
            "exp.toml:15: field 'fault[0].duration': missing required key 'duration' (seconds the fault lasts)");
  EXPECT_EQ(error_of(head + "node = \"w1\"\ndown = \"yes\"\n"),
            "exp.toml:19: field 'fault[0].down': expected true, got a string");
}

TEST(Fault, FaultsOnOneLinkMustNotOverlap) {
  const std::string msg = error_of(R"(
[[fault]]
at = 1
duration = 5
node = "w1"
down = true
[[fault]]
at = 4
duration = 1
node = "w1"
loss = 0.1
)");
  EXPECT_NE(msg.find("exp.toml:21: field 'fault[1].at': overlaps the fault on the same link from 1 s for 5 s"), std::string::npos) << msg;
  EXPECT_NE(msg.find("exp.toml:15: [[fault]]"), std::string::npos) << msg;
  // Back to back on one link, or at once on two links: fine.
  EXPECT_EQ(error_of(R"(
[[fault]]
at = 1
duration = 3
node = "w1"
down = true
[[fault]]
at = 4
duration = 1
node = "w1"
loss = 0.1
[[fault]]
at = 1
duration = 9
node = "w2"
partition = true
)"),
            "no error");
}

TEST(Fault, TheCommandLineFormIsParsed) {
  auto f = parse_fault_option("w1:5:10:loss=0.05");
  EXPECT_EQ(f.node, "w1");
  EXPECT_DOUBLE_EQ(f.at, 5);
  EXPECT_DOUBLE_EQ(f.duration, 10);
  EXPECT_EQ(f.kind, FaultKind::loss);
  EXPECT_DOUBLE_EQ(f.loss, 0.05);
  EXPECT_EQ(f.where, "--fault 'w1:5:10:loss=0.05'");
  f = parse_fault_option("relay:1m:20s:partition");
  EXPECT_DOUBLE_EQ(f.at, 60);
  EXPECT_DOUBLE_EQ(f.duration, 20);
  EXPECT_EQ(f.kind, FaultKind::partition);
  EXPECT_EQ(parse_fault_option("w1:0:1.5:down").kind, FaultKind::down);
}

TEST(Fault, BadCommandLineFormsSayWhatIsWrong) {
  const auto message = [](const std::string& text) -> std::string {
    try {
      parse_fault_option(text);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message("w1:5:10").find("expected NODE:AT:DURATION:KIND"), std::string::npos);
  EXPECT_EQ(message("w1:x:10:down"), "--fault 'w1:x:10:down': AT 'x' is not a time (seconds, or like '20s')");
  EXPECT_EQ(message("w1:1:0:down"), "--fault 'w1:1:0:down': DURATION must be > 0 seconds");
  EXPECT_EQ(message("w1:1:2:loss=2"), "--fault 'w1:1:2:loss=2': loss must be a probability in (0, 1], e.g. loss=0.05");
  EXPECT_EQ(message("w1:1:2:loss=0.1x"),
            "--fault 'w1:1:2:loss=0.1x': loss must be a probability in (0, 1], e.g. loss=0.05");
  EXPECT_EQ(message("w1:1:2:flap"), "--fault 'w1:1:2:flap': unknown fault 'flap'; expected loss=P, down or partition");
  EXPECT_EQ(message(":1:2:down"), "--fault ':1:2:down': the node's name is empty");
  // The node is checked against the tree like a [[fault]] entry.
  const auto e = parse_experiment(tree, "exp.toml");
  const auto problem = check_fault(parse_fault_option("w9:1:2:down"), {}, e);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->key, "node");
  EXPECT_EQ(problem->message, "no [[node]] is called 'w9'");
}

}  // namespace
}  // namespace treefarm::model
