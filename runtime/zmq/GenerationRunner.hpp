#pragma once
/// @file GenerationRunner.hpp
/// The executor as the node drivers of one ZeroMQ node see it (internal to the ZeroMQ
/// adapter).

#include <cstdint>
#include <functional>
#include <optional>

#include "runtime/exec/ExecutorRunner.hpp"
#include "runtime/node/LocalRunner.hpp"

namespace treefarm::zmq_node {

/// The executor as each successive driver of a served tree sees it (docs/serve.md): a
/// driver's job ids carry its generation in the top 16 bits, so that a job still running
/// from the previous run is not taken for the new driver's job of the same number.
class GenerationRunner final : public node::LocalRunner {
 public:
  /// `speed_probe`: measures flop/s per core (blocking; empty: no speed can be measured).
  GenerationRunner(exec::ExecutorRunner& runner, std::function<double()> speed_probe)
      : runner_(runner), speed_probe_(std::move(speed_probe)) {}
  std::uint32_t cores() const override { return runner_.cores(); }
  void start(std::uint64_t job, const model::AppSpec& app, const node::Payload& input) override {
    runner_.start(tag(job), app, input);
  }
  void start_task(std::uint64_t job, const model::AppSpec& app, const node::Payload& input, std::uint64_t index) override {
    runner_.start_task(tag(job), app, input, index);
  }
  node::Payload calibration_input(const model::AppSpec& app, std::uint64_t seed, std::uint32_t k) override {
    return runner_.calibration_input(app, seed, k);
  }
  /// The executor's CPU quota period: a served node's calibration measures over whole periods too.
  std::optional<double> cpu_quota_period() const override { return runner_.cpu_quota_period(); }
  /// The driver asks for this node's speed: measured by the adapter's loop (take_speed_request).
  bool measure_speed() override {
    if (!speed_probe_) return false;
    speed_wanted_ = true;
    return true;
  }
  /// The probe to run now, if the driver asked for the speed since the last call.
  const std::function<double()>* take_speed_request() {
    if (!speed_wanted_) return nullptr;
    speed_wanted_ = false;
    return &speed_probe_;
  }
  void next_generation() { ++generation_; }
  /// The driver's job id of an executor job of the current generation; nullopt for older ones.
  std::optional<std::uint64_t> current(std::uint64_t tagged) const {
    if ((tagged >> shift) != (generation_ & 0xffff)) return std::nullopt;
    return tagged & ((std::uint64_t{1} << shift) - 1);
  }

 private:
  static constexpr int shift = 48;
  std::uint64_t tag(std::uint64_t job) const { return ((generation_ & 0xffff) << shift) | job; }
  exec::ExecutorRunner& runner_;
  std::function<double()> speed_probe_;
  bool speed_wanted_ = false;
  std::uint64_t generation_ = 0;
};

}  // namespace treefarm::zmq_node
