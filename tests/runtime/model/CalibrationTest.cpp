#include "runtime/model/Calibration.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::model {
namespace {

Calibration sample() {
  Calibration c;
  c.experiment = "examples/quickstart.toml";
  c.measured_at = 1718000000.25;
  c.nodes["master"].cores = 0;
  c.nodes["master"].task_seconds = {};
  c.nodes["w1"].cores = 4;
  c.nodes["w1"].parent = "master";  // the tree's shape (a served tree's calibration, docs/serve.md)
  c.nodes["w1"].link_bandwidth = 117.3e6;
  c.nodes["w1"].task_seconds = {{"mm", 0.1234567890123}, {"add", 3.3e-4}};
  c.nodes["w1"].link_bandwidth_min = 9.5e7;  // the probe rounds' spread
  c.nodes["w1"].link_bandwidth_max = 1.21e8;
  c.nodes["w1"].link_round_trip = 2.5e-4;
  c.nodes["w1"].output_bytes = {{"gz", 70123.5}};  // a command's output size
  // the host's costs, the runtime's per-byte costs at a task's two ends included
  c.hosts["box"] = HostCalibration{2.0, 4.5e-10, 0.25, 1.2e-10, 3.5e-10};
  // each application's whole CPU per task through the runtime, and its spread
  c.hosts["box"].task_cpu_seconds = {{"mm", 5.125e-3}, {"add", 4.5e-3}};
  c.hosts["box"].task_cpu_spread = {{"mm", 0.1}, {"add", 0.0}};
  c.hosts["box"].task_cpu_dip = {{"mm", 0.225}};  // what a next span may lose to the dips seen
  c.hosts["box"].busy_share = 0.9625;  // the saturated tree's share of the CPU it could have had
  c.hosts["box"].shared_inputs = true;  // its inputs went through shared memory, not the probed sockets
  c.nodes["w1"].host = "box";
  return c;
}

TEST(Calibration, RoundTripThroughAFile) {
  const test_support::TempDir dir("calibration-test");
  const auto path = dir.path() / "calibration.json";
  const Calibration c = sample();
  save_calibration(c, path.string());
  const Calibration back = load_calibration(path.string());
  EXPECT_EQ(back, c);  // doubles survive exactly
  EXPECT_FALSE(back.nodes.at("master").link_bandwidth);
  EXPECT_DOUBLE_EQ(back.nodes.at("w1").task_seconds.at("mm"), 0.1234567890123);
}

TEST(Calibration, JsonLayout) {
  const std::string json = to_json(sample());
  EXPECT_NE(json.find("\"format\": \"treefarm-calibration\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"version\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"link_bandwidth\": 117300000.0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"parent\": \"master\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"receive_cpu_seconds_per_byte\": 3.5e-10"), std::string::npos) << json;
  EXPECT_NE(json.find("\"busy_share\": 0.9625"), std::string::npos) << json;
  EXPECT_NE(json.find("\"shared_inputs\": true"), std::string::npos) << json;
  EXPECT_EQ(parse_calibration(json, "x.json"), sample());
}

struct BadCase {
  const char* label;
  const char* text;
  int line;
  const char* field;
  const char* message_part;
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.label; }

class BadCalibration : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadCalibration, ErrorNamesFileLineAndField) {
  const BadCase& c = GetParam();
  try {
    parse_calibration(c.text, "cal.json");
    FAIL() << "accepted:\n" << c.text;
  } catch (const FileError& e) {
    EXPECT_EQ(e.file(), "cal.json");
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_NE(std::string(e.what()).find("cal.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos) << e.what();
  }
}

#define HEAD "{\"format\": \"treefarm-calibration\", \"version\": 1, \"nodes\": "

INSTANTIATE_TEST_SUITE_P(
    Validation, BadCalibration,
    ::testing::Values(
        BadCase{"syntax", "{\n  \"format\": \"treefarm-calibration\",\n  \"version\": 1,\n"
                          "  \"nodes\": [\n    {\"name\": \"a\" \"cores\": 1}\n  ]\n}\n",
                5, "", "JSON syntax error"},
        BadCase{"truncated", "{\n\"format\": \"treefarm-calibration\",\n\"nodes\": [\n", 4, "",
                "JSON syntax error"},
        BadCase{"wrong format", "{\"format\": \"other\", \"version\": 1, \"nodes\": []}", 0,
                "format", "treefarm-calibration"},
        BadCase{"future version", "{\"format\": \"treefarm-calibration\", \"version\": 2, "
                                  "\"nodes\": []}",
                0, "version", "expected 1"},
        BadCase{"negative seconds",
                HEAD "[{\"name\": \"a\", \"cores\": 1}, {\"name\": \"b\", \"cores\": 2},"
                     " {\"name\": \"c\", \"cores\": 1, \"task_seconds\": {\"mm\": -1}}]}",
                0, "nodes[2].task_seconds.mm", "> 0"},
        BadCase{"string seconds",
                HEAD "[{\"name\": \"a\", \"cores\": 1, \"task_seconds\": {\"mm\": \"1s\"}}]}", 0,
                "nodes[0].task_seconds.mm", "expected a number"},
        BadCase{"zero bandwidth",
                HEAD "[{\"name\": \"a\", \"cores\": 1, \"link_bandwidth\": 0}]}", 0,
                "nodes[0].link_bandwidth", "> 0"},
        BadCase{"slowest round above the fastest",
                HEAD "[{\"name\": \"a\", \"cores\": 1, \"link_bandwidth\": 2, \"link_bandwidth_min\": 3,"
                     " \"link_bandwidth_max\": 2.5}]}",
                0, "nodes[0].link_bandwidth_min", "larger than link_bandwidth_max"},
        BadCase{"negative round trip",
                HEAD "[{\"name\": \"a\", \"cores\": 1, \"link_round_trip\": -1}]}", 0,
                "nodes[0].link_round_trip", ">= 0"},
        BadCase{"negative output bytes",
                HEAD "[{\"name\": \"a\", \"cores\": 1, \"output_bytes\": {\"gz\": -3}}]}", 0,
                "nodes[0].output_bytes.gz", ">= 0"},
        BadCase{"output bytes not an object",
                HEAD "[{\"name\": \"a\", \"cores\": 1, \"output_bytes\": 12}]}", 0,
                "nodes[0].output_bytes", "{app name: bytes}"},
        BadCase{"zero task cpu",
                HEAD "[{\"name\": \"a\", \"cores\": 1}], \"hosts\": [{\"name\": \"h\", \"cores\": 2,"
                     " \"task_cpu_seconds\": {\"mm\": 0}}]}",
                0, "hosts[0].task_cpu_seconds.mm", "> 0"},
        BadCase{"task cpu not an object",
                HEAD "[{\"name\": \"a\", \"cores\": 1}], \"hosts\": [{\"name\": \"h\", \"cores\": 2,"
                     " \"task_cpu_spread\": 0.1}]}",
                0, "hosts[0].task_cpu_spread", "expected an object"},
        BadCase{"a dip that loses everything",
                HEAD "[{\"name\": \"a\", \"cores\": 1}], \"hosts\": [{\"name\": \"h\", \"cores\": 2,"
                     " \"task_cpu_seconds\": {\"mm\": 0.01}, \"task_cpu_dip\": {\"mm\": 1}}]}",
                0, "hosts[0].task_cpu_dip.mm", "[0, 1)"},
        BadCase{"busy share above 1",
                HEAD "[{\"name\": \"a\", \"cores\": 1}], \"hosts\": [{\"name\": \"h\", \"cores\": 2,"
                     " \"busy_share\": 1.5}]}",
                0, "hosts[0].busy_share", "(0, 1]"},
        BadCase{"shared inputs not a boolean",
                HEAD "[{\"name\": \"a\", \"cores\": 1}], \"hosts\": [{\"name\": \"h\", \"cores\": 2,"
                     " \"shared_inputs\": 1}]}",
                0, "hosts[0].shared_inputs", "true or false"},
        BadCase{"missing cores", HEAD "[{\"name\": \"a\"}]}", 0, "nodes[0].cores",
                "missing required key"},
        BadCase{"duplicate node",
                HEAD "[{\"name\": \"a\", \"cores\": 1}, {\"name\": \"a\", \"cores\": 1}]}", 0,
                "nodes[1].name", "duplicate"},
        BadCase{"unknown key", HEAD "[{\"name\": \"a\", \"cores\": 1, \"core\": 2}]}", 0,
                "nodes[0].core", "unknown key"},
        BadCase{"parent not a name", HEAD "[{\"name\": \"a\", \"cores\": 1, \"parent\": 3}]}", 0,
                "nodes[0].parent", "expected a node name"},
        BadCase{"its own parent", HEAD "[{\"name\": \"a\", \"cores\": 1, \"parent\": \"a\"}]}", 0,
                "nodes[0].parent", "its own parent"},
        BadCase{"not an object", "[1, 2]", 0, "", "expected a JSON object"}),
    [](const ::testing::TestParamInfo<BadCase>& param_info) {
      std::string name = param_info.param.label;
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(Calibration, MissingFileIsAFileError) {
  EXPECT_THROW(load_calibration("/nonexistent/cal.json"), FileError);
}

// ---- a calibration must belong to the experiment it is used with ----------

Experiment two_app_experiment() {
  return parse_experiment(
      "[[node]]\nname = \"master\"\ncores = 0\n"
      "[[node]]\nname = \"w1\"\nparent = \"master\"\ncores = 1\n"
      "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 384\ntasks = 10\n"
      "[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 512\ntasks = 10\n",
      "exp.toml");
}

Calibration calibration_of(const Experiment& ex) {
  Calibration c;
  c.experiment = ex.path;
  c.apps = app_signatures(ex);
  for (const auto& n : ex.nodes) {
    c.nodes[n.name].cores = n.cores;
    if (n.cores > 0)
      for (const auto& a : ex.apps) c.nodes[n.name].task_seconds[a.name] = 0.01;
  }
  return c;
}

// the LP charges the outputs an application sends back; a calibration made
// before it sent them has no size for them.
TEST(CalibrationMatch, AnApplicationSendingOutputsNeedsTheirMeasuredSize) {
  Experiment ex = two_app_experiment();
  Calibration c = calibration_of(ex);
  ex.apps[0].send_output = true;
  const auto diffs = calibration_differences(c, ex);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_NE(diffs[0].find("'mm' sends its outputs back"), std::string::npos) << diffs[0];
  c.nodes["w1"].output_bytes["mm"] = 0.0;  // measured, and empty: enough
  EXPECT_TRUE(calibration_differences(c, ex).empty());
}

TEST(CalibrationMatch, ItsOwnExperimentMatches) {
  const auto ex = two_app_experiment();
  EXPECT_TRUE(calibration_differences(calibration_of(ex), ex).empty());
  EXPECT_NO_THROW(check_calibration_matches(calibration_of(ex), ex, "cal.json"));
}

TEST(CalibrationMatch, AppSignaturesSurviveTheFile) {
  const auto c = calibration_of(two_app_experiment());
  const auto back = parse_calibration(to_json(c), "cal.json");
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.apps.at("mm").kernel, "matmul");
  EXPECT_EQ(back.apps.at("ma").bytes, 2u * 512 * 512 * 8);
}

TEST(CalibrationMatch, OtherNodesAreNamedBothWays) {
  const auto ex = two_app_experiment();
  auto c = calibration_of(ex);
  c.nodes["root"] = c.nodes.at("master");
  c.nodes.erase("master");
  try {
    check_calibration_matches(c, ex, "cal.json");
    FAIL() << "accepted a calibration of other nodes";
  } catch (const CalibrationMismatch& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cal.json"), std::string::npos) << what;
    EXPECT_NE(what.find("node 'master' is in the experiment, not in the calibration"), std::string::npos) << what;
    EXPECT_NE(what.find("node 'root' is in the calibration, not in the experiment"), std::string::npos) << what;
  }
}

// A calibration records each node's parent (docs/serve.md: it gives a served tree's shape
// to the LP); the same names in another shape measured other links.
TEST(CalibrationMatch, AnotherParentIsNamed) {
  const auto ex = parse_experiment(
      "[[node]]\nname = \"master\"\ncores = 0\n"
      "[[node]]\nname = \"w1\"\nparent = \"master\"\ncores = 1\n"
      "[[node]]\nname = \"w2\"\nparent = \"w1\"\ncores = 1\n"
      "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 10\n",
      "exp.toml");
  auto c = calibration_of(ex);
  EXPECT_TRUE(calibration_differences(c, ex).empty());  // a file without parents: names only
  c.nodes["w1"].parent = "master";
  c.nodes["w2"].parent = "w1";
  EXPECT_TRUE(calibration_differences(c, ex).empty());
  c.nodes["w2"].parent = "master";
  const auto diffs = calibration_differences(c, ex);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0], "node 'w2': its parent is 'w1' in the experiment, 'master' in the calibration");
  c.nodes["w2"].parent = "w1";
  c.nodes["master"].parent = "w2";
  ASSERT_EQ(calibration_differences(c, ex).size(), 1u);
  EXPECT_EQ(calibration_differences(c, ex)[0], "node 'master': its parent is none in the experiment, 'w2' in the calibration");
}

TEST(CalibrationMatch, OtherSizesAndKernelsAreNamed) {
  const auto ex = two_app_experiment();
  auto other = ex;
  other.apps[0].n = 256;
  other.apps[1].kernel = Kernel::matmul;
  const auto diffs = calibration_differences(calibration_of(other), ex);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0], "application 'mm': n is 384 in the experiment, 256 in the calibration");
  EXPECT_EQ(diffs[1], "application 'ma': kernel is matadd in the experiment, matmul in the calibration");
}

TEST(CalibrationMatch, OtherApplicationNamesAreNamed) {
  const auto ex = two_app_experiment();
  auto other = ex;
  other.apps[1].name = "add";
  const auto diffs = calibration_differences(calibration_of(other), ex);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0], "application 'ma' is in the experiment, not in the calibration");
  EXPECT_EQ(diffs[1], "application 'add' is in the calibration, not in the experiment");
}

TEST(CalibrationMatch, OldFilesWithoutSignaturesAreCheckedByMeasuredNames) {
  const auto ex = two_app_experiment();
  auto c = calibration_of(ex);
  c.apps.clear();
  EXPECT_TRUE(calibration_differences(c, ex).empty());
  c.nodes.at("w1").task_seconds.erase("ma");
  c.nodes.at("w1").task_seconds["add"] = 0.5;
  const auto diffs = calibration_differences(c, ex);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0], "application 'ma' is in the experiment, measured on no node of the calibration");
  EXPECT_EQ(diffs[1], "application 'add' is in the calibration, not in the experiment");
}

TEST(CalibrationMatch, LoadForAnExperimentRefusesAnother) {
  const test_support::TempDir dir("calibration-match");
  const auto path = (dir.path() / "calibration.json").string();
  auto other = two_app_experiment();
  other.nodes[1].name = "w9";
  save_calibration(calibration_of(other), path);
  EXPECT_THROW(load_calibration_for(path, two_app_experiment()), CalibrationMismatch);
  save_calibration(calibration_of(two_app_experiment()), path);
  EXPECT_NO_THROW(load_calibration_for(path, two_app_experiment()));
}

}  // namespace
}  // namespace treefarm::model
