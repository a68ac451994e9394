#pragma once
/// @file TreeCpu.hpp
/// The CPU time of a run's tree over time, as the root sees it (docs/live-model.md, "The
/// a-posteriori prediction"): each node's process CPU seconds from the heartbeats'
/// estimates (Estimate::What::process_cpu_seconds, a running total per process), the
/// root's own, and the machine's idle time (/proc/stat), each a series of (seconds on the
/// results' clock, running total); the CPU used over a window is the difference of the
/// series at its ends, interpolated linearly between the samples around them. Each node's
/// kernels' CPU per application (Estimate::What::compute_cpu_seconds) likewise.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/net/Messages.hpp"

namespace treefarm::master {

class TreeCpu {
 public:
  /// A series may end this many seconds before a window's end (or start after its
  /// start) and still give it: its last segment is extended (one heartbeat late).
  static constexpr double reach = 2.0;

  /// The process CPU figures among `estimates`, received at `at`; a figure the same as the
  /// node's last (a report the root already had) is not a new sample.
  void estimates(const std::vector<net::msg::Estimate>& estimates, double at);
  /// One sample of `node`'s process: `cpu_seconds` used so far at `at`.
  void node(const std::string& node, double at, double cpu_seconds);
  /// One sample of the machine: `idle_seconds` of idle CPU time so far at `at`.
  void machine(double at, double idle_seconds);

  /// CPU seconds `node` used between `lo` and `hi`; none without samples around them.
  std::optional<double> node_seconds(const std::string& node, double lo, double hi) const;
  /// Idle CPU seconds of the machine between `lo` and `hi`; none without samples.
  std::optional<double> idle_seconds(double lo, double hi) const;
  /// CPU seconds the kernels of application `app` used on `node` between `lo` and `hi`
  /// (Estimate::What::compute_cpu_seconds); none without samples around them.
  std::optional<double> compute_seconds(const std::string& node, std::size_t app, double lo, double hi) const;

 private:
  using Series = std::vector<std::pair<double, double>>;
  static void add(Series& s, double at, double value);
  static std::optional<double> at(const Series& s, double t);
  static std::optional<double> over(const Series& s, double lo, double hi);

  std::map<std::string, Series> nodes_;
  /// Per node, per application index: its kernels' CPU seconds so far.
  std::map<std::pair<std::string, std::size_t>, Series> compute_;
  Series machine_;
};

}  // namespace treefarm::master
