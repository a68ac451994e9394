// `treefarm-lab campaign plan` (lab/planning/PlanStudy): the study on tiny sets, its
// summary rewritten after every set.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/planning/PlanStudy.hpp"
#include "tests/support/TempDir.hpp"

namespace {

/// Records, at every flush of the study's progress stream, what plan-study.json holds then.
class SnapshotAtFlush : public std::stringbuf {
 public:
  explicit SnapshotAtFlush(std::string json_path) : json_path_(std::move(json_path)) {}
  std::vector<nlohmann::json> seen;

 protected:
  int sync() override {
    std::ifstream f(json_path_);
    seen.push_back(f ? nlohmann::json::parse(f) : nlohmann::json());
    return std::stringbuf::sync();
  }

 private:
  std::string json_path_;
};

// `treefarm-lab campaign plan` rewrites its summary after every set: a study stopped after
// the first set keeps that set.
TEST(PlanStudy, TheStudyWritesItsSummaryAfterEverySet) {
  const treefarm::test_support::TempDir dir("plan-study");
  treefarm::lab::planning::PlanStudyOptions o;
  o.out_dir = (dir.path() / "study").string();
  o.small_sizes = {4};
  o.small_sets = 2;
  o.large_sizes = {16};
  o.large_sets = 1;
  o.qos_sets = 1;
  o.qos_machines = 8;
  o.rmshc_seconds = 2;
  SnapshotAtFlush buf(o.out_dir + "/plan-study.json");
  std::ostream progress(&buf);
  ASSERT_EQ(treefarm::lab::planning::plan_study(o, progress), 0);
  std::vector<std::size_t> rows;
  for (const auto& j : buf.seen)
    if (j.is_object()) rows.push_back(j["rows"].size());
  // Flushes after small set 0, small set 1, large set 0, QoS set 0, then the final report.
  ASSERT_GE(rows.size(), 4u) << buf.str();
  EXPECT_EQ(rows[0], 1u);
  EXPECT_EQ(rows[1], 2u);
  EXPECT_EQ(rows[2], 3u);
  EXPECT_FALSE(buf.seen[0]["complete"].get<bool>());
  std::ifstream md(o.out_dir + "/plan-study.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("| 4 | 2 | 2 | "), std::string::npos) << text;
  EXPECT_EQ(text.find("under way"), std::string::npos) << text;
  std::ifstream jf(o.out_dir + "/plan-study.json");
  const auto j = nlohmann::json::parse(jf);
  EXPECT_TRUE(j["complete"].get<bool>());
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["qos_failures"].size(), 10u);
}

}  // namespace
