/// @file NodeDriverEstimates.cpp
/// The node driver's online estimates and re-plans (docs/live-model.md): each node
/// measures its task times and its children's links from the run's own timings
/// (Estimates), sends them up at a low rate, and the root hands the tree's to its
/// RootSetup::on_estimates, which may solve the LP again; the root's policy then follows
/// the new rates in place (core::event::PlanChanged).

#include "runtime/node/NodeDriver.hpp"

namespace treefarm::node {

void NodeDriver::configure_estimates(const std::vector<double>& prior_seconds) {
  estimates_.configure(opt_.name, run_.apps().size(), prior_seconds, {}, opt_.shift_test);
}

void NodeDriver::task_estimate(std::size_t app, double seconds) {
  const double before = estimates_.task(app) ? estimates_.task(app)->mean() : 0.0;
  if (!estimates_.task_ran(app, seconds)) return;
  const auto& e = *estimates_.task(app);
  log_.info("{}: task time of '{}' moved from {:.4g} to {:.4g} s (shift test, {} samples)", opt_.name,
            run_.apps().at(app).name, before, e.mean(), e.samples());
}

void NodeDriver::send_estimates(double now) {
  timers_.arm(Timer::estimates, now + opt_.estimate_interval);
  auto list = estimates_.report();
  if (root_) return root_estimates(std::move(list), now);
  if (list.empty() || !life_.is(Phase::running)) return;
  transport_.send_parent(net::msg::Heartbeat{{}, std::move(list)});
}

void NodeDriver::root_estimates(std::vector<net::msg::Estimate> estimates, double now) {
  if (!sched_ || !root_->dispatching() || calib_.active()) return;
  auto hints = root_->estimates(estimates, now);
  if (!hints) return;
  // The root's own rates from the new plan, built as a Welcome's hints build them.
  core::event::PlanChanged change;
  bool mine = false;
  for (const auto& h : *hints) {
    if (h.name == opt_.name) {
      change.local = h.alpha;
      mine = true;
    } else {
      change.children[h.name] = h.received;
    }
  }
  if (!mine) return;
  post(std::move(change));
  drain(now);
}

}  // namespace treefarm::node
