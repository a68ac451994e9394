#pragma once
/// @file Predict.hpp
/// `treefarm predict`: the LP optimum of an experiment (papers/beaumont2006 §3).

#include <ostream>
#include <string>

namespace treefarm::tools {

struct PredictOptions {
  std::string calibration;   ///< Calibration file ("" = model values: speed, bandwidth).
  bool json = false;
  bool schedule = false;     ///< Also print the periodic schedule (§3.2).
  /// "maxmin" (the LP, default), "proportional" or "alpha:A" (bertin2008 §2.4, Ipopt).
  std::string objective = "maxmin";
};

int predict_command(const std::string& experiment, const PredictOptions& options, std::ostream& out);

}  // namespace treefarm::tools
