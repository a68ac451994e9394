#include "master/RootPlan.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/core/MigrationOptions.hpp"
#include "runtime/lp/PredictionInterval.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/model/Origins.hpp"
#include "runtime/net/Codec.hpp"

namespace treefarm::master {

model::Experiment prepared_experiment(model::Experiment ex, const MasterOptions& options,
                                      std::optional<model::Experiment>& declared) {
  if (options.origin.empty()) {
    model::require_root_origins(ex, "treefarm-master");  // several masters: one per origin, --origin
  } else {
    declared = ex;
    try {
      ex = model::rerooted(ex, options.origin);  // bertin2008 §2.2: this origin's applications, its tree
    } catch (const std::invalid_argument& e) {
      throw cli_support::UsageError(std::string("--origin: ") + e.what());  // exit 2, before anything listens
    }
  }
  if (!options.policy.empty()) ex.run.policy = options.policy;
  if (options.buffer) ex.run.buffer = *options.buffer;
  ex.run.one_port_window = options.one_port_window;
  try {
    core::apply_migration_options(ex.run.migration, ex.run.balance, options.migration, options.balance);
  } catch (const std::invalid_argument& e) {
    throw cli_support::UsageError(e.what());  // exit 2, as for any bad option
  }
  const bool calibrating = !options.calibrate_out.empty();
  for (std::size_t k = 0; k < ex.apps.size(); ++k) {
    const auto& app = ex.apps[k];
    const std::string field = "app[" + std::to_string(k) + "]";
    if (app.kernel == model::Kernel::abstract)
      throw model::FileError(ex.path, app.line, field + ".kernel",
                             "application '" + app.name +
                                 "' is abstract (bytes and flops only): it can be predicted and simulated, not run");
    // One task's input travels in one frame (docs/protocol.md): refuse at start what could not be sent.
    if (app.input_bytes() > net::max_payload_bytes)
      throw model::FileError(ex.path, app.line,
                             field + (app.kernel == model::Kernel::matmul || app.kernel == model::Kernel::matadd ? ".n" : ".bytes"),
                             "a task's input is " + std::to_string(app.input_bytes()) + " bytes, above the " +
                                 std::to_string(net::max_payload_bytes) + "-byte frame limit; use a smaller size");
    // Output files (docs/command-tasks.md): each task's output is written under OUT/outputs/APP/.
    if (!calibrating && app.send_output && options.out_dir.empty())
      throw model::FileError(ex.path, app.line, field + ".output_file",
                             "the outputs are written under OUT/outputs/" + app.name + "/: give --out DIR");
  }
  if (!options.out_dir.empty()) metrics::check_writable_directory(options.out_dir);  // before anything starts
  if (options.resume && options.out_dir.empty())
    throw std::invalid_argument("--resume continues the journal in the --out directory: give --out DIR");
  if (options.resume && calibrating) throw std::invalid_argument("--resume does not apply to a calibration run");
  if (!(options.spot_check >= 0 && options.spot_check <= 1))
    throw std::invalid_argument("--spot-check " + std::to_string(options.spot_check) + ": expected a fraction in [0, 1]");
  // Without a calibration, an own tree's lp starts with FCFS and plans from the run's
  // estimates (LiveRun::plan_from_estimates); a served tree's shape is known only from one.
  if (ex.run.policy == "lp" && options.calibration.empty() && !calibrating && options.live)
    throw std::invalid_argument("policy 'lp' on a served tree follows the LP over the calibrated live tree: give "
                                "--calibration FILE or submit with --calibrate");
  return ex;
}

node::NodeOptions root_liveness_options(const MasterOptions& options) {
  node::NodeOptions o;
  o.heartbeat_interval = options.heartbeat_interval;
  o.heartbeat_timeout = options.heartbeat_timeout;
  o.max_task_losses = options.max_task_losses;
  o.task_deadline_factor = options.task_deadline_factor;
  o.task_deadline_floor = options.task_deadline_floor;
  o.ack_timeout = options.ack_timeout;
  o.one_port_window = options.one_port_window;
  return o;
}

node::NodeOptions root_node_options(const model::Experiment& ex, const MasterOptions& options) {
  const auto& master_node = ex.nodes.at(0);
  node::NodeOptions o = root_liveness_options(options);
  o.name = master_node.name;
  o.migration = ex.run.migration;  // lee2010 PULL (docs/migration.md)
  o.balance = ex.run.balance;      // lee2010 slide 17
  o.memory = master_node.memory;   // declared resources override the detected ones
  o.disk = master_node.disk;
  o.speed = master_node.speed.value_or(0.0);
  o.one_port_window = ex.run.one_port_window;  // the experiment's, which prepared_experiment() set from options
  return o;
}

void set_welcome(node::RootSetup& root, const model::Experiment& ex, const MasterOptions& options) {
  root.welcome.buffer = ex.run.buffer;
  root.welcome.policy = ex.run.policy;
  if (auto it = ex.run.policy_options.find(ex.run.policy); it != ex.run.policy_options.end())
    root.policy_options = it->second;
  root.welcome.one_port = ex.run.comm_model == model::CommModel::one_port;
  for (const auto& app : ex.apps) root.welcome.apps.push_back(node::app_to_wire(app));
  root.apps = ex.apps;
  root.wait_for_nodes = options.wait_for_nodes.value_or(ex.nodes.size() - 1);
  root.wait_timeout = options.wait_timeout;
}

std::optional<Prediction> set_prediction(node::RootSetup& root, metrics::RunResults& results, const model::Experiment& ex,
                    const model::Experiment& declared, const MasterOptions& options) {
  if (options.calibration.empty()) return std::nullopt;
  const auto cal = model::load_calibration_for(options.calibration, declared);
  auto platform = lp::model_from_calibration(ex, cal);
  if (options.pooled_inputs)  // no input is generated per task (docs/security.md, "Secret inputs")
    for (auto& h : platform.hosts) h.input_cpu_seconds_per_byte = 0.0;
  const auto solution = lp::solve(platform);
  results.predicted_fair_throughput = solution.fair_throughput;
  results.prediction_source = "calibration";
  results.plan = lp::to_json(platform, solution);  // results.json and the dashboard
  // Tell every node what the calibration and the LP say about it (policies use it).
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
    net::msg::NodeHint h;
    h.name = ex.nodes[i].name;
    const auto& nc = cal.nodes.count(h.name) ? cal.nodes.at(h.name) : model::NodeCalibration{};
    h.link_bandwidth = nc.link_bandwidth.value_or(0.0);
    for (std::size_t k = 0; k < ex.apps.size(); ++k) {
      const auto t = nc.task_seconds.find(ex.apps[k].name);
      h.task_seconds.push_back(t == nc.task_seconds.end() ? 0.0 : t->second);
      h.alpha.push_back(solution.alpha[i][k]);
      h.received.push_back(i == 0 ? 0.0 : solution.sent[i][k]);
    }
    root.welcome.hints.push_back(std::move(h));
  }
  if (net::encode(root.welcome).size() > net::max_body_bytes - 1024) {
    spdlog::warn("master: the tree is too large to send per-node hints in the Welcome; policies will learn instead");
    root.welcome.hints.clear();
  }
  for (std::size_t k = 0; k < results.apps.size(); ++k) results.apps[k].predicted = solution.app_throughput[k];
  // The interval from the calibration's own spread (lp::prediction_interval), printed as
  // it is: a spread wider than ±10 % is said, not clipped (docs/live-model.md).
  const auto interval = lp::prediction_interval(ex, cal, options.pooled_inputs);
  const double p = solution.fair_throughput;
  if (interval.has_spread && p > 0) {
    const double low = std::min(interval.low, p), high = std::max(interval.high, p);
    results.predicted_fair_interval = metrics::RunResults::Interval{low, high};
    spdlog::info("master: LP optimum fair throughput {:.4f} tasks/s, interval {:.4f} to {:.4f} ({:+.1f} % to {:+.1f} %{})",
                 p, low, high, 100 * (low / p - 1), 100 * (high / p - 1),
                 low < 0.9 * p || high > 1.1 * p ? ", wider than +-10 %: the calibration's spread" : "");
  } else {
    spdlog::info("master: LP optimum fair throughput {:.4f} tasks/s (no interval: the calibration records no spread)", p);
  }
  return Prediction{std::move(platform), solution};
}

}  // namespace treefarm::master
