#pragma once
/// @file CalibrationRun.hpp
/// A calibration run (`--calibrate-out`): every node of the tree measures its kernels and
/// its link in place and the root gathers the figures into a calibration file. On a live
/// tree (docs/serve.md) the nodes are those that join, each recorded with its parent.

#include <cstddef>
#include <map>
#include <set>
#include <string>

#include "master/Master.hpp"
#include "runtime/model/Calibration.hpp"
#include "runtime/node/NodeDriver.hpp"

namespace treefarm::zmq_node { class ZmqNode; }

namespace treefarm::master {

class CalibrationRun {
 public:
  /// `master_cores`: the cores the root computes on. Arguments must outlive the object.
  CalibrationRun(const model::Experiment& ex, const MasterOptions& options, std::size_t master_cores);

  /// Sets the Welcome's calibration fields and the hooks that gather measurements
  /// (on_joined wraps the one already set); `node` is finished once all have arrived.
  void install(node::RootSetup& root, zmq_node::ZmqNode*& node);
  /// After the run: writes and prints the calibration. Returns the exit code.
  int finish(int rc) const;

 private:
  bool complete(double now) const;
  void expect_kernels(std::uint32_t cores);

  const model::Experiment& ex_;
  const MasterOptions& options_;
  model::Calibration calibration_;
  std::size_t expected_ = 0, got_ = 0;
  std::set<std::string> measured_;
  std::map<std::string, std::size_t> live_children_;  // live tree: children joined per node
  std::size_t live_joined_ = 0;                       // live tree: nodes joined
  double last_tick_ = 0;
};

}  // namespace treefarm::master
