#pragma once
/// @file Progress.hpp
/// The progress display of a run, fed by the master once a second:
/// - `bar`: on a terminal, one live line per application — a bar, completed/total,
///   percentage, rate (tasks/s) and ETA — redrawn in place (ANSI cursor-up);
/// - `plain`: one line per tick (logs and files that are not terminals);
/// - `json`: one JSON object per tick, for scripts: {"type": "progress", "elapsed",
///   "completed", "tasks", "apps": [{"name", "completed", "tasks", "percent", "rate",
///   "eta_seconds"}]};
/// - `off`.
/// Rates are smoothed (exponential, weight 0.3 to the last second) so that the ETA does
/// not jump; ETA = remaining / rate, null (JSON) or "?" while the rate is 0.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace treefarm::metrics {

class Progress {
 public:
  enum class Mode { off, plain, bar, json };
  struct App {
    std::string name;
    std::uint64_t tasks = 0;
  };

  /// `out` must outlive the object.
  Progress(std::vector<App> apps, Mode mode, std::ostream& out);

  /// The model's prediction of the whole run (master/EtaModel.hpp).
  struct Prediction {
    std::uint64_t remaining = 0;  ///< tasks
    double rate = 0;              ///< tasks/s
    double seconds_left = 0;      ///< seconds
    std::string text;             ///< "1,000 tasks, 8 min 12 s left at 2.03 tasks/s predicted"
  };
  /// Shown from the next tick on: plain and bar append its text, json adds "predicted":
  /// {"remaining", "rate", "seconds_left"}.
  void set_prediction(Prediction p) { prediction_ = std::move(p); }

  /// `elapsed` seconds since the start; `completed[k]` tasks of application k so far.
  void tick(double elapsed, const std::vector<std::uint64_t>& completed);

  /// Smoothed rate of application k, tasks/s (after at least one tick).
  double rate(std::size_t k) const { return rates_.at(k); }
  /// Seconds left for application k at its smoothed rate; negative if unknown.
  double eta(std::size_t k) const;

  /// "12 s", "3 min 05 s", "1 h 02 min".
  static std::string format_duration(double seconds);
  /// The bar line of one application, `width` characters of bar.
  std::string bar_line(std::size_t k, int width = 30) const;

 private:
  std::vector<App> apps_;
  Mode mode_;
  std::ostream& out_;
  std::vector<std::uint64_t> last_;
  std::vector<double> rates_;
  double last_elapsed_ = 0;
  bool drawn_ = false;
  int ticks_ = 0;
  std::optional<Prediction> prediction_;
  std::size_t drawn_lines_ = 0;
};

}  // namespace treefarm::metrics
