#pragma once
// A node::Transport that records what the driver sends (HyperQueue's TestComm idea):
// tests assert on the messages and take them out as they check them. Also the run the
// driver tests configure: a no-op application and its Welcome.

#include <deque>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/net/Codec.hpp"
#include "runtime/model/Application.hpp"
#include "runtime/node/LocalRunner.hpp"
#include "runtime/node/NodeDriver.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node::testing {

struct Sent {
  std::optional<PeerId> to;  ///< nullopt: to the parent
  net::Message message;
  Payload payload;
};

class RecordingTransport final : public Transport {
 public:
  void send_parent(const net::Message& m, const Payload& p) override { sent.push_back({std::nullopt, m, p}); }
  bool send_child(PeerId peer, const net::Message& m, const Payload& p) override {
    if (gone.contains(peer)) return false;
    sent.push_back({peer, m, p});
    return true;
  }
  void drop_child(PeerId peer) override { dropped.insert(peer); }
  void restart() override { ++restarts; }
  void restart_to(const net::msg::Ancestor& target) override {
    targets.push_back(target);
    restart();
  }
  bool reports_transfers() const override { return transport_reports; }
  std::uint64_t connection_bytes(PeerId, std::uint64_t, std::uint64_t payload_bytes) const override {
    return moved_aside ? *moved_aside : payload_bytes;
  }
  Payload probe_payload(std::size_t bytes) override { return std::make_shared<SizeOnly>(bytes); }

  /// Removes and returns every message of type M sent to `to` (nullopt: the parent).
  template <class M>
  std::vector<std::pair<M, Payload>> take(std::optional<PeerId> to) {
    std::vector<std::pair<M, Payload>> out;
    for (auto it = sent.begin(); it != sent.end();) {
      if (it->to == to && std::holds_alternative<M>(it->message)) {
        out.emplace_back(std::get<M>(it->message), it->payload);
        it = sent.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }
  /// Drops heartbeats, which every test would otherwise have to take.
  void forget_heartbeats() {
    std::erase_if(sent, [](const Sent& s) { return std::holds_alternative<net::msg::Heartbeat>(s.message); });
  }

  std::deque<Sent> sent;
  std::set<PeerId> dropped, gone;
  int restarts = 0;
  std::vector<net::msg::Ancestor> targets;  ///< restart_to() targets, in order
  bool transport_reports = false;
  /// bytes a task transfer leaves on the connection when its input went another way (a
  /// shared segment); nullopt: the whole input.
  std::optional<std::uint64_t> moved_aside;
};

class FakeRunner final : public LocalRunner {
 public:
  explicit FakeRunner(std::uint32_t n) : n_(n) {}
  std::uint32_t cores() const override { return n_; }
  void start(std::uint64_t job, const model::AppSpec& app, const Payload& input) override {
    started.push_back({job, app.name, input});
  }
  Payload calibration_input(const model::AppSpec& app, std::uint64_t, std::uint32_t) override {
    return std::make_shared<SizeOnly>(app.input_bytes());
  }
  struct Start {
    std::uint64_t job;
    std::string app;
    Payload input;
  };
  std::vector<Start> started;

 private:
  std::uint32_t n_;
};

constexpr std::uint64_t task_bytes = 100;  ///< bytes of each test task's input

/// The peer argument of RecordingTransport::take for what was sent to the parent.
constexpr std::optional<PeerId> parent = std::nullopt;

/// `tasks` no-op tasks of task_bytes each.
inline model::AppSpec noop_app(std::uint64_t tasks = 10) {
  model::AppSpec a;
  a.name = "tiny";
  a.kernel = model::Kernel::noop;
  a.bytes = task_bytes;
  a.tasks = tasks;
  return a;
}

/// Options of a node `name` that sends no heartbeats (the tests script every message).
inline NodeOptions quiet_options(const std::string& name) {
  NodeOptions o;
  o.name = name;
  o.heartbeat_interval = 0;
  return o;
}

/// The Welcome of an fcfs run of noop_app(tasks).
inline net::msg::Welcome welcome(std::uint32_t buffer = 2, bool one_port = true, std::uint64_t tasks = 10) {
  net::msg::Welcome w;
  w.buffer = buffer;
  w.policy = "fcfs";
  w.one_port = one_port;
  w.apps.push_back(app_to_wire(noop_app(tasks)));
  return w;
}

}  // namespace treefarm::node::testing
