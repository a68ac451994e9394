#pragma once
/// @file CalibrationRuns.hpp
/// A node's part of a calibration run (Welcome::calibrate_reps > 0; docs/calibration.md):
/// its kernels, each application run on every core until it has run calibrate_reps times
/// and for at least a second of kernel time (CalibrationWindow), on several inputs taken in
/// turn; and its links, probed as children join (LinkProber). Each measurement goes up the
/// tree (msg::Measure) through `report`.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/Application.hpp"
#include "runtime/net/Messages.hpp"
#include "runtime/node/CalibrationWindow.hpp"
#include "runtime/node/LinkProber.hpp"
#include "runtime/node/LocalRunner.hpp"
#include "runtime/node/LocalWork.hpp"
#include "runtime/node/Log.hpp"
#include "runtime/node/Transport.hpp"

namespace treefarm::node {

/// Calibration inputs: a node's calibration runs of one application take several inputs
/// in turn, together about this many bytes — more than a last-level cache, as a run's
/// inputs arrive fresh from the network — and at most this many inputs.
inline constexpr std::uint64_t calibration_pool_bytes = std::uint64_t{32} << 20;
inline constexpr std::uint64_t calibration_pool_inputs = 8;
/// How many inputs of `input_bytes` bytes the calibration of an application takes in turn.
std::size_t calibration_inputs_for(std::uint64_t input_bytes);

class CalibrationRuns {
 public:
  /// Kernel runs start this long (seconds) after joining, so that the link probes (made as
  /// children join) run on quiet cores and measure the links, not CPU contention.
  static constexpr double kernels_after = 2.0;
  /// An application is measured for at least this many seconds of kernel time.
  static constexpr double min_seconds = 1.0;

  using Report = std::function<void(const net::msg::Measure&)>;
  /// `name`: this node's (kept by reference, as `work`, `transport` and `log`).
  CalibrationRuns(const std::string& name, LocalWork& work, Transport& transport, const Logger& log, Report report);

  /// A run is configured: calibrating when `w.calibrate_reps` > 0 (the link prober is
  /// ready for the children joining from now on).
  void configure(const net::msg::Welcome& w);
  bool active() const { return active_; }
  /// Starts the kernel runs at `now` (every core busy).
  void start(double now, const std::vector<model::AppSpec>& apps);
  /// Calibration run of application `k` ended.
  void done(std::size_t k, const JobOutcome& outcome, double now, const std::vector<model::AppSpec>& apps);
  /// Link probes: a child joined or left, or acknowledged a probe.
  LinkProber* prober() const { return prober_.get(); }
  /// The parent is lost: everything forgotten.
  void stop();

 private:
  void submit(const std::vector<model::AppSpec>& apps);

  const std::string& name_;
  LocalWork& work_;
  Transport& transport_;
  const Logger& log_;
  Report report_;
  bool active_ = false;
  std::uint64_t seed_ = 0;
  std::uint32_t reps_ = 0;
  std::optional<CalibrationWindow> window_;   ///< the runs so far, per app
  /// Per app: the inputs its calibration runs take in turn, and the next one's index.
  std::vector<std::vector<Payload>> inputs_;
  std::vector<std::size_t> next_input_;
  /// Per app: bytes of output of its calibration runs so far, and how many.
  std::vector<std::pair<double, std::uint64_t>> output_;
  std::unique_ptr<LinkProber> prober_;
};

}  // namespace treefarm::node
