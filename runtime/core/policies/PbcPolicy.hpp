#pragma once
/// @file PbcPolicy.hpp
/// Parallel Bandwidth-Centric (papers/beaumont2006 §4.4): one bandwidth-centric scheduler
/// per application, side by side; the root feeds them in the ratio of the weights.
///
/// Our mapping (requests in the core do not name a type, so there are no per-type request
/// streams): the K virtual schedulers of a node share its buffer and its requests. They
/// take turns (round-robin over the applications that have a task buffered); the
/// scheduler of application k gives its oldest task to the highest-priority requester
/// (BandwidthCentric) that can take it. The root draws types with the 1D rule and the
/// weights (Policy's default), which is "feeding the schedulers in the ratio of the
/// weights". The buffer bound B is shared: a per-type bound B/K cannot be enforced by a
/// receiver that does not choose what its parent sends.
///
/// Port (§4.4 lets PBC break the one-port rule): under NodeConfig::one_port this policy
/// uses PortModel::one_port_per_app — each application's scheduler keeps its own one-port
/// rule, so up to K sends run at once, one per application; concurrent sends to one child
/// are *not* allowed (at most one send per child at a time), so SendDone{child} always
/// names one send. The concurrent sends share the sender's port in time ("we do model
/// the contention on the port"): with n in flight the simulator gives each 1/n of the
/// port's time (sim::NodeActor), so no node exceeds the one-port constraint of the LP;
/// over a real network they share the NIC. Under multi-port, it is multi-port like
/// every policy.
/// Needs: child bandwidths (ChildInfo.bandwidth or TransferObserved), nothing else.

#include "runtime/core/Policy.hpp"

namespace treefarm::core {

class PbcPolicy final : public Policy {
 public:
  std::optional<Assignment> select(const NodeState& state) override;
  void assigned(const NodeState& state, const Target& to, TaskRef task) override;
  bool one_port_per_application() const override { return true; }

 private:
  std::uint32_t turn_ = 0;  ///< The application whose scheduler goes first next.
};

}  // namespace treefarm::core
