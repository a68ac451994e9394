#include "tools/Predict.hpp"

#include <stdexcept>

#include "runtime/lp/FairnessOptimum.hpp"
#include "runtime/lp/PeriodicSchedule.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::tools {

int predict_command(const std::string& experiment, const PredictOptions& options, std::ostream& out) {
  const auto ex = model::load_experiment(experiment);
  const auto platform = options.calibration.empty()
                            ? lp::model_from_experiment(ex)
                            : lp::model_from_calibration(ex, model::load_calibration_for(options.calibration, ex));
  const auto objective = lp::FairnessObjective::parse(options.objective);
  if (objective.kind != lp::FairnessObjective::Kind::max_min) {
    if (options.schedule) throw std::invalid_argument("--schedule needs --objective maxmin");
    const auto fair = lp::solve_fairness(platform, objective);
    if (options.json) {
      out << lp::to_json(platform, fair).dump(1) << "\n";
    } else {
      lp::print_report(out, platform, fair);
    }
    return 0;
  }
  const auto solution = lp::solve(platform);
  if (options.json) {
    auto j = lp::to_json(platform, solution);
    if (options.schedule) {
      const auto sched = lp::periodic_schedule(platform, solution);
      j["schedule"] = {{"period", sched.period}, {"fair_throughput", sched.fair_throughput},
                       {"within_tolerance", sched.within_tolerance}};
    }
    out << j.dump(1) << "\n";
  } else {
    lp::print_report(out, platform, solution);
    if (options.schedule) {
      const auto sched = lp::periodic_schedule(platform, solution);
      out << "\n";
      lp::print_schedule(out, platform, sched);
      const auto check = lp::check_schedule(platform, sched);
      out << (check.feasible ? "schedule feasible" : "schedule NOT feasible") << "\n";
      for (const auto& v : check.violations) out << "  " << v << "\n";
    }
  }
  return 0;
}

}  // namespace treefarm::tools
