#pragma once
/// @file Feed.hpp
/// What the live dashboard shows (docs/dashboard.md): the root publishes its state here
/// about once a second from its loop thread; the HTTP server's threads read immutable
/// snapshots of it. The loop never waits on a reader: publish() builds the next snapshot
/// and swaps one shared_ptr under a mutex that readers hold only to copy that pointer.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace treefarm::metrics { class TaskLog; }

namespace treefarm::dashboard {

struct FeedOptions {
  /// Tasks the task stream keeps: the last ones completed.
  std::size_t tasks_kept = 3000;
  /// Points of throughput history per application; when full, pairs are merged (the
  /// history keeps the whole run at half the resolution).
  std::size_t history_points = 600;
  /// seconds over which a node's measured task rate is taken.
  double rate_window = 5.0;
  /// seconds between the nodes' heartbeats (--heartbeat-interval): a node whose state has
  /// not come up for lost_after seconds is shown as lost.
  double heartbeat_interval = 1.0;
  /// seconds of silence after which the tree declares a node dead (--heartbeat-timeout).
  double heartbeat_timeout = 6.0;
  /// seconds; 0 = lost_after_for(heartbeat_interval, heartbeat_timeout).
  double lost_after = 0;
  /// seconds: the least time between two views built for the served master's own state
  /// (queue, finished experiments) when no run publishes.
  double serve_refresh = 0.5;
};

/// One published state of a run (immutable once published).
struct Snapshot {
  std::uint64_t seq = 0;
  /// The run as `treefarm status --json` shows its "running" part ({elapsed, apps,
  /// nodes}), each node with its state, measured and planned rates (docs/dashboard.md).
  nlohmann::json run;
  nlohmann::json plan;                       ///< lp::to_json of the run's plan, or null
  std::vector<double> history_t;             ///< seconds since the start, one per point
  std::vector<std::vector<double>> history;  ///< [app][point]: tasks/s over the point's interval
  /// The task stream: [node index in run.nodes, app, start s, end s] per task, oldest first.
  struct Bar {
    std::uint32_t node = 0, app = 0;
    double start = 0, end = 0;
  };
  std::vector<Bar> tasks;
};

/// seconds without a new report after which the dashboard shows a node as lost:
/// 3 × max(1 s, interval) (the root publishes once a second, reports come every interval),
/// but at most timeout − 2 s, so that a node is shown lost within timeout + 1 s of its
/// death (its last report is seen by a publish up to 1 s later, the publish that notices
/// the silence comes up to 1 s after lost_after, and 1 s is left for a slow loop); never
/// under 1.5 s (a live node's reports may skip a publish).
double lost_after_for(double heartbeat_interval, double heartbeat_timeout);

class Feed {
 public:
  explicit Feed(FeedOptions options = {});

  /// Loop thread, about once a second. `status` is the root's status ({"elapsed" s,
  /// "apps": [{name, tasks, done, throughput, predicted}], "nodes": [{name, parent, cores,
  /// done, busy_cores?, queued?, load1?, reports?}]}, MasterOptions::on_status); `plan`
  /// the LP's plan (lp::to_json) or null; `log` the root's task log (its last records
  /// become the task stream), or null. A status whose elapsed time went back starts a
  /// new run (history and rates cleared).
  void publish(const nlohmann::json& status, const nlohmann::json& plan, const metrics::TaskLog* log);

  /// Served master: its own state ({serving, tree, waiting, running, queue, finished},
  /// docs/serve.md), called on an HTTP thread at most every serve_refresh seconds. Once
  /// this returns, the previous function is no longer called (an empty one: none).
  void set_serve_status(std::function<nlohmann::json()> status);

  /// Served master: the report view (report_view) of finished experiment `id`, or nullopt
  /// when it has none; the server's GET /jobs/ID/report.html shows it. Called on HTTP
  /// threads; an empty function: none.
  void set_job_reports(std::function<std::optional<nlohmann::json>(std::uint64_t)> reports);
  /// What that function gives for `id` (nullopt without one).
  std::optional<nlohmann::json> job_report(std::uint64_t id) const;

  /// The latest published run (null before the first publish).
  std::shared_ptr<const Snapshot> latest() const;

  /// The current view as JSON text (/api/status, docs/dashboard.md) and a number that
  /// changes when it does. Built at most once per published snapshot (and every
  /// serve_refresh seconds for a served master), shared by every reader.
  struct View {
    std::uint64_t version = 0;
    std::shared_ptr<const std::string> text;
  };
  View view();

  /// Waits until a view newer than `version` may exist or `seconds` passed; false once
  /// close() was called.
  bool wait(std::uint64_t version, double seconds);
  /// Wakes every waiter for good (the server stops).
  void close();

 private:
  struct NodeTrack {
    std::deque<std::pair<double, std::uint64_t>> done;  ///< (elapsed s, done) samples
    std::uint64_t reports = 0;
    double reported_at = -1;  ///< elapsed s at which `reports` last grew (-1: never)
  };
  nlohmann::json enrich_nodes(const nlohmann::json& nodes, const nlohmann::json& plan);
  void add_history(const nlohmann::json& apps, double elapsed);

  FeedOptions opt_;
  // Loop thread only.
  double last_elapsed_ = -1;
  std::vector<std::uint64_t> last_done_;
  std::vector<double> history_t_;
  std::vector<std::vector<double>> history_;
  std::map<std::string, NodeTrack> nodes_;
  std::uint64_t published_ = 0;
  // Shared.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const Snapshot> latest_;
  bool closed_ = false;
  std::function<nlohmann::json()> serve_status_;
  std::function<std::optional<nlohmann::json>(std::uint64_t)> job_reports_;
  // View cache (under view_mu_: one builder at a time, readers of the cache wait for it).
  std::mutex view_mu_;
  std::uint64_t view_seq_ = static_cast<std::uint64_t>(-1);
  double view_built_at_ = -1;
  View view_;
};

/// Adds to each node of `nodes` (objects with a "name") what `plan` (lp::to_json, or null)
/// gives it: planned_rate (tasks/s, all applications), planned ({app: tasks/s}),
/// saturated (["cpu", "link", "port", ...]) and utilisation ({cpu, link, port}, fractions).
void add_plan(nlohmann::json& nodes, const nlohmann::json& plan);

/// The view's JSON (docs/dashboard.md) from a run snapshot (may be null) and a served
/// master's own state (null when not served).
nlohmann::json view_json(const Snapshot* run, const nlohmann::json& serve);

}  // namespace treefarm::dashboard
