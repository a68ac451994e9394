#include "runtime/metrics/Results.hpp"

#include "runtime/model/Experiment.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace treefarm::metrics {

std::pair<std::vector<double>, double> steady_throughput(
    const std::vector<std::vector<double>>& completions, const std::vector<std::uint64_t>& totals,
    double epsilon) {
  const std::size_t k_count = completions.size();
  double t_end = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < k_count; ++k) {
    if (totals[k] > 0 && completions[k].size() >= totals[k])
      t_end = std::min(t_end, *std::max_element(completions[k].begin(), completions[k].end()));
  }
  if (!std::isfinite(t_end)) {  // nothing finished: use the last completion seen
    t_end = 0;
    for (const auto& c : completions)
      for (double t : c) t_end = std::max(t_end, t);
  }
  std::vector<double> rho(k_count, 0.0);
  const double lo = epsilon * t_end, hi = (1 - epsilon) * t_end, window = (1 - 2 * epsilon) * t_end;
  if (window <= 0) return {rho, t_end};
  for (std::size_t k = 0; k < k_count; ++k) {
    std::size_t n_hi = 0, n_lo = 0;
    for (double t : completions[k]) {
      if (t <= hi) ++n_hi;
      if (t <= lo) ++n_lo;
    }
    rho[k] = static_cast<double>(n_hi - n_lo) / window;
  }
  return {rho, t_end};
}

void RunResults::compute() {
  std::vector<std::vector<double>> completions(apps.size());
  std::vector<std::uint64_t> totals;
  std::map<std::string, std::uint64_t> per_node;
  duration = 0;
  for (const auto& t : tasks) {
    if (t.app < apps.size()) completions[t.app].push_back(t.completed_at);
    per_node[t.node]++;
    duration = std::max(duration, t.completed_at);
  }
  for (std::size_t k = 0; k < apps.size(); ++k) {
    apps[k].completed = completions[k].size();
    totals.push_back(apps[k].tasks);
  }
  auto [rho, t_end] = steady_throughput(completions, totals, epsilon);
  steady_end = t_end;
  lost = 0;
  fair_throughput = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < apps.size(); ++k) {
    apps[k].throughput = rho[k];
    lost += apps[k].tasks - std::min(apps[k].tasks, apps[k].completed);
    fair_throughput = std::min(fair_throughput, rho[k] / apps[k].weight);
  }
  if (apps.empty()) fair_throughput = 0;
  for (auto& n : nodes) n.tasks_computed = per_node.count(n.name) ? per_node[n.name] : 0;
}

bool RunResults::ok() const {
  if (lost != 0) return false;
  for (const auto& a : apps)
    if (a.wrong != 0 || a.failed != 0 || a.completed != a.tasks) return false;
  return true;
}

RunResults empty_results(const model::Experiment& experiment) {
  RunResults r;
  r.experiment = experiment.path;
  r.policy = experiment.run.policy;
  r.epsilon = experiment.run.epsilon;
  for (const auto& app : experiment.apps) {
    AppResult a;
    a.name = app.name;
    a.kernel = std::string(model::to_string(app.kernel));
    a.weight = app.weight;
    a.tasks = app.tasks;
    r.apps.push_back(a);
  }
  return r;
}

nlohmann::json to_json(const RunResults& r) {
  nlohmann::json j;
  j["format_version"] = results_format_version;
  j["started_utc"] = r.started_utc;
  j["treefarm_version"] = r.treefarm_version;
  j["host"] = r.host;
  j["settings"] = r.settings;
  j["experiment_text"] = r.experiment_text;
  j["experiment"] = r.experiment;
  j["policy"] = r.policy;
  j["epsilon"] = r.epsilon;
  j["duration"] = r.duration;
  j["steady_end"] = r.steady_end;
  j["fair_throughput"] = r.fair_throughput;
  if (r.predicted_fair_throughput) {
    j["predicted_fair_throughput"] = *r.predicted_fair_throughput;
    j["fair_ratio"] = *r.predicted_fair_throughput > 0 ? r.fair_throughput / *r.predicted_fair_throughput : 0.0;
  }
  j["duplicates"] = r.duplicates;
  j["lost"] = r.lost;
  if (!r.policy_fallbacks.empty()) {
    std::uint64_t total = 0;
    for (const auto& [node, n] : r.policy_fallbacks) total += n;
    j["policy_fallbacks"] = {{"total", total}, {"nodes", r.policy_fallbacks}};
  }
  if (!r.failures.empty()) {
    j["failures"] = nlohmann::json::array();
    for (const auto& f : r.failures)
      j["failures"].push_back({{"app", r.apps.at(f.app).name}, {"id", f.id}, {"node", f.node}, {"error", f.error}});
  }
  j["ok"] = r.ok();
  j["apps"] = nlohmann::json::array();
  for (const auto& a : r.apps) {
    nlohmann::json ja{{"name", a.name}, {"kernel", a.kernel}, {"weight", a.weight}, {"tasks", a.tasks},
                      {"completed", a.completed}, {"wrong", a.wrong}, {"failed", a.failed},
                      {"throughput", a.throughput}};
    if (a.predicted) {
      ja["predicted"] = *a.predicted;
      ja["ratio"] = *a.predicted > 0 ? a.throughput / *a.predicted : 0.0;
    }
    j["apps"].push_back(ja);
  }
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : r.nodes)
    j["nodes"].push_back({{"name", n.name}, {"parent", n.parent.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.parent)},
                          {"cores", n.cores}, {"tasks_computed", n.tasks_computed}});
  j["tasks"] = nlohmann::json::array();
  for (const auto& t : r.tasks)
    j["tasks"].push_back({{"app", r.apps.at(t.app).name}, {"id", t.id}, {"node", t.node},
                          {"dispatched_at", t.dispatched_at}, {"started_at", t.started_at()},
                          {"completed_at", t.completed_at}, {"compute_seconds", t.compute_seconds},
                          {"queued_seconds", t.queued_seconds}});
  return j;
}

RunResults results_from_json(const nlohmann::json& j) {
  RunResults r;
  r.experiment = j.value("experiment", "");
  r.started_utc = j.value("started_utc", "");
  r.treefarm_version = j.value("treefarm_version", "");
  r.host = j.value("host", nlohmann::json());
  r.settings = j.value("settings", nlohmann::json());
  r.experiment_text = j.value("experiment_text", "");
  r.policy = j.value("policy", "");
  r.epsilon = j.value("epsilon", 0.1);
  r.duplicates = j.value("duplicates", std::uint64_t{0});
  if (const auto it = j.find("policy_fallbacks"); it != j.end() && it->contains("nodes"))
    for (const auto& [node, n] : it->at("nodes").items()) r.policy_fallbacks[node] = n.get<std::uint64_t>();
  std::map<std::string, std::uint32_t> app_index;
  for (const auto& ja : j.at("apps")) {
    AppResult a;
    a.name = ja.at("name").get<std::string>();
    a.kernel = ja.value("kernel", "");
    a.weight = ja.at("weight").get<double>();
    a.tasks = ja.at("tasks").get<std::uint64_t>();
    a.wrong = ja.value("wrong", std::uint64_t{0});
    a.failed = ja.value("failed", std::uint64_t{0});
    if (ja.contains("predicted")) a.predicted = ja["predicted"].get<double>();
    app_index[a.name] = static_cast<std::uint32_t>(r.apps.size());
    r.apps.push_back(a);
  }
  for (const auto& jn : j.at("nodes")) {
    NodeResult n;
    n.name = jn.at("name").get<std::string>();
    n.parent = jn.at("parent").is_null() ? "" : jn.at("parent").get<std::string>();
    n.cores = jn.value("cores", 0u);
    r.nodes.push_back(n);
  }
  for (const auto& jt : j.at("tasks")) {
    TaskRecord t;
    t.app = app_index.at(jt.at("app").get<std::string>());
    t.id = jt.at("id").get<std::uint64_t>();
    t.node = jt.at("node").get<std::string>();
    t.completed_at = jt.at("completed_at").get<double>();
    t.compute_seconds = jt.value("compute_seconds", 0.0);
    t.dispatched_at = jt.value("dispatched_at", -1.0);
    t.queued_seconds = jt.value("queued_seconds", 0.0);
    r.tasks.push_back(t);
  }
  if (j.contains("predicted_fair_throughput")) r.predicted_fair_throughput = j["predicted_fair_throughput"].get<double>();
  if (const auto it = j.find("failures"); it != j.end())
    for (const auto& jf : *it)
      r.failures.push_back(TaskFailure{app_index.at(jf.at("app").get<std::string>()), jf.at("id").get<std::uint64_t>(),
                                       jf.value("node", ""), jf.value("error", "")});
  r.compute();
  return r;
}

void print_table(std::ostream& out, const RunResults& r) {
  char line[256];
  const bool predicted = r.predicted_fair_throughput.has_value();
  std::snprintf(line, sizeof line, "%-16s %-7s %7s %8s %10s %6s %14s", "application", "kernel", "weight", "tasks",
                "completed", "wrong", "throughput/s");
  out << line;
  if (predicted) out << "   predicted/s   ratio";
  out << "\n";
  for (const auto& a : r.apps) {
    std::snprintf(line, sizeof line, "%-16s %-7s %7.3g %8llu %10llu %6llu %14.4f", a.name.c_str(), a.kernel.c_str(),
                  a.weight, static_cast<unsigned long long>(a.tasks), static_cast<unsigned long long>(a.completed),
                  static_cast<unsigned long long>(a.wrong + a.failed), a.throughput);
    out << line;
    if (a.predicted) {
      std::snprintf(line, sizeof line, " %13.4f %7.3f", *a.predicted, *a.predicted > 0 ? a.throughput / *a.predicted : 0.0);
      out << line;
    }
    out << "\n";
  }
  std::snprintf(line, sizeof line, "fair throughput min_k rho_k/w_k: %.4f tasks/s", r.fair_throughput);
  out << line;
  if (predicted) {
    std::snprintf(line, sizeof line, "   predicted %.4f   ratio %.3f", *r.predicted_fair_throughput,
                  *r.predicted_fair_throughput > 0 ? r.fair_throughput / *r.predicted_fair_throughput : 0.0);
    out << line;
  }
  out << "\n";
  std::snprintf(line, sizeof line, "duration %.2f s, steady window [%.2f, %.2f] s, lost %llu, duplicates dropped %llu",
                r.duration, r.epsilon * r.steady_end, (1 - r.epsilon) * r.steady_end,
                static_cast<unsigned long long>(r.lost), static_cast<unsigned long long>(r.duplicates));
  out << line << "\n";
  out << "nodes:";
  for (const auto& n : r.nodes) out << " " << n.name << "=" << n.tasks_computed;
  out << "\n";
  if (!r.policy_fallbacks.empty()) {
    std::uint64_t total = 0;
    std::string per;
    for (const auto& [node, n] : r.policy_fallbacks) {
      total += n;
      if (n > 0) per += " " + node + "=" + std::to_string(n);
    }
    out << "policy " << r.policy << " fell back " << total << " times (no planned choice feasible)"
        << (per.empty() ? "" : ":" + per) << "\n";
  }
  if (!r.failures.empty()) {  // issue 20: why, not only how many (all of them in results.json "failures")
    out << r.failures.size() << " tasks failed; the first:\n";
    for (std::size_t i = 0; i < r.failures.size() && i < 3; ++i) {
      const auto& f = r.failures[i];
      out << "  " << r.apps.at(f.app).name << " task " << f.id << " on " << f.node << ": "
          << f.error.substr(0, 200) << (f.error.size() > 200 ? "..." : "") << "\n";
    }
  }
}

}  // namespace treefarm::metrics
