#pragma once
/// @file EtaModel.hpp
/// The predicted completion of a run (docs/command-tasks.md, "Progress and ETA"): from
/// the time each node takes for a task, as its results report it (the median core-seconds
/// of its last 64 tasks: a first, slower task, while the node warms up, does not skew it),
/// the run's rate is the sum over nodes of cores / core-seconds per task (tasks/s), at most
/// the LP's rate and the rate the run achieves (tasks done since the first results were seen,
/// over the seconds since then: with tiny tasks the dispatch, not the compute, bounds the
/// run), and the time left is the tasks left at that rate. The first prediction made
/// once a tenth of the tasks are done is kept, to be set against the actual end.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::master {

class EtaModel {
 public:
  /// A prediction: `remaining` tasks, `seconds_left` at `rate` tasks/s.
  struct Eta {
    std::uint64_t remaining = 0;
    double rate = 0;          ///< tasks/s
    double seconds_left = 0;  ///< seconds
  };

  /// `total` tasks in the run.
  explicit EtaModel(std::uint64_t total) : total_(total) {}

  /// Node `node` computes with `cores` cores (0: forwards only).
  void node_cores(const std::string& node, std::uint32_t cores) { nodes_[node].cores = cores; }
  /// A task of `cores_per_task` cores took `seconds` of compute on `node`.
  void completed(const std::string& node, double seconds, std::uint32_t cores_per_task);
  /// The LP's predicted rate of all applications together, tasks/s (0: none): it bounds the
  /// rate from the nodes' task times, which alone ignore the links (beaumont2006 §2).
  void plan_rate(double tasks_per_second) { plan_rate_ = tasks_per_second; }
  /// The prediction with `done` tasks done; nullopt before any node's time is known.
  std::optional<Eta> eta(std::uint64_t done) const;
  /// Called about once a second with `done` tasks done `elapsed` seconds since the start:
  /// measures the rate achieved since the first call that saw a task done (the count lags
  /// the start by a task's duration, so the start itself is not used), and keeps the first
  /// prediction made with that rate known and at least a tenth (at most half) of the tasks done.
  void observe(double elapsed, std::uint64_t done);
  /// {"fraction_done", "made_at", "predicted_end", "actual_end", "ratio"} (seconds), or
  /// null if no prediction was kept; `actual_end` the run's end in seconds.
  nlohmann::json versus_actual(double actual_end) const;

  /// "1,000 tasks, 8 min 12 s left at 2.03 tasks/s predicted".
  static std::string text(const Eta& eta);

 private:
  static constexpr std::size_t recent_tasks = 64;
  struct Node {
    std::uint32_t cores = 0;
    std::vector<double> core_seconds;  ///< its last recent_tasks tasks (a ring)
    std::uint64_t tasks = 0;
    double median() const;
  };
  std::uint64_t total_;
  double plan_rate_ = 0;
  std::optional<std::pair<double, std::uint64_t>> first_done_;  ///< (seconds, tasks) at the first observe() with a task done
  double achieved_rate_ = 0;  ///< tasks/s since then (0: not yet measured over a second)
  std::map<std::string, Node> nodes_;
  std::optional<std::pair<double, Eta>> kept_;  ///< (made at seconds, prediction)
  std::uint64_t kept_done_ = 0;
};

}  // namespace treefarm::master
