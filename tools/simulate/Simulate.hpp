#pragma once
/// @file SimulateCommand.hpp
/// `treefarm simulate EXPERIMENT.toml [--policy P] [--out DIR] [--calibration FILE]`: runs
/// the experiment on a SimGrid platform built from it (runtime/sim, docs/simulation.md)
/// and writes the same results.json as a real run, with the LP prediction beside it.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "runtime/model/Experiment.hpp"
#include "runtime/sim/Simulation.hpp"

namespace treefarm::simulate {

struct SimulateOptions {
  std::string policy;        ///< Overrides [run] policy ("" = the file's).
  std::uint32_t buffer = 0;  ///< Overrides [run] buffer (0 = the file's).
  std::string migration;     ///< Overrides [run] migration ("off", "pull", "push"; "" = the file's).
  std::string balance;       ///< Overrides [run] balance ("off", "tll", "mll"; "" = the file's).
  std::string out_dir;       ///< Writes DIR/results.json ("" = no file).
  std::string calibration;   ///< Calibration file: simulate the calibrated platform.
  double time_limit = 0;     ///< Simulated seconds (0 = none).
  double wall_limit = 0;     ///< Wall-clock seconds (0 = none).
  bool quiet = false;        ///< No table.
  /// Policy lp: calibrate as you go (sim::SimulationOptions::plan_from_estimates).
  bool plan_from_estimates = false;
  /// Policy "price": write the convergence trace of its agents (CSV, PriceStudy.hpp) here,
  /// with a PNG plot beside it, before the simulation ("" = none).
  std::string trace;
  std::uint64_t trace_iterations = 500;  ///< Iterations of the trace.
  bool trace_only = false;   ///< Write the trace and stop (no SimGrid run).
  bool trace_cascade = false;  ///< PriceNetwork::set_cascade for the trace.
};

/// Loads the experiment (and calibration), applies the overrides, simulates it (in a
/// forked process) and prints the results table and a summary line to `out`. Returns 0
/// when every task completed exactly once, 4 otherwise (as `treefarm run`). Throws
/// model::FileError / std::invalid_argument / std::runtime_error with a message for the
/// user (bad file, unknown policy, a platform SimGrid cannot simulate).
int simulate_command(const std::string& experiment, const SimulateOptions& options, std::ostream& out);

/// The experiment with the command's overrides, checked (policy name known).
model::Experiment load_for_simulation(const std::string& experiment, const SimulateOptions& options);

/// One line: nodes, tasks, simulated seconds, wall seconds, peak memory, events.
void print_simulation_summary(std::ostream& out, const sim::SimulationOutcome& outcome, std::size_t nodes);

}  // namespace treefarm::simulate
