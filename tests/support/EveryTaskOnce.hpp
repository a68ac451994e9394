#pragma once
/// @file EveryTaskOnce.hpp
/// The exactly-once check of a run's results.json (docs/results-format.md), shared by the
/// process tests (AutoParentTest, ReparentTest, ServeTest). Header only: it reports through
/// GoogleTest's EXPECT_* and needs nlohmann_json, which not every test target links.

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace treefarm::test_support {

/// Checks that every task of `results` (a parsed results.json) is recorded once: no
/// (application, id) twice. With `tasks` > 0 (a run of one application): that many
/// distinct tasks. With `tasks` = 0: each application of results["apps"] completed its
/// declared count with none wrong, its ids run 0..count-1, and the records add up to the
/// counts. Returns the tasks each node computed.
inline std::map<std::string, std::uint64_t> every_task_once(const nlohmann::json& results, std::uint64_t tasks = 0) {
  std::map<std::string, std::set<std::uint64_t>> ids;
  std::map<std::string, std::uint64_t> per_node;
  std::uint64_t records = 0, distinct = 0;
  for (const auto& t : results.at("tasks")) {
    const auto app = t.contains("app") ? t.at("app").get<std::string>() : std::string();
    const auto id = t.at("id").get<std::uint64_t>();
    const bool first = ids[app].insert(id).second;
    EXPECT_TRUE(first) << "task " << app << "/" << id << " recorded twice";
    if (first) ++distinct;
    ++per_node[t.at("node").get<std::string>()];
    ++records;
  }
  if (tasks > 0) {
    EXPECT_EQ(distinct, tasks);
    return per_node;
  }
  std::uint64_t expected = 0;
  for (const auto& a : results.at("apps")) {
    const auto name = a.at("name").get<std::string>();
    const auto count = a.at("tasks").get<std::uint64_t>();
    expected += count;
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), count) << name;
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u) << name;
    EXPECT_EQ(ids[name].size(), count) << name;
    if (!ids[name].empty()) {
      EXPECT_EQ(*ids[name].rbegin(), count - 1) << name;
    }
  }
  EXPECT_EQ(records, expected) << "a task recorded twice";
  return per_node;
}

}  // namespace treefarm::test_support
