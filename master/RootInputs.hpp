#pragma once
/// @file RootInputs.hpp
/// The inputs the root hands out: each task's input made from the per-run secret the
/// workers never see (docs/security.md, "Secret inputs"), generated ahead on a thread of
/// its own (tasks/InputPrefetcher.hpp), small ones in slabs, those between (a matmul of
/// order 32: 16 KiB) made when sent straight into the frame that carries them
/// (zmq_node::MadeBytes) — on one machine the large ones too, into the child's shared
/// input segment — or with pooled inputs two per application reused by every task.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/Ids.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/Payload.hpp"
#include "tasks/InputPrefetcher.hpp"
#include "tasks/Payload.hpp"
#include "tasks/RunSecret.hpp"

namespace treefarm::master {

class RootInputs {
 public:
  /// `ex` must outlive the object. `pooled`: `--inputs pooled` (trusted trees only).
  /// `made_when_sent`: every input goes to a child that reads it from a shared segment (a
  /// tree on this machine over ipc://, a root that does not compute): inputs too large for a
  /// batch are made when sent too, straight into the child's slot (written once, nothing
  /// generated ahead and copied there).
  RootInputs(const model::Experiment& ex, bool pooled, bool made_when_sent = false);

  /// The input of a task, made when it is sent (and again if it is sent again).
  node::Payload payload(core::TaskId id);
  /// The input of a task made again, for a spot check that recomputes its result.
  tasks::InputBuffer regenerate(core::TaskId id) const;
  const tasks::RunSecret& secret() const { return secret_; }
  bool pooled() const { return pooled_; }
  /// What was generated, for the master's log.
  std::string summary() const;

 private:
  static constexpr std::uint64_t pool_size = 2;
  tasks::InputBuffer make(std::uint32_t app, std::uint64_t index) const;
  /// A task of a bag of files, lines or numbers: its placeholders and its input read now
  /// (tasks/TaskEnvelope.hpp); an input that cannot be read fails the task on its worker.
  tasks::InputBuffer bag_input(const model::AppSpec& app, std::uint64_t index) const;
  mutable std::uint64_t bag_inputs_ = 0;

  const model::Experiment& ex_;
  bool pooled_;
  tasks::RunSecret secret_;
  std::optional<tasks::InputPrefetcher> prefetcher_;
  std::vector<std::vector<tasks::InputBuffer>> pool_;
  std::vector<std::optional<node::SmallPayloads>> small_;
  /// Per application whose inputs are made where they are sent (SecretInput): its spec; else null.
  std::vector<std::shared_ptr<const model::AppSpec>> made_on_send_;
  std::uint64_t made_on_send_count_ = 0;
};

}  // namespace treefarm::master
