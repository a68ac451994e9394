#pragma once
/// @file NodeActor.hpp
/// The SimGrid adapter (internal): one S4U actor per node runs that node's driver
/// (runtime/node) — the same code as treefarm-master and treefarm-worker — on simulated
/// time. The actor is the driver's Transport and LocalRunner:
///
/// - Mailboxes: tasks from the parent on the node's `down` mailbox, as comms of the
///   task's input bytes; every other message from the parent on `control`, so that it
///   never waits behind a task transfer; everything to the parent on the node's `up`.
///   Every mailbox has its reader as permanent receiver (Simulation.cpp), so a message
///   starts to flow as soon as it is put, however many are already on the way to the
///   same reader — as over a ZeroMQ socket (full overlap of computation and
///   communication); a get then takes them in the order they were put.
/// - The transport reports a task transfer's end itself (the put's comm completed):
///   that frees the one-port and gives the transfer time (beaumont2006 §5.1.4), as the
///   child's acknowledgement does over ZeroMQ.
/// - One-port (beaumont2006 §3.1: "at any given time ... one sent"): every policy but
///   "pbc" has one task on the wire at a time (the core holds its next send until
///   SendDone). "pbc" may have K, one per application and at most one per child (§4.4);
///   they share the node's port in time, as interruptible sends would ("we do model the
///   contention on the port"): while n of them are in flight each child's link carries
///   its task at b_v / n (processor sharing, SimGrid Link::set_bandwidth on the DOWN
///   halves), so Σ_v rate_v / b_v <= 1, the one-port row of LP (3).
/// - A job becomes an asynchronous execution of the task's work on this host with
///   cores_per_task threads. SimGrid 3.32 cannot wait on comms and executions together
///   (ActivitySet came in 3.35), so the actor waits on its comms with
///   Comm::wait_any_for, the timeout being the time left to the first execution to end or
///   the driver's next deadline.
/// - The join is the real one (Hello, Welcome); the root starts dispatching once every
///   node has joined and records completions from then on. Nothing fails in a
///   simulation: no heartbeats. The other actors are daemons: the root's end ends it.

#include <cstdint>
#include <memory>
#include <vector>

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Exec.hpp>

#include "runtime/node/LocalRunner.hpp"
#include "runtime/node/NodeDriver.hpp"
#include "runtime/node/Transport.hpp"
#include "runtime/sim/SimWorld.hpp"

namespace treefarm::sim {

class NodeActor final : public node::Transport, public node::LocalRunner {
 public:
  NodeActor(SimWorld& world, std::size_t node);
  /// The actor's body: returns when the run is complete (root) or never (daemons).
  void operator()();

  // node::Transport
  void send_parent(const net::Message& message, const node::Payload& payload) override;
  bool send_child(node::PeerId peer, const net::Message& message, const node::Payload& payload) override;
  void drop_child(node::PeerId) override {}
  void restart() override;
  bool reports_transfers() const override { return true; }
  bool transfers_share_link() const override { return true; }
  node::Payload probe_payload(std::size_t bytes) override;

  // node::LocalRunner
  std::uint32_t cores() const override;
  void start(std::uint64_t job, const model::AppSpec& app, const node::Payload& input) override;
  node::Payload calibration_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t k) override;

 private:
  struct Outgoing {
    simgrid::s4u::CommPtr comm;
    bool task = false;           ///< a task to a child (its end is reported to the driver)
    node::PeerId child{};
    std::uint64_t task_id = 0;
  };
  /// Executions of transfers' CPU this actor started on a CPU pool (its own or a child's),
  /// not yet finished: kept only so that they run to their end.
  std::vector<simgrid::s4u::ExecPtr> side_;
  struct Running {
    simgrid::s4u::ExecPtr exec;
    std::uint64_t job = 0;
    double started = 0;
    double rate = 0;             ///< flop/s of the execution when not shared
  };

  double now() const;
  node::RootSetup root_setup();
  /// Calibrate as you go (SimulationOptions::plan_from_estimates): the first plan from
  /// the estimates when they are tight at `at` seconds since the start, as its hints.
  std::optional<std::vector<net::msg::NodeHint>> first_plan(const std::vector<net::msg::Estimate>& estimates, double at);
  std::vector<net::msg::NodeHint> known_hints() const;
  void post_get_down();
  void post_get_control();
  void post_get_up(std::size_t child);
  void collect_finished_executions();
  double wait_timeout() const;
  std::uint64_t message_bytes(const net::Message& message) const;
  void share_port();

  SimWorld& world_;
  const SimPlatform& platform_;
  const std::size_t node_;
  const SimNode& spec_;
  const bool root_;
  std::unique_ptr<node::NodeDriver> driver_;

  simgrid::s4u::CommPtr down_get_;
  SimMessage* down_buf_ = nullptr;
  simgrid::s4u::CommPtr control_get_;
  SimMessage* control_buf_ = nullptr;
  std::vector<simgrid::s4u::CommPtr> up_get_;   ///< per child
  std::vector<SimMessage*> up_buf_;             ///< per child
  std::vector<Outgoing> outgoing_;
  const bool one_port_;                         ///< comm_model = "one-port"
  /// One-port: per child, the DOWN half of its link, its peak bandwidth (bytes/s) and the
  /// share of the port it was last given (1/n).
  std::vector<simgrid::s4u::Link*> down_links_;
  std::vector<double> down_peaks_;
  std::vector<double> down_shares_;
  std::vector<Running> running_;
};

}  // namespace treefarm::sim
