#include "runtime/sim/SimPlatform.hpp"

#include <cmath>

namespace treefarm::sim {

void measured_from_calibration(const model::Calibration& calibration, lp::MeasuredSeconds& seconds,
                               lp::MeasuredBandwidth& bandwidth) {
  for (const auto& [name, nc] : calibration.nodes) {
    seconds[name] = nc.task_seconds;
    if (nc.link_bandwidth && *nc.link_bandwidth > 0) bandwidth[name] = *nc.link_bandwidth;
  }
}

SimPlatform make_sim_platform(const model::Experiment& experiment, const model::Calibration* calibration) {
  SimPlatform p;
  p.experiment = experiment;
  lp::MeasuredSeconds seconds;
  lp::MeasuredBandwidth bandwidth;
  if (calibration) {
    measured_from_calibration(*calibration, seconds, bandwidth);
    p.calibrated = true;
  }
  p.model = calibration ? lp::model_from_experiment(experiment, &seconds, &bandwidth)
                        : lp::model_from_experiment(experiment);

  const std::size_t n = experiment.nodes.size();
  p.nodes.resize(n);
  for (std::size_t u = 0; u < n; ++u) {
    const auto& spec = experiment.nodes[u];
    const auto& m = p.model.nodes[u];
    SimNode& s = p.nodes[u];
    s.name = spec.name;
    s.parent = m.parent;
    if (m.parent >= 0) p.nodes[static_cast<std::size_t>(m.parent)].children.push_back(u);
    s.cores = spec.cores;
    s.speed = spec.speed.value_or(reference_speed);
    s.bandwidth = std::isfinite(m.link_bandwidth) ? m.link_bandwidth : unbounded_bandwidth;
    s.latency = spec.latency;
    s.max_out_bandwidth = std::isfinite(m.max_out_bandwidth) ? m.max_out_bandwidth : 0.0;
    s.task_seconds = m.task_seconds;
    s.work.assign(experiment.apps.size(), 0.0);
    for (std::size_t k = 0; k < experiment.apps.size(); ++k) {
      if (!p.model.can_run(u, k)) continue;
      // SimGrid 3.32 runs an execution of `work` flop with thread_count = cores_per_task
      // as cores_per_task threads of `work` flop each, so it lasts work / speed: work =
      // task_seconds × speed, calibrated or not. Without a calibration the threads
      // together do exactly the task's flop (task_seconds = flops / (cpt · speed)).
      s.work[k] = m.task_seconds[k] * s.speed;
    }
  }
  // `[[event]]`s (issue 16, docs/migration.md): speed and link changes during the run. The
  // experiment keeps them sorted by time; each is absolute, so they apply in order.
  for (const auto& e : experiment.events) {
    const auto u = experiment.node_index(e.node);
    if (!u) throw std::invalid_argument("event at " + std::to_string(e.at) + " s: no node called '" + e.node + "'");
    const auto& spec = experiment.nodes[*u];
    SimNode& s = p.nodes[*u];
    switch (e.kind) {
      case model::EventKind::speed:
        if (!spec.speed)
          throw std::invalid_argument("event at " + std::to_string(e.at) + " s: node '" + e.node +
                                      "' has no speed to change (its durations come from a calibration); use cpu_quota");
        s.speed_changes.emplace_back(e.at, e.value);
        break;
      case model::EventKind::cpu_quota:
        // The node's speed was measured or given at its initial quota (1 core if none).
        s.speed_changes.emplace_back(e.at, s.speed * e.value / spec.cpu_quota.value_or(1.0));
        break;
      case model::EventKind::bandwidth:
        if (spec.parent) s.bandwidth_changes.emplace_back(e.at, e.value);
        break;
    }
  }
  return p;
}

}  // namespace treefarm::sim
