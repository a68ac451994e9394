#pragma once
// Helpers of the SimGrid adapter tests: small experiments written inline.

#include <string>

#include "runtime/model/Experiment.hpp"
#include "runtime/sim/Simulation.hpp"

namespace treefarm::sim::test {

inline model::Experiment experiment(const std::string& toml) { return model::parse_experiment(toml, "test.toml"); }

inline SimulationOutcome run(const std::string& toml, const model::Calibration* calibration = nullptr,
                             SimulationOptions options = {}) {
  return simulate(make_sim_platform(experiment(toml), calibration), options);
}

/// Tasks recorded exactly once each, none lost or duplicated.
inline bool every_task_once(const model::Experiment& ex, const metrics::RunResults& r) {
  std::vector<std::vector<int>> seen(ex.apps.size());
  for (std::size_t k = 0; k < ex.apps.size(); ++k) seen[k].assign(ex.apps[k].tasks, 0);
  for (const auto& t : r.tasks) {
    if (t.app >= seen.size() || t.id >= seen[t.app].size()) return false;
    if (++seen[t.app][t.id] != 1) return false;
  }
  for (const auto& s : seen)
    for (int n : s)
      if (n != 1) return false;
  return r.duplicates == 0 && r.lost == 0;
}

}  // namespace treefarm::sim::test
