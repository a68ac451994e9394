#pragma once
/// @file Predict.hpp
/// `treefarm predict`: the LP optimum of an experiment (papers/beaumont2006 §3).

#include <cstdint>
#include <ostream>
#include <string>

#include "runtime/model/Experiment.hpp"

namespace treefarm::tools {

struct PredictOptions {
  std::string calibration;   ///< Calibration file ("" = model values: speed, bandwidth).
  bool json = false;
  bool schedule = false;     ///< Also print the periodic schedule (§3.2).
  /// "maxmin" (the LP, default), "proportional" or "alpha:A" (bertin2008 §2.4, Ipopt).
  std::string objective = "maxmin";
  /// bytes: the one-port window the prediction assumes (model::RunSpec::one_port_window).
  std::uint64_t one_port_window = model::default_one_port_window;
};

int predict_command(const std::string& experiment, const PredictOptions& options, std::ostream& out);

}  // namespace treefarm::tools
