#pragma once
/// @file BandwidthCentric.hpp
/// The requester order of bandwidth-centric scheduling (papers/beaumont2006 §4.3, after
/// [6, 3] there): a node serves the requester whose link has the highest bandwidth, its own
/// executor counting as infinite bandwidth. Bandwidths are ChildState::bandwidth (bytes/s,
/// from ChildInfo.bandwidth or learnt from TransferObserved); an unknown one (0) ranks
/// last. Ties go to the oldest request.

#include <optional>

#include "runtime/core/NodeState.hpp"

namespace treefarm::core {

class BandwidthCentric {
 public:
  /// Priority of a requester: +inf for the executor, else the link's bytes/s.
  static double priority(const NodeState& state, const Target& from);
  /// Index in state.requests of the highest-priority request that can take `task` now
  /// (NodeState::can_assign), or nullopt.
  static std::optional<std::size_t> best_request(const NodeState& state, TaskRef task);
  /// The oldest buffered task with a request that can take it, given to the best such
  /// request (§4.3: the highest priority, the oldest task), or nullopt.
  static std::optional<Assignment> oldest_task_best_request(const NodeState& state);
};

}  // namespace treefarm::core
