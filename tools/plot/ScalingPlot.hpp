#pragma once
/// @file ScalingPlot.hpp
/// The curve of a scaling benchmark (`treefarm bench simulate|lp|workers ... --plot
/// FILE.png`): cost against size on log-log axes, one line per series with its fitted
/// exponent in the key, and under the plot the command that measured it and the machine.

#include <filesystem>
#include <string>
#include <vector>

namespace treefarm::plot {

/// One measured line: cost[i] at size[i]; `exponent` is its fitted exponent (printed in
/// the key; NaN: not printed).
struct Series {
  std::string name;
  std::vector<double> sizes, costs;
  double exponent = 0;
};

struct ScalingCurve {
  std::string title;       ///< e.g. "treefarm bench lp"
  std::string size_label;  ///< x axis, with its unit
  std::string cost_label;  ///< y axis, with its unit
  std::vector<Series> series;
  std::string command;     ///< the command line that measured it
  std::string machine;     ///< e.g. "2 CPUs (AMD EPYC ...), load average 1.9"
};

/// This process's command line as typed (from /proc/self/cmdline; the program's folder
/// left out), for the caption.
std::string this_command();

/// This machine in a line: its CPU model (/proc/cpuinfo), how many CPUs this process may
/// use, and the 1-minute load average now.
std::string machine_line();

/// Writes PNG with its data (PNG minus .png plus .dat) and gnuplot script (.gp) beside
/// it. Returns "" or why no PNG was written (gnuplot missing or failed, a file not
/// writable); points with a size or cost <= 0 cannot stand on log axes and are left out.
std::string write_scaling_plot(const std::filesystem::path& png, const ScalingCurve& curve);

}  // namespace treefarm::plot
