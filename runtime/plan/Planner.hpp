#pragma once
/// @file Planner.hpp
/// `treefarm plan`: choose the tree (who is the master, who is whose parent) for a set of
/// machines and applications with one of four methods, evaluate it with the steady-state
/// LP, and write it as an experiment file. docs/planning.md.

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/plan/MachineSet.hpp"
#include "runtime/plan/Qlse.hpp"
#include "runtime/plan/TreeSearch.hpp"

namespace treefarm::plan {

enum class Method { qlse, greedy, rmshc, exhaustive };
/// "qlse", "greedy", "rmshc", "exhaustive".
std::string_view to_string(Method method);
/// Inverse of to_string; nullopt for an unknown name.
std::optional<Method> method_from_string(std::string_view name);

/// The QoS the user asks: the highest fair throughput ("maximum"), or a throughput per
/// application (tasks/s).
struct Qos {
  bool maximum = true;
  std::vector<double> rates;  ///< tasks/s per application (same order as the apps) when !maximum.
};

/// Parses `--qos`: "maximum"; a number R (rates R·w(k)); or "APP=RATE,APP=RATE" naming
/// every application (tasks/s). Throws std::invalid_argument naming the bad part.
Qos parse_qos(std::string_view text, const std::vector<model::AppSpec>& apps);

struct PlanOptions {
  Method method = Method::rmshc;
  Qos qos;
  QlseOptions qlse;
  RmshcOptions rmshc;
  /// QLSE/greedy with QoS "maximum": bisection steps on the scale of the rates.
  std::size_t bisection_steps = 30;
};

/// A planned tree and what the LP predicts for it.
struct PlanResult {
  Method method = Method::rmshc;
  bool found = false;          ///< A tree was produced (QLSE/greedy may find no mapping).
  PlanTree tree;
  lp::PlatformModel model;     ///< LP view of the tree (user weights).
  lp::Solution solution;       ///< LP optimum of the tree (user weights).
  std::vector<std::size_t> order;  ///< model node i = machine order[i].
  double fair_throughput = 0.0;    ///< tasks/s per unit of weight (0 if !found).
  double seconds = 0.0;            ///< Planning wall time (search + final LP).
  std::size_t evaluations = 0;     ///< LP solves spent by the search.
  bool qos_satisfied = false;      ///< maximum: a tree was found; rates: the LP meets every rate.
  Qos qos;
  /// QoS as met: the largest s such that the tree sustains s·rates (rates) or s·w (maximum).
  double qos_scale = 0.0;
  double lan_hit_ratio = 0.0;          ///< Predicted bytes/s on links inside one LAN / all bytes/s (slide 14).
  double computational_ratio = 0.0;    ///< Mean over computing machines of power / predicted flop/s (slide 15).
  std::optional<Mapping> mapping;      ///< QLSE and greedy: the task mapping.
  std::optional<SearchResult> search;  ///< RMSHC and exhaustive.
};

/// Plans with `options`. Throws std::invalid_argument for an unusable input (see
/// TreeEvaluator) or a set too large for exhaustive.
PlanResult plan(const MachineSet& machines, const std::vector<model::AppSpec>& apps, const model::RunSpec& run,
                const PlanOptions& options);

/// {"method", "found", "fair_throughput", "seconds", "evaluations", "qos": {"request",
/// "satisfied", "scale"}, "lan_hit_ratio", "computational_ratio", "apps": [{"name",
/// "throughput"}], "tree": [{"machine", "lan", "parent", "cores", "speed", "bandwidth"}],
/// "mapping": {...} (qlse/greedy), "search": {...} (rmshc/exhaustive)}.
nlohmann::json to_json(const PlanResult& result, const MachineSet& machines);
/// The tree (indented, with LANs and link bandwidths), the prediction and the metrics.
void print_plan(std::ostream& out, const PlanResult& result, const MachineSet& machines);
/// A ready experiment file: one [[node]] per machine of the tree (cores, speed, the
/// bandwidth and latency of the link from its parent), the [[app]] entries and [run].
std::string experiment_toml(const PlanResult& result, const MachineSet& machines,
                            const std::vector<model::AppSpec>& apps, const model::RunSpec& run,
                            const std::string& header);

/// Reads APPS.toml: [[app]] tables and an optional [run] table, as in an experiment file
/// (docs/experiment-file.md). Throws model::FileError.
model::Experiment load_apps(const std::string& path);
/// Parses APPS.toml text; `path` is used in error messages.
model::Experiment parse_apps(const std::string& text, const std::string& path);

}  // namespace treefarm::plan
