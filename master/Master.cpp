#include "master/Master.hpp"

#include <unistd.h>

#include <atomic>
#include <iostream>
#include <optional>

#include <spdlog/spdlog.h>

#include "master/CalibrationRun.hpp"
#include "master/EtaModel.hpp"
#include "master/LiveRun.hpp"
#include "master/RootInputs.hpp"
#include "master/RootPlan.hpp"
#include "master/RunRecord.hpp"
#include "master/SpotChecks.hpp"
#include "runtime/dashboard/Feed.hpp"
#include "runtime/exec/Topology.hpp"
#include "runtime/model/BagSource.hpp"
#include "runtime/metrics/ProcessMemory.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/metrics/Progress.hpp"
#include "runtime/zmq/Wire.hpp"
#include "runtime/zmq/ZmqNode.hpp"
#include "tasks/Benchmark.hpp"

namespace treefarm::master {

namespace {
std::atomic<zmq_node::ZmqNode*> running{nullptr};
std::atomic<bool> stop_requested{false};

/// Progress (runtime/metrics/Progress.hpp): JSON lines on stdout for scripts, else on
/// stderr a live bar per application on a terminal, a plain line per second otherwise.
metrics::Progress make_progress(const model::Experiment& ex, const MasterOptions& options) {
  std::vector<metrics::Progress::App> apps;
  for (const auto& app : ex.apps) apps.push_back({app.name, app.tasks});
  using Mode = metrics::Progress::Mode;
  const Mode mode = !options.progress       ? Mode::off
                    : options.json_progress ? Mode::json
                    : ::isatty(2)           ? Mode::bar
                                            : Mode::plain;
  return metrics::Progress(std::move(apps), mode, mode == Mode::json ? std::cout : std::cerr);
}
}  // namespace

void stop_master() {
  stop_requested = true;
  if (auto* node = running.load()) node->stop();
}

int run_master(const MasterOptions& options) {
  return run_master(model::load_experiment(options.experiment, {.confine_inputs = options.served}),
                    model::read_input_file(options.experiment), options);
}

int run_master(const model::Experiment& file_ex, const std::string& text, const MasterOptions& options) {
  const metrics::ProcessMemory memory_at_start = metrics::process_memory();  // before anything per task exists
  for (std::size_t k = 0; k < file_ex.apps.size(); ++k)
    for (const auto& u : model::unknown_argv_fields(file_ex.apps[k]))
      spdlog::warn("{}:{}: field 'app[{}].argv[{}]': '{}' is not a field of a command ({{index}}, {{input}}, {{output}}); "
                   "it is passed to the program as is",
                   file_ex.path, file_ex.apps[k].line, k, u.arg, u.field);
  std::optional<model::Experiment> declared;
  model::Experiment ex = prepared_experiment(file_ex, options, declared);
  for (auto& app : ex.apps)  // a submitted program never runs on a served master (docs/security.md)
    if (options.served && app.kernel == model::Kernel::command && app.spot_check) {
      spdlog::warn("master: spot_check of '{}' is not honoured on a served master: a submitted program never runs "
                   "on the master (docs/security.md)", app.name);
      app.spot_check = false;
    }
  const bool calibrating = !options.calibrate_out.empty();

  zmq_node::Endpoints endpoints;
  endpoints.listen = options.listen;
  endpoints.ready_file = options.ready_file;
  endpoints.curve = options.curve;
  endpoints.insecure = options.insecure;
  zmq_node::Compute compute;
  if (options.cores) compute.cores = *options.cores;
  else if (ex.nodes[0].cores > 0 && !options.live)  // a served root computes on its --cpus only
    compute.cores = exec::restrict_cores(exec::discover_topology(), ex.nodes[0].cores);
  compute.speed_probe = tasks::speed_per_core;  // `treefarm probe` measures the master too

  for (const auto& app : ex.apps)  // the model's b(k) of a bag with its own inputs
    if (app.bag) spdlog::info("master: '{}': {}", app.name, model::describe_for_model(*app.bag, app.bytes));
  // Every child on this machine (ipc://) reads its inputs from a shared segment; a root that
  // computes too keeps its generated-ahead buffers for its own executor.
  RootInputs inputs(ex, options.pooled_inputs,
                    !options.live && options.listen.starts_with("ipc://") && compute.cores.empty());
  RunRecord record(ex, text, options, calibrating);
  record.results().nodes.push_back(
      metrics::NodeResult{ex.nodes[0].name, "", static_cast<std::uint32_t>(compute.cores.size()), 0});
  SpotChecks checks(ex, inputs, record, options.spot_check);
  auto progress = make_progress(ex, options);

  node::RootSetup root;
  set_welcome(root, ex, options);
  // Generated when sent (and again if re-sent): one buffer per task in flight, shared.
  root.payload = [&](core::TaskId id) {
    record.mark_dispatched(id);
    return inputs.payload(id);
  };
  record.install(root);
  checks.install(root);
  zmq_node::ZmqNode* self = nullptr;
  std::optional<CalibrationRun> calibration;
  bool cancelled = false;
  if (calibrating) {
    calibration.emplace(ex, options, compute.cores.size());
    calibration->install(root, self);
  } else {
    root.on_tick = [&](double now) {
      record.sync();
      if (options.on_status || options.dashboard) {
        const auto status = record.status(now);
        if (options.dashboard) options.dashboard->publish(status, record.results().plan, record.task_log());
        if (options.on_status) options.on_status(status);
      }
      // Cancelled by a client of a served tree: the run ends as a finished one (the
      // children reset and stay), with what completed so far.
      if (options.cancel && !cancelled && options.cancel->load() && self) {
        cancelled = true;
        spdlog::warn("master: cancelled by a client after {} of {} tasks: ending the run", record.done(), record.total());
        self->finish();
      }
      if (const auto e = record.eta(now))
        progress.set_prediction({e->remaining, e->rate, e->seconds_left, EtaModel::text(*e)});
      if (record.started()) progress.tick(record.elapsed(now), record.per_app());
    };
  }
  LiveRun live(ex, set_prediction(root, record.results(), ex, declared ? *declared : ex, options),
               // A root listening only on this machine: every node of its tree runs here
               // (`treefarm run`), sharing its CPUs.
               !options.live && net::is_loopback_endpoint(options.listen), options.heartbeat_interval);
  if (!calibrating && !live.predicted() && ex.run.policy == "lp")  // calibrate as you go
    live.plan_from_estimates(options.host_calibration.empty()
                                 ? std::nullopt
                                 : std::optional<model::Calibration>(model::load_calibration(options.host_calibration)),
                             options.pooled_inputs);
  if (!calibrating) live.install(root, record);

  // Served tree (docs/serve.md): the run goes to the live root, which keeps its children.
  const auto node_options = root_node_options(ex, options);
  std::optional<zmq_node::ZmqNode> own;
  if (!options.live) own.emplace(node_options, endpoints, compute, std::move(root));
  zmq_node::ZmqNode& runtime = options.live ? *options.live : *own;
  self = &runtime;
  running = &runtime;
  int rc = options.live ? runtime.run_root(std::move(root), node_options) : runtime.run();
  running = nullptr;
  // Interrupted before or while dispatching: the node may end "cleanly" with tasks never
  // sent; that is an interruption (130), not a run with lost tasks (4).
  if (stop_requested && rc == node::exit_ok) rc = node::exit_interrupted;
  if (calibration) return calibration->finish(rc);
  spdlog::info("master: spot checks: {}; {}", checks.summary(), inputs.summary());
  rc = record.finish(rc, cancelled, memory_at_start);
  if (options.summary) *options.summary = record.summary();
  record.check_output_quota();
  return rc;
}

}  // namespace treefarm::master
