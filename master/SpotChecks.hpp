#pragma once
/// @file SpotChecks.hpp
/// Unforgeable results (docs/security.md): the root recomputes a secret fraction of the
/// results its children send, from the input it regenerates from the run secret. A wrong
/// one convicts the child it came through; what was recorded from the forger is redone.

#include <cstdint>
#include <string>

#include "master/RootInputs.hpp"
#include "master/RunRecord.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::master {

class SpotChecks {
 public:
  /// `fraction` in [0, 1]. Every argument must outlive the object.
  SpotChecks(const model::Experiment& ex, const RootInputs& inputs, RunRecord& record, double fraction)
      : ex_(ex), inputs_(inputs), record_(record), fraction_(fraction) {}

  /// Sets RootSetup::check_result and RootSetup::convict.
  void install(node::RootSetup& root);
  /// What was checked and convicted, for the master's log.
  std::string summary() const;

 private:
  node::ResultVerdict check(const net::msg::Result& r, const std::string& via);

  const model::Experiment& ex_;
  const RootInputs& inputs_;
  RunRecord& record_;
  double fraction_;
  std::uint64_t checked_ = 0, from_children_ = 0, convicted_ = 0, redone_ = 0;
  double check_seconds_ = 0;
};

}  // namespace treefarm::master
