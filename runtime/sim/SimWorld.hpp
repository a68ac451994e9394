#pragma once
/// @file SimWorld.hpp
/// State shared by the actors of one simulation (internal to the SimGrid adapter): the
/// platform, its SimGrid hosts and mailboxes, and what the root records.

#include <cstdint>
#include <string>
#include <vector>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include "runtime/core/NodeState.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/sim/SimPlatform.hpp"
#include "runtime/sim/Simulation.hpp"

namespace treefarm::sim {

/// What travels on a mailbox. Tasks carry their input bytes as the comm's simulated size;
/// requests and results are SimulationOptions::control_bytes; a policy message is its
/// payload plus control_bytes.
struct SimMessage {
  enum class Kind { task, request, result, policy };
  Kind kind = Kind::task;
  std::uint64_t task = 0;          ///< core::TaskId value (task, result)
  std::uint32_t count = 0;         ///< tasks asked for (request)
  std::uint32_t node = 0;          ///< node that computed the task (result)
  double compute_seconds = 0;      ///< simulated seconds of its execution (result)
  std::vector<std::uint8_t> payload;  ///< policy message
};

struct SimWorld {
  const SimPlatform* platform = nullptr;
  const SimulationOptions* options = nullptr;
  std::vector<core::NodePlan> plans;                 ///< LP rates per node (may be empty)
  std::vector<simgrid::s4u::Host*> hosts;            ///< per node
  std::vector<simgrid::s4u::Mailbox*> down;          ///< tasks parent -> node u
  std::vector<simgrid::s4u::Mailbox*> control;       ///< policy messages parent -> node u
  std::vector<simgrid::s4u::Mailbox*> up;            ///< requests/results/policy node u -> parent
  simgrid::s4u::ActorPtr root_actor;

  metrics::RunResults results;                       ///< Filled by the root actor.
  bool completed = false;
  std::string error;                                 ///< First error of any actor.
  std::uint64_t events = 0;
};

}  // namespace treefarm::sim
