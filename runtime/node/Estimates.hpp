#pragma once
/// @file Estimates.hpp
/// What a node learns of the platform while it runs (docs/live-model.md): per application
/// the seconds of a task on its own cores, per child the bytes/s of the link to it, each
/// a RunningEstimate (mean, spread, shift test) fed by the run's own timings, the
/// calibration's values (the Welcome's hints) as priors. The node sends them up at a low
/// rate — on its heartbeats, or every estimate interval where there are none — with those
/// its children last reported, at most net::max_estimates; the root hands them to its
/// RootSetup::on_estimates. No message per task.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/LinkFit.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/RunningEstimate.hpp"

namespace treefarm::node {

class Estimates {
 public:
  /// A new run: `apps` applications, `prior_seconds` the calibrated seconds of a task of
  /// each here (0 or missing: none), `prior_bandwidth` the calibrated bytes/s of each
  /// child's link by name.
  void configure(std::string name, std::size_t apps, const std::vector<double>& prior_seconds,
                 std::map<std::string, double> prior_bandwidth, ShiftTestParams test = {});

  /// A task of application `k` ran here for `seconds`. True if its shift test declared a
  /// change of this node's task time (the caller logs it).
  bool task_ran(std::size_t k, double seconds);
  /// A transfer of `bytes` to child `child` that had the link to itself took `seconds`.
  /// It joins the link's fit of seconds = latency + bytes / bandwidth (core::LinkFit) and is a
  /// sample of the link's bandwidth estimate only when its time is mostly bytes.
  void transfer(const std::string& child, double bytes, double seconds);
  /// This node's process has used `seconds` of CPU (user + system, every thread) so far:
  /// reported as is (Estimate::What::process_cpu_seconds), never a per-task figure.
  void process_cpu(double seconds) { cpu_seconds_ = seconds; }
  /// A task of application `k` ran here on `cpu_seconds` of its kernel's own CPU: added to
  /// the application's running total (Estimate::What::compute_cpu_seconds), reported as is.
  void task_cpu(std::size_t k, double cpu_seconds);
  /// What child `child` last reported (its own estimates and those below it).
  void from_child(const std::string& child, std::vector<net::msg::Estimate> estimates);
  /// The child left: its reports and its link are forgotten.
  void forget(const std::string& child);

  /// This node's estimates, its children's links, then what the children reported, at most
  /// net::max_estimates; empty when nothing is known yet.
  std::vector<net::msg::Estimate> report() const;

  const RunningEstimate* task(std::size_t k) const { return k < tasks_.size() ? &tasks_[k] : nullptr; }
  /// The bandwidth estimate of the link to `child` (bytes/s): none before a prior or a
  /// transfer that measured the bandwidth.
  const RunningEstimate* link(const std::string& child) const {
    const auto it = links_.find(child);
    if (it == links_.end()) return nullptr;
    const auto& b = it->second.bandwidth;
    return b.samples() > 0 || b.mean() > 0 ? &b : nullptr;
  }

 private:
  std::string name_;
  double cpu_seconds_ = 0;  ///< 0: not reported
  /// Per application: the kernels' CPU seconds so far and the tasks they are of.
  std::vector<std::pair<double, std::uint64_t>> compute_cpu_;
  ShiftTestParams test_;
  std::vector<RunningEstimate> tasks_;
  /// Per child: its transfers' fit (latency, bandwidth) and the bandwidth estimate fed
  /// by the transfers that measure the bandwidth.
  struct Link {
    core::LinkFit fit;
    RunningEstimate bandwidth;
  };
  std::map<std::string, Link> links_;
  Link& link_of(const std::string& child);
  std::map<std::string, std::vector<net::msg::Estimate>> below_;
};

}  // namespace treefarm::node
