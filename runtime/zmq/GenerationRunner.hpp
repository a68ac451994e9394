#pragma once
/// @file GenerationRunner.hpp
/// The executor as each successive node driver of a served tree sees it (ZmqNode.cpp).

#include <cstdint>
#include <optional>

#include "runtime/exec/ExecutorRunner.hpp"
#include "runtime/node/LocalRunner.hpp"

namespace treefarm::zmq_node {

/// The executor as each successive driver of a served tree sees it (docs/serve.md): a
/// driver's job ids carry its generation in the top 16 bits, so that a job still running
/// from the previous run is not taken for the new driver's job of the same number.
class GenerationRunner final : public node::LocalRunner {
 public:
  explicit GenerationRunner(exec::ExecutorRunner& runner) : runner_(runner) {}
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
  std::uint64_t generation_ = 0;
};

}  // namespace treefarm::zmq_node
