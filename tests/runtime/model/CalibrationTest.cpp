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
  c.nodes["w1"].link_bandwidth = 117.3e6;
  c.nodes["w1"].task_seconds = {{"mm", 0.1234567890123}, {"add", 3.3e-4}};
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
        BadCase{"missing cores", HEAD "[{\"name\": \"a\"}]}", 0, "nodes[0].cores",
                "missing required key"},
        BadCase{"duplicate node",
                HEAD "[{\"name\": \"a\", \"cores\": 1}, {\"name\": \"a\", \"cores\": 1}]}", 0,
                "nodes[1].name", "duplicate"},
        BadCase{"unknown key", HEAD "[{\"name\": \"a\", \"cores\": 1, \"core\": 2}]}", 0,
                "nodes[0].core", "unknown key"},
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

}  // namespace
}  // namespace treefarm::model
