#pragma once
/// @file Calibration.hpp
/// Measured platform parameters (`treefarm calibrate`), stored as JSON next to an
/// experiment file. Format: docs/experiment-file.md, section "Calibration file".

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace treefarm::model {

/// What was measured on one node.
struct NodeCalibration {
  /// Seconds one task of an application takes on one slot of this node, by app name
  /// (measured, so it already includes the kernel's real rate on this node). Each > 0.
  std::map<std::string, double> task_seconds;
  /// bytes/s of the link from the parent, measured (absent for the master or if not
  /// measured). > 0.
  std::optional<double> link_bandwidth;
  /// bytes/s this node sends to all its children together, measured by probing them at
  /// once (nodes with two or more children): the cap of the bounded multi-port model.
  std::optional<double> out_bandwidth;
  /// Cores the node really computes with.
  std::uint32_t cores = 0;

  bool operator==(const NodeCalibration&) const = default;
};

/// A calibration of a whole experiment.
struct Calibration {
  /// Path of the experiment file that was calibrated (as given to the tool).
  std::string experiment;
  /// When it was measured: seconds since the Unix epoch (UTC).
  double measured_at = 0.0;
  /// By node name.
  std::map<std::string, NodeCalibration> nodes;

  bool operator==(const Calibration&) const = default;
};

/// Reads and validates a calibration file. Throws FileError (see Experiment.hpp): the
/// line is known for JSON syntax errors, 0 for errors found after parsing.
Calibration load_calibration(const std::string& path);
/// Parses calibration JSON text; `path` is used in error messages. Throws FileError.
Calibration parse_calibration(const std::string& text, const std::string& path);
/// Writes `calibration` to `path` (through a temporary file renamed into place).
/// Throws std::runtime_error if the file cannot be written.
void save_calibration(const Calibration& calibration, const std::string& path);
/// The JSON text save_calibration writes (indented, nodes in name order).
std::string to_json(const Calibration& calibration);

}  // namespace treefarm::model
