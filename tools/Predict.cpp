#include "tools/Predict.hpp"

#include <optional>
#include <stdexcept>

#include "runtime/lp/FairnessOptimum.hpp"
#include "runtime/lp/PeriodicSchedule.hpp"
#include "runtime/lp/PredictionInterval.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/BagSource.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Experiment.hpp"

namespace treefarm::tools {

namespace {
/// The experiment's declared model; where it lacks a figure (a computing node without a
/// speed, a command's duration), the error says how to get a prediction.
lp::PlatformModel declared_model(const model::Experiment& ex) {
  try {
    return lp::model_from_experiment(ex);
  } catch (const model::FileError& e) {
    const std::string prefix = model::FileError(e.file(), e.line(), e.field(), "").what();
    std::string detail = e.what();
    if (detail.rfind(prefix, 0) == 0) detail.erase(0, prefix.size());
    throw model::FileError(
        e.file(), e.line(), e.field(),
        detail + ". This experiment has no figure to predict from: either calibrate it (`treefarm calibrate " +
            ex.path + " --out CAL.json`, about 30 s, then `treefarm predict " + ex.path +
            " --calibration CAL.json`), or run it (`treefarm run " + ex.path +
            " --policy lp --plan-from-estimates`: the run starts at once and prints the LP's figure, from its own estimates, as soon as "
            "they are tight; when more nodes compute than this machine has CPUs, their task times spread too much to get tight "
            "within a short run, which then prints no figure: calibrate)");
  }
}
}  // namespace

int predict_command(const std::string& experiment, const PredictOptions& options, std::ostream& out) {
  auto ex = model::load_experiment(experiment);
  ex.run.one_port_window = options.one_port_window;  // only a calibrated platform uses it (PlatformModel)
  std::optional<model::Calibration> calibration;
  if (!options.calibration.empty()) calibration = model::load_calibration_for(options.calibration, ex);
  const auto platform = calibration ? lp::model_from_calibration(ex, *calibration) : declared_model(ex);
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
  // The interval from the calibration's own spread (repeated link probes, the
  // host's byte cost).
  std::optional<lp::PredictionInterval> interval;
  if (calibration) interval = lp::prediction_interval(ex, *calibration);
  if (options.json) {
    auto j = lp::to_json(platform, solution);
    for (const auto& app : ex.apps)
      if (app.bag) j["bag_inputs"][app.name] = {{"tasks", app.bag->count()}, {"mean_input_bytes", app.bytes},
                                               {"note", model::describe_for_model(*app.bag, app.bytes)}};
    if (interval && interval->has_spread)
      j["fair_throughput_interval"] = {{"low", interval->low}, {"high", interval->high}};
    if (options.schedule) {
      const auto sched = lp::periodic_schedule(platform, solution);
      j["schedule"] = {{"period", sched.period}, {"fair_throughput", sched.fair_throughput},
                       {"within_tolerance", sched.within_tolerance}};
    }
    out << j.dump(1) << "\n";
  } else {
    lp::print_report(out, platform, solution);
    for (const auto& app : ex.apps)  // a bag of files or lines: the LP's b(k) is the mean input size
      if (app.bag) out << "application " << app.name << ": " << model::describe_for_model(*app.bag, app.bytes) << "\n";
    if (interval) {
      if (interval->has_spread)
        out << "\nprediction interval (the calibration's spread: slowest to fastest probe round of every link, "
               "the host's byte cost ± half its spread): fair throughput "
            << interval->low << " to " << interval->high << " tasks/s (" << 100 * (interval->low / solution.fair_throughput - 1)
            << " % to +" << 100 * (interval->high / solution.fair_throughput - 1) << " %)\n";
      else
        out << "\nno prediction interval: this calibration records no spread (measured before repeated link probes)\n";
    }
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
