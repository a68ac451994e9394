#include "runtime/node/Lifecycle.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace treefarm::node {

namespace {
struct Transition {
  Phase from;
  Trigger trigger;
  Phase to;
};

// The whole state machine. A node ends from any phase (a stop, a lost parent for good);
// it closes from any live phase (a Shutdown or a stop may come while it joins or rejoins);
// a parent can be lost while joining (no Welcome in time), measuring, running or closing
// (unless the parent itself said Shutdown: NodeDriver::on_parent_lost).
constexpr std::array<Transition, 19> table{{
    {Phase::joining, Trigger::configured, Phase::running},
    {Phase::joining, Trigger::welcomed_measuring, Phase::measuring},
    {Phase::measuring, Trigger::configured, Phase::running},
    {Phase::joining, Trigger::parent_lost, Phase::rejoin_wait},
    {Phase::measuring, Trigger::parent_lost, Phase::rejoin_wait},
    {Phase::running, Trigger::parent_lost, Phase::rejoin_wait},
    {Phase::closing, Trigger::parent_lost, Phase::rejoin_wait},
    {Phase::rejoin_wait, Trigger::parent_lost, Phase::rejoin_wait},
    {Phase::rejoin_wait, Trigger::rejoin, Phase::joining},
    {Phase::joining, Trigger::close, Phase::closing},
    {Phase::measuring, Trigger::close, Phase::closing},
    {Phase::running, Trigger::close, Phase::closing},
    {Phase::rejoin_wait, Trigger::close, Phase::closing},
    {Phase::joining, Trigger::end, Phase::done},
    {Phase::measuring, Trigger::end, Phase::done},
    {Phase::running, Trigger::end, Phase::done},
    {Phase::rejoin_wait, Trigger::end, Phase::done},
    {Phase::closing, Trigger::end, Phase::done},
    {Phase::done, Trigger::end, Phase::done},
}};

const Transition* find(Phase from, Trigger trigger) {
  for (const auto& t : table)
    if (t.from == from && t.trigger == trigger) return &t;
  return nullptr;
}
}  // namespace

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::joining: return "joining";
    case Phase::measuring: return "measuring";
    case Phase::running: return "running";
    case Phase::rejoin_wait: return "rejoin_wait";
    case Phase::closing: return "closing";
    case Phase::done: return "done";
  }
  return "?";
}

std::string_view trigger_name(Trigger t) {
  switch (t) {
    case Trigger::configured: return "configured";
    case Trigger::welcomed_measuring: return "welcomed_measuring";
    case Trigger::parent_lost: return "parent_lost";
    case Trigger::rejoin: return "rejoin";
    case Trigger::close: return "close";
    case Trigger::end: return "end";
  }
  return "?";
}

bool Lifecycle::allows(Trigger trigger) const { return find(phase_, trigger) != nullptr; }

void Lifecycle::fire(Trigger trigger) {
  const Transition* t = find(phase_, trigger);
  if (!t)
    throw std::logic_error("node lifecycle: trigger '" + std::string(trigger_name(trigger)) + "' in phase '" +
                           std::string(phase_name(phase_)) + "'");
  phase_ = t->to;
}

}  // namespace treefarm::node
