#pragma once
/// @file Lifecycle.hpp
/// A node's phases and every transition between them, in one table (as h11 keeps its
/// state machine in one place, h11/_state.py). Everything that changes the phase goes
/// through fire(); a trigger the table does not allow in the current phase is a bug of
/// the driver and throws std::logic_error naming the trigger and the phase.
///
///   joining ──welcomed──► running ──close──► closing ──end──► done
///      │  └─welcomed_measuring─► measuring ──welcomed──┘        ▲
///      └──────────────── parent_lost ───► rejoin_wait ──rejoin──► joining
///
/// (close and parent_lost from every live phase, end from every phase: see the table.)

#include <string_view>

namespace treefarm::node {

enum class Phase {
  joining,      ///< Hello sent (the root: not yet configured)
  measuring,    ///< welcomed; the adapter measures this node's speed (LocalRunner::measure_speed)
  running,      ///< configured: tasks flow
  rejoin_wait,  ///< the parent was lost; the next attempt is a timer away
  closing,      ///< Shutdown sent down; waiting for the children's Bye
  done,         ///< ended (finished(): exit code set)
};

enum class Trigger {
  configured,          ///< the root configured itself, or the Welcome was applied
  welcomed_measuring,  ///< a Welcome that needs this node's speed first
  parent_lost,         ///< the parent vanished or misbehaved; rejoin armed
  rejoin,              ///< a rejoin attempt starts (Hello to the next ancestor)
  close,               ///< Shutdown: from the parent, the run's end, or a stop
  end,                 ///< the node ends
};

std::string_view phase_name(Phase p);
std::string_view trigger_name(Trigger t);

class Lifecycle {
 public:
  Phase phase() const { return phase_; }
  bool is(Phase p) const { return phase_ == p; }
  /// True when the table has `trigger` from the current phase.
  bool allows(Trigger trigger) const;
  /// Moves to the phase the table gives. Throws std::logic_error if it gives none.
  void fire(Trigger trigger);

 private:
  Phase phase_ = Phase::joining;
};

}  // namespace treefarm::node
