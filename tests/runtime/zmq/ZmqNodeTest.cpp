// runtime/zmq/ZmqNode as a worker under a scripted parent (a ROUTER socket in this test):
// a batch of tiny tasks is acknowledged before the tasks run, so that the parent's
// one-port window (runtime/node/SendLedger.hpp) is not held for the whole burst.
#include "runtime/zmq/ZmqNode.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "runtime/core/Ids.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/net/Batch.hpp"
#include "runtime/zmq/Wire.hpp"
#include "tests/support/Affinity.hpp"

namespace treefarm::zmq_node {
namespace {

using Clock = std::chrono::steady_clock;

/// What the worker sent in one frame: the tasks it acknowledged and the results it carried.
struct Frame {
  std::vector<std::uint64_t> acknowledged;
  std::size_t results = 0;
  bool requests = false;
};

class ScriptedParent {
 public:
  ScriptedParent() : socket_(ctx_, zmq::socket_type::router) {
    net::configure_socket(socket_, true);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const { return endpoint_; }

  /// The next frame from the worker within `seconds` (its messages, decoded), or nullopt.
  std::optional<Frame> next(double seconds) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline) {
      zmq_pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      auto got = net::try_receive_any(socket_, true);
      if (!got) continue;
      Frame f;
      auto note = [&](const net::Message& m) {
        if (const auto* r = std::get_if<net::msg::Received>(&m)) f.acknowledged.insert(f.acknowledged.end(), r->task_ids.begin(), r->task_ids.end());
        if (std::holds_alternative<net::msg::Result>(m)) ++f.results;
        if (std::holds_alternative<net::msg::Request>(m)) f.requests = true;
      };
      if (auto* r = std::get_if<net::Received>(&*got)) {
        identity_ = r->identity;
        note(r->message);
        if (std::holds_alternative<net::msg::Hello>(r->message)) hello_ = true;
      } else if (auto* b = std::get_if<net::ReceivedBatch>(&*got)) {
        for (const auto& e : b->entries) note(e.message);
      } else {
        ADD_FAILURE() << "a bad message from the worker: " << std::get<net::BadMessage>(*got).reason;
      }
      return f;
    }
    return std::nullopt;
  }
  bool said_hello() const { return hello_; }
  void send(const net::Message& m) { ASSERT_TRUE(net::send(socket_, m, &identity_)); }
  void send_batch(net::BatchWriter& w) { ASSERT_TRUE(net::send_batch(socket_, w.take(), &identity_)); }

 private:
  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
  std::string endpoint_, identity_;
  bool hello_ = false;
};

/// The worker's options (named "w") and its endpoints under `parent` (no children).
node::NodeOptions node_options() {
  node::NodeOptions options;
  options.name = "w";
  return options;
}
Endpoints endpoints_to(const ScriptedParent& parent) {
  Endpoints endpoints;
  endpoints.parent = parent.endpoint();
  endpoints.listen = "";
  return endpoints;
}
model::AppSpec matmul32() {
  model::AppSpec app;
  app.kernel = model::Kernel::matmul;
  app.n = 32;
  return app;
}

/// A parent's Welcome with one matmul app of `tasks` tasks, batches announced.
net::msg::Welcome welcome(const model::AppSpec& app, std::uint64_t tasks) {
  net::msg::Welcome w;
  w.buffer = 1000;
  w.policy = "fcfs";
  w.features = net::feature_batches;
  w.sender = "p";
  net::msg::AppInfo info;
  info.name = "mm";
  info.kernel = static_cast<std::uint8_t>(app.kernel);
  info.n = app.n;
  info.bytes = app.input_bytes();
  info.flops = app.task_flops();
  info.tasks = tasks;
  w.apps = {info};
  return w;
}

TEST(ZmqNode, AWorkerAcknowledgesABatchOfTinyTasksBeforeItRunsThem) {
  ScriptedParent parent;
  ZmqNode worker(node_options(), endpoints_to(parent), Compute{{test_support::affinity_cpus().front()}});
  auto ran = std::async(std::launch::async, [&] { return worker.run(); });

  while (!parent.said_hello()) ASSERT_TRUE(parent.next(20)) << "no Hello";
  const auto app = matmul32();
  constexpr std::uint64_t tasks = 60;  // one batch frame (<= 1 MiB), below the 128 messages that leave mid-turn
  parent.send(welcome(app, tasks));
  bool asked = false;
  while (!asked) {
    const auto f = parent.next(20);
    ASSERT_TRUE(f) << "the worker asked for no task";
    asked = f->requests;
  }

  net::BatchWriter batch;  // all the tasks in one frame
  const std::vector<std::byte> input(app.input_bytes(), std::byte{0});
  for (std::uint64_t i = 0; i < tasks; ++i) ASSERT_TRUE(batch.add(net::msg::Task{core::TaskId::make(core::AppId{0}, i).value}, input));
  parent.send_batch(batch);

  std::set<std::uint64_t> acknowledged;
  std::size_t results = 0, results_before_all_acknowledged = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (results < tasks && Clock::now() < deadline) {
    const auto f = parent.next(1);
    if (!f) continue;
    if (acknowledged.size() < tasks) results_before_all_acknowledged += f->results;  // counted with the frame's acknowledgements
    acknowledged.insert(f->acknowledged.begin(), f->acknowledged.end());
    results += f->results;
  }
  EXPECT_EQ(results, tasks);
  EXPECT_EQ(acknowledged.size(), tasks);
  // The frame that acknowledges the batch leaves before the burst that runs its tasks, so
  // no result travels with it or before it.
  EXPECT_EQ(results_before_all_acknowledged, 0u);

  parent.send(net::msg::Shutdown{"test over"});
  if (ran.wait_for(std::chrono::seconds(20)) != std::future_status::ready) worker.stop();
  EXPECT_EQ(ran.get(), 0);
}

// An attacker's parent names its shared input segment in a batch entry although the worker
// accepted none (issue 43): the worker drops that parent (DecodeError), runs nothing from
// that batch and does not crash.
TEST(ZmqNode, AReferenceIntoASegmentNeverAcceptedDropsTheParent) {
  ScriptedParent parent;
  auto options = node_options();
  options.rejoin_timeout = 0;  // a lost parent ends the worker
  ZmqNode worker(options, endpoints_to(parent), Compute{{test_support::affinity_cpus().front()}});
  auto ran = std::async(std::launch::async, [&] { return worker.run(); });
  while (!parent.said_hello()) ASSERT_TRUE(parent.next(20)) << "no Hello";
  const auto app = matmul32();
  parent.send(welcome(app, 2));
  net::BatchWriter batch;
  const std::vector<std::byte> input(app.input_bytes(), std::byte{0});
  ASSERT_TRUE(batch.add(net::msg::Task{core::TaskId::make(core::AppId{0}, 0).value}, input));
  ASSERT_TRUE(batch.add_shared(net::msg::Task{core::TaskId::make(core::AppId{0}, 1).value}, 0,
                               static_cast<std::uint32_t>(app.input_bytes())));
  parent.send_batch(batch);
  std::size_t results = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (ran.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready && Clock::now() < deadline) {
    if (const auto f = parent.next(0.2)) results += f->results;
  }
  ASSERT_EQ(ran.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "the worker kept the parent";
  EXPECT_EQ(ran.get(), node::exit_parent_lost);
  EXPECT_EQ(results, 0u);
}

}  // namespace
}  // namespace treefarm::zmq_node
