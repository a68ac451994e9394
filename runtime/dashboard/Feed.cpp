#include "runtime/dashboard/Feed.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <unordered_map>

#include "runtime/metrics/TaskLog.hpp"

namespace treefarm::dashboard {

using nlohmann::json;

namespace {
double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Rounded to a microsecond: the page needs no more, and the text stays short.
double rounded(double seconds) { return std::round(seconds * 1e6) / 1e6; }
}  // namespace

double lost_after_for(double heartbeat_interval, double heartbeat_timeout) {
  return std::max(1.5, std::min(3 * std::max(1.0, heartbeat_interval), heartbeat_timeout - 2));
}

Feed::Feed(FeedOptions options) : opt_(options) {}

void Feed::publish(const json& status, const json& plan, const metrics::TaskLog* log) {
  auto snap = std::make_shared<Snapshot>();
  const double elapsed = status.value("elapsed", 0.0);
  if (elapsed < last_elapsed_) {  // a new run (a served master's next experiment)
    last_done_.clear();
    history_t_.clear();
    history_.clear();
    nodes_.clear();
    last_elapsed_ = -1;
  }
  const json apps = status.value("apps", json::array());
  add_history(apps, elapsed);
  last_elapsed_ = elapsed;
  snap->run = status;
  snap->run["nodes"] = enrich_nodes(status.value("nodes", json::array()), plan);
  snap->plan = plan;
  snap->history_t = history_t_;
  snap->history = history_;
  if (log && opt_.tasks_kept > 0) {
    const auto records = log->last(opt_.tasks_kept);
    std::unordered_map<std::uint32_t, std::uint32_t> index;  // the log's name id -> snapshot's node
    const auto& nodes = snap->run["nodes"];
    snap->tasks.reserve(records.size());
    for (const auto& r : records) {
      auto it = index.find(r.node);
      if (it == index.end()) {
        std::uint32_t at = static_cast<std::uint32_t>(nodes.size());  // not among the nodes: dropped below
        for (std::size_t i = 0; i < nodes.size(); ++i)
          if (nodes[i].value("name", "") == log->name(r.node)) at = static_cast<std::uint32_t>(i);
        it = index.emplace(r.node, at).first;
      }
      if (it->second >= nodes.size()) continue;
      snap->tasks.push_back({it->second, r.app, r.completed_at - r.compute_seconds, r.completed_at});
    }
  }
  std::lock_guard lock(mu_);
  snap->seq = ++published_;
  latest_ = std::move(snap);
}

void Feed::add_history(const json& apps, double elapsed) {
  if (last_done_.size() != apps.size()) {
    last_done_.assign(apps.size(), 0);
    history_.assign(apps.size(), {});
    history_t_.clear();
  }
  const double dt = elapsed - std::max(0.0, last_elapsed_);
  if (elapsed <= 0 || !(dt > 0)) {
    for (std::size_t k = 0; k < apps.size(); ++k) last_done_[k] = apps[k].value("done", std::uint64_t{0});
    return;
  }
  history_t_.push_back(elapsed);
  for (std::size_t k = 0; k < apps.size(); ++k) {
    const auto done = apps[k].value("done", std::uint64_t{0});
    history_[k].push_back(static_cast<double>(done >= last_done_[k] ? done - last_done_[k] : 0) / dt);
    last_done_[k] = done;
  }
  if (history_t_.size() <= std::max<std::size_t>(4, opt_.history_points)) return;
  // Full: merge neighbours pairwise, each rate weighted by its interval's length.
  std::vector<double> t;
  std::vector<std::vector<double>> h(history_.size());
  for (std::size_t i = 0; i + 1 < history_t_.size(); i += 2) {
    const double t0 = i == 0 ? 0.0 : history_t_[i - 1];
    const double a = history_t_[i] - t0, b = history_t_[i + 1] - history_t_[i];
    t.push_back(history_t_[i + 1]);
    for (std::size_t k = 0; k < history_.size(); ++k)
      h[k].push_back(a + b > 0 ? (history_[k][i] * a + history_[k][i + 1] * b) / (a + b) : 0.0);
  }
  if (history_t_.size() % 2 == 1) {  // the last point stays as it is
    t.push_back(history_t_.back());
    for (std::size_t k = 0; k < history_.size(); ++k) h[k].push_back(history_[k].back());
  }
  history_t_ = std::move(t);
  history_ = std::move(h);
}

json Feed::enrich_nodes(const json& nodes, const json& plan) {
  const double now = steady_seconds();
  const double lost_after =
      opt_.lost_after > 0 ? opt_.lost_after : lost_after_for(opt_.heartbeat_interval, opt_.heartbeat_timeout);
  json out = json::array();
  for (const auto& n : nodes) {
    json e = n;
    const std::string name = n.value("name", "");
    auto& track = nodes_[name];
    const auto done = n.value("done", std::uint64_t{0});
    track.done.emplace_back(now, done);
    while (track.done.size() > 2 && now - track.done[1].first >= opt_.rate_window) track.done.pop_front();
    const auto& [t0, d0] = track.done.front();
    e["rate"] = now > t0 && done >= d0 ? static_cast<double>(done - d0) / (now - t0) : 0.0;
    // Its state: joining until its first report comes up the tree, lost once reports stop
    // (its parent declared it dead and no longer forwards them), else busy or idle.
    const auto reports = n.value("reports", std::uint64_t{0});
    if (reports > track.reports) {
      track.reports = reports;
      track.reported_at = now;
    }
    std::string state = "joining";
    if (track.reported_at >= 0 && now - track.reported_at > lost_after) state = "lost";
    else if (n.contains("busy_cores")) state = n.value("busy_cores", 0u) > 0 || n.value("queued", 0u) > 0 ? "busy" : "idle";
    e["state"] = state;
    out.push_back(std::move(e));
  }
  add_plan(out, plan);
  return out;
}

void add_plan(json& nodes, const json& plan) {
  if (!plan.is_object()) return;
  std::unordered_map<std::string, const json*> planned;
  const auto list = plan.find("nodes");
  if (list == plan.end() || !list->is_array()) return;
  for (const auto& p : *list)
    if (p.is_object() && p.contains("name") && p["name"].is_string()) planned[p["name"].get<std::string>()] = &p;
  for (auto& e : nodes) {
    const auto p = planned.find(e.value("name", ""));
    if (p == planned.end()) continue;
    const json& pn = *p->second;
    const json apps = pn.value("apps", json::object());
    double rate = 0;
    for (const auto& [app, r] : apps.items()) rate += r.is_number() ? r.get<double>() : 0.0;
    e["planned_rate"] = rate;
    e["planned"] = apps;
    e["saturated"] = pn.value("saturated", json::array());
    e["utilisation"] = {{"cpu", pn.value("cpu_utilisation", 0.0)},
                        {"link", pn.value("link_utilisation", 0.0)},
                        {"port", pn.value("port_utilisation", 0.0)}};
  }
}

void Feed::set_serve_status(std::function<json()> status) {
  std::lock_guard build(view_mu_);  // no view is being built with the old one once this returns
  std::lock_guard lock(mu_);
  serve_status_ = std::move(status);
  view_seq_ = static_cast<std::uint64_t>(-1);  // the next view is built anew
}

void Feed::set_job_reports(std::function<std::optional<json>(std::uint64_t)> reports) {
  std::lock_guard lock(mu_);
  job_reports_ = std::move(reports);
}

std::optional<json> Feed::job_report(std::uint64_t id) const {
  std::function<std::optional<json>(std::uint64_t)> reports;
  {
    std::lock_guard lock(mu_);
    reports = job_reports_;
  }
  return reports ? reports(id) : std::nullopt;
}

std::shared_ptr<const Snapshot> Feed::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

Feed::View Feed::view() {
  std::lock_guard build(view_mu_);
  std::shared_ptr<const Snapshot> run;
  std::function<json()> serve;
  {
    std::lock_guard lock(mu_);
    run = latest_;
    serve = serve_status_;
  }
  const std::uint64_t seq = run ? run->seq : 0;
  const double now = steady_seconds();
  if (view_.text && seq == view_seq_ && (!serve || now - view_built_at_ < opt_.serve_refresh)) return view_;
  auto text = std::make_shared<const std::string>(view_json(run.get(), serve ? serve() : json()).dump());
  view_seq_ = seq;
  view_built_at_ = now;
  if (!view_.text || *view_.text != *text) view_ = View{view_.version + 1, std::move(text)};
  return view_;
}

bool Feed::wait(std::uint64_t version, double seconds) {
  (void)version;
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return closed_; });
  return !closed_;
}

void Feed::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

json view_json(const Snapshot* run, const json& serve) {
  json v{{"serving", nullptr}, {"tree", json::array()}, {"waiting", json::array()}, {"running", nullptr},
         {"queue", json::array()}, {"finished", json::array()}, {"plan", nullptr},
         {"history", {{"t", json::array()}, {"apps", json::object()}}},
         {"tasks", {{"nodes", json::array()}, {"apps", json::array()}, {"rows", json::array()}}}};
  bool running = run != nullptr;
  if (serve.is_object()) {
    for (const char* key : {"serving", "tree", "waiting", "running", "queue", "finished"})
      if (serve.contains(key)) v[key] = serve[key];
    running = running && v["running"].is_object();  // between experiments: the served state alone
  }
  if (!running) return v;
  json r = v["running"].is_object() ? v["running"] : json::object();
  for (const auto& [key, value] : run->run.items()) r[key] = value;
  v["running"] = r;
  v["tree"] = run->run.value("nodes", json::array());
  v["plan"] = run->plan;
  json apps = json::array();
  for (const auto& a : run->run.value("apps", json::array())) apps.push_back(a.value("name", ""));
  json t = json::array();
  for (double x : run->history_t) t.push_back(rounded(x));
  v["history"]["t"] = t;
  for (std::size_t k = 0; k < run->history.size() && k < apps.size(); ++k) {
    json h = json::array();
    for (double x : run->history[k]) h.push_back(rounded(x));
    v["history"]["apps"][apps[k].get<std::string>()] = h;
  }
  json names = json::array();
  for (const auto& n : v["tree"]) names.push_back(n.value("name", ""));
  json rows = json::array();
  for (const auto& b : run->tasks) rows.push_back({b.node, b.app, rounded(b.start), rounded(b.end)});
  v["tasks"] = {{"nodes", names}, {"apps", apps}, {"rows", rows}};
  return v;
}

}  // namespace treefarm::dashboard
