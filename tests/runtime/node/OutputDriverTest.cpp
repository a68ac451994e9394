// Output files of command tasks (docs/command-tasks.md, "Output files"): a
// task's output travels up with its result as one shared payload, never copied on the
// way; the root checks it and hands it over once; a child lying about it is dropped.
#include "runtime/node/NodeDriver.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using testing::parent;
using testing::quiet_options;
using testing::RecordingTransport;

constexpr std::uint64_t output_limit = 1000;  ///< bytes, the application's max_output_bytes

model::AppSpec gzip_app(std::uint64_t tasks) {
  model::AppSpec a;
  a.name = "gz";
  a.kernel = model::Kernel::command;
  a.argv = {"gzip", "-c"};
  a.bytes = testing::task_bytes;
  a.tasks = tasks;
  a.output_file = "{index}.gz";
  a.send_output = true;
  a.max_output_bytes = output_limit;
  return a;
}

net::msg::Welcome gzip_welcome(std::uint64_t tasks) {
  net::msg::Welcome w;
  w.buffer = 2;
  w.policy = "fcfs";
  w.one_port = false;
  w.apps.push_back(app_to_wire(gzip_app(tasks)));
  return w;
}

Payload output_of(std::size_t n) { return std::make_shared<SizeOnly>(n); }

/// A result of task `id` from `node` saying it carries an output of `bytes` bytes.
net::msg::Result result_with_output(std::uint64_t id, const std::string& node, std::uint64_t bytes) {
  net::msg::Result r;
  r.task_id = id;
  r.node = node;
  r.checksum = 7;
  r.has_output = true;
  r.output_bytes = bytes;
  return r;
}

struct RootRecord {
  std::vector<std::pair<std::uint64_t, const Bytes*>> outputs;  ///< (task, the payload handed over)
  std::vector<std::uint64_t> results;
  std::vector<std::uint64_t> checked;
  bool accept = true;

  RootSetup setup(std::uint64_t tasks) {
    RootSetup r;
    r.welcome = gzip_welcome(tasks);
    r.apps = {gzip_app(tasks)};
    r.payload = [](core::TaskId) -> Payload { return std::make_shared<SizeOnly>(testing::task_bytes); };
    r.check_output = [this](const net::msg::Result& res, const Payload&) {
      checked.push_back(res.task_id);
      return accept;
    };
    r.on_output = [this](const net::msg::Result& res, const Payload& out) { outputs.emplace_back(res.task_id, out.get()); };
    r.on_result = [this](const net::msg::Result& res, bool duplicate, double) {
      if (!duplicate) results.push_back(res.task_id);
    };
    return r;
  }
};

/// A root with one scripted child `a` (PeerId 1) that was sent one task; returns its id.
std::uint64_t one_task_to_a(NodeDriver& root, RecordingTransport& t) {
  root.start(0);
  root.on_child_message(PeerId{1}, net::msg::Hello{"a", 1, 0}, {}, 0);
  EXPECT_EQ(t.take<net::msg::Welcome>(PeerId{1}).size(), 1u);
  root.on_child_message(PeerId{1}, net::msg::Request{1}, {}, 0.1);
  auto tasks = t.take<net::msg::Task>(PeerId{1});
  EXPECT_EQ(tasks.size(), 1u);
  return tasks.empty() ? 0 : tasks[0].first.task_id;
}

/// A worker `w` with one core that was given task 2 of the gzip application: it started.
void one_task_started(NodeDriver& w, const testing::FakeRunner& runner) {
  w.start(0);
  w.on_parent_message(gzip_welcome(4), {}, 0.1);
  w.on_parent_message(net::msg::Task{core::TaskId::make(core::AppId{0}, 2).value}, output_of(testing::task_bytes), 0.2);
  ASSERT_EQ(runner.started.size(), 1u);
}

TEST(OutputDriver, AWorkersOutputGoesUpWithItsResultUncopied) {
  RecordingTransport t;
  testing::FakeRunner runner(1);
  NodeDriver w(quiet_options("w"), t, &runner, std::nullopt);
  ASSERT_NO_FATAL_FAILURE(one_task_started(w, runner));
  const Payload out = output_of(321);
  JobOutcome done;
  done.run_seconds = 0.5;
  done.checksum = 9;
  done.output = out;
  w.on_job_done(runner.started[0].job, done, 0.7);
  auto results = t.take<net::msg::Result>(parent);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].first.has_output);
  EXPECT_EQ(results[0].first.output_bytes, 321u);
  EXPECT_EQ(results[0].second.get(), out.get()) << "the output was copied on its way to the parent";
}

TEST(OutputDriver, AFailedTaskSendsNoOutput) {
  RecordingTransport t;
  testing::FakeRunner runner(1);
  NodeDriver w(quiet_options("w"), t, &runner, std::nullopt);
  ASSERT_NO_FATAL_FAILURE(one_task_started(w, runner));
  JobOutcome failed;
  failed.failed = true;
  failed.error = "output of 2000 bytes, over max_output_bytes 1000: not sent back";
  w.on_job_done(runner.started[0].job, failed, 0.7);
  auto results = t.take<net::msg::Result>(parent);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].first.failed);
  EXPECT_FALSE(results[0].first.has_output);
  EXPECT_EQ(results[0].second, nullptr);
}

TEST(OutputDriver, AnInnerNodeForwardsTheChildsOutputFrameItself) {
  RecordingTransport t;
  NodeDriver a(quiet_options("a"), t, nullptr, std::nullopt);
  a.start(0);
  a.on_parent_message(gzip_welcome(4), {}, 0.1);
  a.on_child_message(PeerId{1}, net::msg::Hello{"c", 1, 0}, {}, 0.2);
  ASSERT_EQ(t.take<net::msg::Welcome>(PeerId{1}).size(), 1u);
  a.on_child_message(PeerId{1}, net::msg::Request{1}, {}, 0.3);
  ASSERT_FALSE(t.take<net::msg::Request>(parent).empty());
  const auto id = core::TaskId::make(core::AppId{0}, 1).value;
  a.on_parent_message(net::msg::Task{id}, output_of(testing::task_bytes), 0.4);
  ASSERT_EQ(t.take<net::msg::Task>(PeerId{1}).size(), 1u);
  const Payload out = output_of(512);
  a.on_child_message(PeerId{1}, result_with_output(id, "c", 512), out, 0.5);
  auto up = t.take<net::msg::Result>(parent);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_TRUE(up[0].first.has_output);
  EXPECT_EQ(up[0].second.get(), out.get()) << "the inner node copied the output instead of forwarding it";
}

TEST(OutputDriver, TheRootChecksAndHandsOverEachOutputOnce) {
  RecordingTransport t;
  RootRecord rec;
  NodeDriver root(quiet_options("master"), t, nullptr, rec.setup(4));
  const auto id = one_task_to_a(root, t);
  const Payload out = output_of(100);
  root.on_child_message(PeerId{1}, result_with_output(id, "a", 100), out, 0.5);
  EXPECT_EQ(rec.checked, std::vector<std::uint64_t>{id});
  ASSERT_EQ(rec.outputs.size(), 1u);
  EXPECT_EQ(rec.outputs[0].first, id);
  EXPECT_EQ(rec.outputs[0].second, out.get());
  EXPECT_EQ(rec.results, std::vector<std::uint64_t>{id});
  EXPECT_FALSE(t.dropped.contains(PeerId{1}));
}

TEST(OutputDriver, AnOutputThatFailsTheRootsCheckIsNotRecordedAndItsSenderIsDropped) {
  RecordingTransport t;
  RootRecord rec;
  rec.accept = false;
  NodeDriver root(quiet_options("master"), t, nullptr, rec.setup(4));
  const auto id = one_task_to_a(root, t);
  root.on_child_message(PeerId{1}, result_with_output(id, "a", 100), output_of(100), 0.5);
  EXPECT_TRUE(rec.outputs.empty());
  EXPECT_TRUE(rec.results.empty());
  EXPECT_TRUE(t.dropped.contains(PeerId{1})) << "a leaf whose output does not give its digest stays connected";
}

TEST(OutputDriver, AChildLyingAboutItsOutputIsDropped) {
  struct Case {
    const char* what;
    std::uint64_t said;
    std::size_t sent;  ///< bytes of the payload (0: none)
  };
  for (const Case c : {Case{"a size other than the frame's", 100, 99}, Case{"no frame", 100, 0},
                       Case{"over the application's limit", output_limit + 1, output_limit + 1}}) {
    RecordingTransport t;
    RootRecord rec;
    NodeDriver root(quiet_options("master"), t, nullptr, rec.setup(4));
    const auto id = one_task_to_a(root, t);
    root.on_child_message(PeerId{1}, result_with_output(id, "a", c.said), c.sent ? output_of(c.sent) : Payload{}, 0.5);
    EXPECT_TRUE(t.dropped.contains(PeerId{1})) << c.what;
    EXPECT_TRUE(rec.outputs.empty()) << c.what;
    EXPECT_TRUE(rec.results.empty()) << c.what;
  }
}

TEST(OutputDriver, AnOutputForAnApplicationThatSendsNoneIsRefused) {
  RecordingTransport t;
  RootRecord rec;
  RootSetup setup = rec.setup(4);
  setup.apps[0].send_output = false;
  setup.welcome.apps[0].max_output_bytes = 0;
  NodeDriver root(quiet_options("master"), t, nullptr, std::move(setup));
  const auto id = one_task_to_a(root, t);
  root.on_child_message(PeerId{1}, result_with_output(id, "a", 10), output_of(10), 0.5);
  EXPECT_TRUE(t.dropped.contains(PeerId{1}));
  EXPECT_TRUE(rec.results.empty());
}

}  // namespace
}  // namespace treefarm::node
