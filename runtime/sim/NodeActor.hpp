#pragma once
/// @file NodeActor.hpp
/// One S4U actor per node, driving that node's core::NodeScheduler on simulated time,
/// as worker/NodeRuntime.cpp drives it over ZeroMQ (internal to the SimGrid adapter).
///
/// - Tasks from the parent arrive on the node's `down` mailbox, as comms of the task's
///   input bytes; requests and results go to the parent on the node's `up` mailbox.
///   Policy messages (action::SendPolicyMessage) go up on `up` and down on the child's
///   `control` mailbox, so that they never wait behind a task transfer.
///   A get is always posted on `down`, `control` and every child's `up`, so transfers
///   start as soon as they are sent (full overlap of computation and communication).
/// - A SendTask becomes a put on the child's `down` mailbox; when that comm completes,
///   the core gets SendDone (frees the one-port) and TransferObserved (bytes, seconds).
/// - A StartTask becomes an asynchronous execution of the task's work on this host with
///   cores_per_task threads. SimGrid 3.32 cannot wait on comms and executions together
///   (ActivitySet came in 3.35), so the actor waits on its comms with
///   Comm::wait_any_for, the timeout being the time left to the first execution to end.
/// - Local work is requested while the executor has cores nobody claimed (as NodeRuntime).
/// - The root records each completion with the simulated clock; RunComplete ends the
///   simulation (the other actors are daemons).

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Exec.hpp>

#include "runtime/core/NodeScheduler.hpp"
#include "runtime/sim/SimWorld.hpp"

namespace treefarm::sim {

class NodeActor {
 public:
  NodeActor(SimWorld& world, std::size_t node);
  /// The actor's body: returns when the run is complete (root) or never (daemons).
  void operator()();

 private:
  struct Outgoing {
    simgrid::s4u::CommPtr comm;
    bool task = false;           ///< a task to a child (else a request or result)
    core::ChildId child{};
    double bytes = 0;
    double started = 0;
  };
  struct Running {
    simgrid::s4u::ExecPtr exec;
    core::TaskRef task;
    double started = 0;
    double rate = 0;             ///< flop/s of the execution when not shared
    std::uint32_t cores = 1;
  };
  struct ResultInfo {
    std::uint32_t node = 0;
    double compute_seconds = 0;
  };

  double now() const;
  void setup();
  void post_get_down();
  void post_get_control();
  void post_get_up(std::size_t child);
  void received(SimMessage* message, std::optional<std::size_t> from_child);
  void collect_finished_executions();
  double wait_timeout() const;
  void drain();
  void carry_out(const core::Action& action);
  void send_task(core::ChildId child, core::TaskRef task);
  void start_task(core::TaskRef task);
  void send_up(SimMessage* message);
  void send_policy_message(const core::action::SendPolicyMessage& message);
  void top_up_local();
  void record(core::TaskRef task, bool duplicate);

  SimWorld& world_;
  const SimPlatform& platform_;
  const std::size_t node_;
  const SimNode& spec_;
  const bool root_;
  std::unique_ptr<core::NodeScheduler> sched_;

  simgrid::s4u::CommPtr down_get_;
  SimMessage* down_buf_ = nullptr;
  simgrid::s4u::CommPtr control_get_;
  SimMessage* control_buf_ = nullptr;
  std::vector<simgrid::s4u::CommPtr> up_get_;   ///< per child
  std::vector<SimMessage*> up_buf_;             ///< per child
  std::vector<Outgoing> outgoing_;
  std::vector<Running> running_;
  std::deque<core::Event> events_;
  std::unordered_map<core::TaskId, ResultInfo> results_;

  std::uint32_t min_cores_per_task_ = 1;
  std::uint64_t committed_cores_ = 0;
  std::uint32_t local_pending_ = 0;
  bool done_ = false;
};

}  // namespace treefarm::sim
