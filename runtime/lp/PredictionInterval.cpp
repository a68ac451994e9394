#include "runtime/lp/PredictionInterval.hpp"

#include <algorithm>

#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {

model::Calibration calibration_at_end(model::Calibration calibration, bool optimistic) {
  for (auto& [name, nc] : calibration.nodes) {
    if (optimistic) {
      if (!nc.link_bandwidth) continue;  // already unconstrained
      // No fastest round: it was too fast to resolve; the link is unconstrained then.
      if (nc.link_bandwidth_max)
        nc.link_bandwidth = std::max(*nc.link_bandwidth, *nc.link_bandwidth_max);
      else if (nc.link_bandwidth_min)
        nc.link_bandwidth.reset();
    } else if (nc.link_bandwidth_min) {
      // A median too fast to resolve (no link_bandwidth) with a slowest round that was
      // resolved: the pessimistic end is that round.
      nc.link_bandwidth = nc.link_bandwidth ? std::min(*nc.link_bandwidth, *nc.link_bandwidth_min) : *nc.link_bandwidth_min;
    }
  }
  for (auto& [name, h] : calibration.hosts) {
    const double half = std::clamp(h.comm_cpu_spread / 2, 0.0, 1.0);
    h.comm_cpu_seconds_per_byte *= optimistic ? 1.0 - half : 1.0 + half;
    for (auto& [app, seconds] : h.task_cpu_seconds) {
      const auto it = h.task_cpu_spread.find(app);
      const double app_half = it == h.task_cpu_spread.end() ? 0.0 : std::clamp(it->second / 2, 0.0, 1.0);
      seconds *= optimistic ? 1.0 - app_half : 1.0 + app_half;
      // The dips a next span may see cost it work at the pessimistic end only.
      if (const auto dip = h.task_cpu_dip.find(app); !optimistic && dip != h.task_cpu_dip.end())
        seconds /= 1.0 - std::clamp(dip->second, 0.0, 0.99);
    }
  }
  return calibration;
}

PredictionInterval prediction_interval(const model::Experiment& experiment, const model::Calibration& calibration,
                                       bool pooled_inputs) {
  const auto optimum = [&](PlatformModel m) {
    if (pooled_inputs)
      for (auto& h : m.hosts) h.input_cpu_seconds_per_byte = 0.0;
    return solve(m).fair_throughput;
  };
  PredictionInterval out;
  out.median = optimum(model_from_calibration(experiment, calibration));
  // The pessimistic end also takes the slowest probes of links within one host at their
  // word (model_from_calibration: the point prediction uses their fastest round) — unless
  // the tree's inputs went through shared memory there, which those socket probes do not
  // describe.
  const bool probes_bind = std::none_of(calibration.hosts.begin(), calibration.hosts.end(),
                                        [](const auto& h) { return h.second.shared_inputs; });
  out.low = optimum(model_from_calibration(experiment, calibration_at_end(calibration, false), probes_bind));
  out.high = optimum(model_from_calibration(experiment, calibration_at_end(calibration, true)));
  for (const auto& [name, nc] : calibration.nodes)
    if (nc.link_bandwidth_min || nc.link_bandwidth_max) out.has_spread = true;
  for (const auto& [name, h] : calibration.hosts)
    if (h.comm_cpu_spread > 0 || !h.task_cpu_spread.empty() || !h.task_cpu_dip.empty()) out.has_spread = true;
  // The LP is solved to a tolerance: keep the three in order.
  out.low = std::min(out.low, out.median);
  out.high = std::max(out.high, out.median);
  return out;
}

}  // namespace treefarm::lp
