#pragma once
/// @file SimWorld.hpp
/// State shared by the actors of one simulation (internal to the SimGrid adapter): the
/// platform, its SimGrid hosts and mailboxes, and what the root records. With
/// applications from several masters there is one world per origin tree (OriginTree):
/// `platform` is then that tree's view, and the hosts are shared.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include "runtime/core/NodeState.hpp"
#include "runtime/lp/EstimatePlan.hpp"
#include "runtime/lp/LiveModel.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/Payload.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/sim/SimPlatform.hpp"
#include "runtime/sim/Simulation.hpp"

namespace treefarm::sim {

/// What travels on a mailbox: a protocol message as the node driver sent it (never
/// encoded: a simulation trusts its own nodes) and its payload, whose size is what the
/// comm carries. Requests, results and other control messages weigh
/// SimulationOptions::control_bytes (plus a policy message's own bytes).
struct SimMessage {
  net::Message message;
  node::Payload payload;
};

struct SimWorld {
  const SimPlatform* platform = nullptr;
  const SimulationOptions* options = nullptr;
  std::vector<core::NodePlan> plans;                 ///< LP rates per node (may be empty)
  /// The root's live model under policy lp (docs/live-model.md): re-plans from the nodes'
  /// online estimates. Null for other policies and for several origin trees.
  std::shared_ptr<lp::LiveModel> live;
  /// SimulationOptions::plan_from_estimates: the first plan, made from the estimates
  /// (null otherwise), and the solution it made (the run's prediction).
  std::shared_ptr<lp::EstimatePlan> warmup;
  std::optional<lp::EstimatedPlan> first_plan;
  std::vector<simgrid::s4u::Host*> hosts;            ///< per node
  std::vector<simgrid::s4u::Host*> exec_hosts;       ///< per node: where its executions run
  std::vector<simgrid::s4u::Link*> down_links;       ///< per node: DOWN half of its parent link
  std::vector<simgrid::s4u::Mailbox*> down;          ///< tasks parent -> node u
  std::vector<simgrid::s4u::Mailbox*> control;       ///< policy messages parent -> node u
  std::vector<simgrid::s4u::Mailbox*> up;            ///< requests/results/policy node u -> parent
  simgrid::s4u::ActorPtr root_actor;
  /// Ends the simulation after an actor's error: kills the root actor of every tree
  /// (applications from several masters run one tree per origin, each with its own world).
  std::function<void()> abort;
  double start = 0;                                  ///< Simulated time the root started dispatching.
  /// The root actor has ended: this tree's run is over. Its other actors live on as
  /// daemons while other origins' trees run; a comm of theirs that fails because the root
  /// is gone is the end of the tree, not an error.
  bool root_done = false;

  metrics::RunResults results;                       ///< Filled by the root actor.
  bool completed = false;
  std::optional<double> policy_planned_fair_throughput;  ///< Set by the root actor at its end.
  std::string error;                                 ///< First error of any actor.
  std::uint64_t events = 0;                          ///< messages and completions handled
};

}  // namespace treefarm::sim
