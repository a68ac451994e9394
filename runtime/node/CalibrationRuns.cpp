#include "runtime/node/CalibrationRuns.hpp"

#include <algorithm>

namespace treefarm::node {

std::size_t calibration_inputs_for(std::uint64_t input_bytes) {
  if (input_bytes == 0) return 1;
  const std::uint64_t n = (calibration_pool_bytes + input_bytes - 1) / input_bytes;
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(n, 1, calibration_pool_inputs));
}

CalibrationRuns::CalibrationRuns(const std::string& name, LocalWork& work, Transport& transport, const Logger& log,
                                 Report report)
    : name_(name), work_(work), transport_(transport), log_(log), report_(std::move(report)) {}

void CalibrationRuns::configure(const net::msg::Welcome& w) {
  active_ = w.calibrate_reps > 0;
  seed_ = w.seed;
  reps_ = w.calibrate_reps;
  if (!active_) return;
  const std::uint64_t probe_bytes = std::max<std::uint64_t>(w.probe_bytes, 2);
  prober_ = std::make_unique<LinkProber>(
      name_, transport_.probe_payload(1), transport_.probe_payload(probe_bytes),
      [this](PeerId peer, std::uint32_t seq, const Payload& p) { transport_.send_child(peer, net::msg::Probe{seq}, p); },
      [this](const net::msg::Measure& m) {
        using What = net::msg::Measure::What;
        if (m.what == What::link_round_trip)
          log_.info("{}: link to '{}': round trip {:.3g} s", name_, m.node, m.value);
        else if (m.what == What::link_bandwidth_min || m.what == What::link_bandwidth_max)
          log_.info("{}: link to '{}': {} round {:.3g} bytes/s", name_, m.node,
                    m.what == What::link_bandwidth_min ? "slowest" : "fastest", m.value);
        else
          log_.info("{}: {} {:.3g} bytes/s (median of {} rounds)", name_,
                    m.what == What::link_bandwidth ? "link to '" + m.node + "' carries" : "sends to all its children together",
                    m.value, LinkProber::rounds);
        report_(m);
      });
}

/// Keeps every core busy with the applications' kernels — interleaved, or one application
/// at a time under a CPU quota (CalibrationWindow) — until each has run calibrate_reps
/// times and for at least min_seconds in all: all nodes measure at the same time, so on
/// shared cores the durations include the sharing, as in a run (docs/calibration.md).
void CalibrationRuns::start(double now, const std::vector<model::AppSpec>& apps) {
  LocalRunner* runner = work_.runner();
  if (!runner) return;
  std::vector<std::uint32_t> cores_per_task;
  std::vector<bool> measure;
  inputs_.assign(apps.size(), {});
  next_input_.assign(apps.size(), 0);
  output_.assign(apps.size(), {0.0, 0});
  for (std::size_t k = 0; k < apps.size(); ++k) {
    const auto& app = apps[k];
    cores_per_task.push_back(app.cores_per_task);
    measure.push_back(app.cores_per_task <= runner->cores() && app.kernel != model::Kernel::abstract);
    // Several inputs taken in turn, together larger than a last-level cache: in a run each
    // task's input arrives fresh from the network, not from the cache a single reused
    // input would sit in.
    const std::size_t count = measure.back() ? calibration_inputs_for(app.input_bytes()) : 0;
    for (std::size_t i = 0; i < count; ++i)
      inputs_[k].push_back(runner->calibration_input(app, seed_, static_cast<std::uint32_t>(k)));
  }
  CalibrationWindow::Limits limits;
  limits.reps = reps_;
  limits.min_kernel_seconds = min_seconds;
  if (const auto quota = runner->cpu_quota_period()) {
    // Under a CPU quota: one application at a time over five of its periods.
    limits.sustained = true;
    limits.min_window = std::max(limits.min_window, 5 * *quota);
  }
  window_.emplace(std::move(cores_per_task), std::move(measure), runner->cores(), now, limits);
  for (std::uint32_t c = 0; c < runner->cores(); ++c) submit(apps);
}

/// Submits one more calibration run: the application the window asks for.
void CalibrationRuns::submit(const std::vector<model::AppSpec>& apps) {
  const auto k = window_ ? window_->next() : std::nullopt;
  if (!k) return;
  auto& inputs = inputs_[*k];
  work_.start_calibration(*k, apps[*k], inputs.empty() ? Payload{} : inputs[next_input_[*k]++ % inputs.size()]);
}

void CalibrationRuns::done(std::size_t k, const JobOutcome& done, double now, const std::vector<model::AppSpec>& apps) {
  if (!active_ || !window_ || k >= apps.size()) return;
  if (done.failed) {
    if (!window_->done(k)) log_.error("{}: calibration of '{}' failed: {}", name_, apps[k].name, done.error);
    window_->abandon(k);
    submit(apps);
    return;
  }
  const double window = window_->window_seconds(k, now);
  auto& [output_sum, output_runs] = output_[k];
  output_sum += static_cast<double>(done.output_bytes);
  ++output_runs;
  if (const auto seconds = window_->record(k, done.run_seconds, now)) {
    if (apps[k].send_output) {
      // The bytes each task sends back up: before task_seconds, which the master counts as
      // the application measured here.
      const double bytes = output_sum / static_cast<double>(output_runs);
      log_.info("{}: '{}' writes {:.0f} bytes of output per task here (mean of {} runs)", name_, apps[k].name, bytes,
                output_runs);
      report_(net::msg::Measure{name_, apps[k].name, net::msg::Measure::What::output_bytes, bytes});
    }
    log_.info("{}: '{}' takes {:.6f} s per task here ({} runs over {:.3f} s; mean run {:.6f} s, median {:.6f} s)", name_,
              apps[k].name, *seconds, window_->runs(k), window, window_->mean_run_seconds(k), window_->median_run_seconds(k));
    report_(net::msg::Measure{name_, apps[k].name, net::msg::Measure::What::task_seconds, *seconds});
  }
  submit(apps);
}

void CalibrationRuns::stop() {
  active_ = false;
  prober_.reset();
}

}  // namespace treefarm::node
