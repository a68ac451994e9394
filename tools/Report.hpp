#pragma once
/// @file Report.hpp
/// `treefarm report results.json`: the result table again, from the file, and
/// two plots drawn with gnuplot (pngcairo):
/// - gantt.png: one row per node; per task a thin grey segment from its dispatch by the
///   master to its start (transfer and queueing) and a thick one, coloured by
///   application, from its start to its completion (seconds since the start of the run);
/// - throughput.png: per application, completed tasks per `bin` seconds over time
///   (tasks/s), beside the LP prediction α(k) (dashed) when the run was calibrated, and
///   the steady window of papers/beaumont2006 §5.1.1 (dotted verticals).

#include <ostream>
#include <string>

namespace treefarm::tools {

struct ReportOptions {
  std::string results;       ///< results.json
  std::string out_dir;       ///< where the PNGs go ("" = next to results.json)
  bool plots = true;         ///< false: the table only
  /// seconds per throughput bin; 0 = sized to the run (auto_bin_seconds).
  double bin = 0;
  /// Also write the run as one self-contained HTML page here (the dashboard's views with
  /// the data inlined; runtime/dashboard/Page.hpp, docs/dashboard.md). "" = none.
  std::string html;
};

/// The throughput plot's bin for a run of `duration` seconds: about 50 bins over it, a
/// round value (1, 2 or 5 times a power of ten seconds), 1 s for a run of unknown length.
double auto_bin_seconds(double duration);

/// Prints the table to `out`, draws the plots (when gnuplot is installed; says so
/// otherwise) and lists the files written. Returns the exit code: 0, or
/// exit_wrong_results when the recorded run was not OK. Throws model::FileError for a
/// file that is not a results.json.
int report(const ReportOptions& options, std::ostream& out);

}  // namespace treefarm::tools
