/// Tests of runtime/metrics/TaskLog: the master's per-task records on disk,
/// read back in order with every field, revoked by the child they came through, and
/// results.json streamed from them.

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/metrics/Results.hpp"
#include "runtime/metrics/TaskLog.hpp"

namespace treefarm::metrics {
namespace {

PackedTaskRecord record(std::uint64_t i, std::uint32_t node, std::uint32_t via) {
  return PackedTaskRecord{i, static_cast<std::uint32_t>(i % 2), node, 0.5 * static_cast<double>(i + 1),
                          0.001 * static_cast<double>(i), 0.25 * static_cast<double>(i), 0.125f, via};
}

TEST(TaskLog, RecordsReadBackInOrderAcrossWrites) {
  TaskLog log;
  const auto w1 = log.intern("w1"), w2 = log.intern("w2");
  EXPECT_NE(w1, w2);
  EXPECT_EQ(log.intern("w1"), w1);  // stable ids
  EXPECT_EQ(log.name(w2), "w2");
  const std::uint64_t n = 3 * TaskLog::buffer_records + 17;  // three writes and a pending tail
  for (std::uint64_t i = 0; i < n; ++i) log.add(record(i, i % 3 ? w1 : w2, PackedTaskRecord::no_via));
  EXPECT_EQ(log.size(), n);
  std::uint64_t seen = 0;
  log.for_each([&](const PackedTaskRecord& r) {
    const auto want = record(seen, seen % 3 ? w1 : w2, PackedTaskRecord::no_via);
    ASSERT_EQ(r.index, want.index);
    ASSERT_EQ(r.app, want.app);
    ASSERT_EQ(r.node, want.node);
    ASSERT_EQ(r.completed_at, want.completed_at);
    ASSERT_EQ(r.compute_seconds, want.compute_seconds);
    ASSERT_EQ(r.dispatched_at, want.dispatched_at);
    ASSERT_EQ(r.queued_seconds, want.queued_seconds);
    ++seen;
  });
  EXPECT_EQ(seen, n);
}

TEST(TaskLog, RevokeViaDropsExactlyThatChildsRecordsOnce) {
  TaskLog log;
  const auto a = log.intern("a"), b = log.intern("b");
  const std::uint64_t n = TaskLog::buffer_records + 100;
  std::uint64_t via_a = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const bool from_a = i % 5 == 0;
    via_a += from_a;
    log.add(record(i, from_a ? a : b, from_a ? a : (i % 7 == 0 ? PackedTaskRecord::no_via : b)));
  }
  const auto revoked = log.revoke_via(a);
  ASSERT_EQ(revoked.size(), via_a);
  for (const auto& [app, index] : revoked) {
    EXPECT_EQ(index % 5, 0u);
    EXPECT_EQ(app, index % 2);
  }
  EXPECT_EQ(log.size(), n - via_a);
  log.for_each([&](const PackedTaskRecord& r) { EXPECT_NE(r.via, a) << r.index; });
  EXPECT_TRUE(log.revoke_via(a).empty());  // already revoked
  // Redone through b: the new record counts, the revoked one stays out.
  log.add(record(0, b, b));
  EXPECT_EQ(log.size(), n - via_a + 1);
}

/// The same tasks in RunResults::tasks or in a TaskLog give the same figures and the same
/// results.json, streamed or as a DOM.
TEST(TaskLog, StreamedResultsJsonEqualsTheDom) {
  RunResults dom;
  dom.experiment = "e";
  dom.policy = "fcfs";
  dom.apps = {AppResult{"mm \"quoted\"", "matmul", 1.0, 40, 0, 0, 0, 0, std::nullopt},
              AppResult{"add", "add", 2.0, 30, 0, 0, 0, 0, std::nullopt}};
  dom.nodes = {NodeResult{"master", "", 1, 0}, NodeResult{"w\\1", "master", 1, 0}};
  RunResults logged = dom;
  auto log = std::make_shared<TaskLog>();
  const auto w1 = log->intern("w\\1"), m = log->intern("master");
  for (std::uint64_t i = 0; i < 70; ++i) {
    const std::uint32_t app = i < 40 ? 0 : 1;
    const std::uint64_t index = i < 40 ? i : i - 40;
    const double done = i == 3 ? 2.0 : 0.37 * static_cast<double>(i + 1);  // 2.0: an integral double
    TaskRecord t{app, index, i % 4 ? "w\\1" : "master", done, i == 5 ? 1e-7 : 0.01};
    t.dispatched_at = i % 2 ? -1.0 : 0.3 * static_cast<double>(i);
    t.queued_seconds = 0.5;
    dom.tasks.push_back(t);
    log->add(PackedTaskRecord{index, app, i % 4 ? w1 : m, t.completed_at, t.compute_seconds, t.dispatched_at, 0.5f,
                              PackedTaskRecord::no_via});
  }
  logged.task_log = log;
  dom.compute();
  logged.compute();
  EXPECT_EQ(logged.task_count(), 70u);
  EXPECT_EQ(logged.apps[0].completed, 40u);
  EXPECT_DOUBLE_EQ(logged.apps[1].throughput, dom.apps[1].throughput);
  EXPECT_DOUBLE_EQ(logged.steady_end, dom.steady_end);
  EXPECT_EQ(logged.nodes[1].tasks_computed, dom.nodes[1].tasks_computed);
  EXPECT_GT(dom.nodes[1].tasks_computed, 0u);

  std::string text;
  write_results_json([&](std::string_view piece) { text += piece; }, logged,
                     [] { return nlohmann::json{{"extra", {{"x", 1}}}}; });
  const auto streamed = nlohmann::json::parse(text);
  auto want = to_json(dom);
  want["extra"] = {{"x", 1}};
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(streamed.at("tasks").size(), 70u);
  EXPECT_EQ(streamed.at("tasks")[3].at("completed_at").dump(), "2.0");  // as nlohmann writes it

  // No tasks at all: still valid JSON with an empty list.
  RunResults none = dom;
  none.tasks.clear();
  none.compute();
  text.clear();
  write_results_json([&](std::string_view piece) { text += piece; }, none);
  EXPECT_EQ(nlohmann::json::parse(text).at("tasks"), nlohmann::json::array());
}

}  // namespace
}  // namespace treefarm::metrics
