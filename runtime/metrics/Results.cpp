#include "runtime/metrics/Results.hpp"

#include "runtime/metrics/TaskLog.hpp"
#include "runtime/model/Experiment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
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

void RunResults::for_each_task(const std::function<void(const TaskView&)>& f) const {
  for (const auto& t : tasks)
    f(TaskView{t.app, t.id, t.node, t.completed_at, t.compute_seconds, t.dispatched_at, t.queued_seconds});
  if (task_log)
    task_log->for_each([&](const PackedTaskRecord& p) {
      f(TaskView{p.app, p.index, task_log->name(p.node), p.completed_at, p.compute_seconds, p.dispatched_at,
                 static_cast<double>(p.queued_seconds)});
    });
}

std::uint64_t RunResults::task_count() const { return tasks.size() + (task_log ? task_log->size() : 0); }

void RunResults::compute() {
  // steady_throughput's estimate (papers/beaumont2006 §5.1.1) in two passes over the tasks,
  // so that a run of 10M tasks needs no vector of completion times.
  const std::size_t k_count = apps.size();
  std::vector<std::uint64_t> completed(k_count, 0);
  std::vector<double> last(k_count, 0.0);
  std::map<std::string, std::uint64_t, std::less<>> per_node;
  duration = 0;
  for_each_task([&](const TaskView& t) {
    if (t.app < k_count) {
      ++completed[t.app];
      last[t.app] = std::max(last[t.app], t.completed_at);
    }
    auto it = per_node.find(t.node);
    if (it == per_node.end()) it = per_node.emplace(std::string(t.node), 0).first;
    ++it->second;
    duration = std::max(duration, t.completed_at);
  });
  double t_end = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < k_count; ++k)
    if (apps[k].tasks > 0 && completed[k] >= apps[k].tasks) t_end = std::min(t_end, last[k]);
  if (!std::isfinite(t_end)) {  // nothing finished: use the last completion seen
    t_end = 0;
    for (std::size_t k = 0; k < k_count; ++k)
      if (completed[k] > 0) t_end = std::max(t_end, last[k]);
  }
  std::vector<double> rho(k_count, 0.0);
  const double lo = epsilon * t_end, hi = (1 - epsilon) * t_end, window = (1 - 2 * epsilon) * t_end;
  if (window > 0) {
    std::vector<std::uint64_t> n_hi(k_count, 0), n_lo(k_count, 0);
    for_each_task([&](const TaskView& t) {
      if (t.app >= k_count) return;
      if (t.completed_at <= hi) ++n_hi[t.app];
      if (t.completed_at <= lo) ++n_lo[t.app];
    });
    for (std::size_t k = 0; k < k_count; ++k) rho[k] = static_cast<double>(n_hi[k] - n_lo[k]) / window;
  }
  for (std::size_t k = 0; k < k_count; ++k) apps[k].completed = completed[k];
  steady_end = t_end;
  lost = 0;
  fair_throughput = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < k_count; ++k) {
    apps[k].throughput = rho[k];
    lost += apps[k].tasks - std::min(apps[k].tasks, apps[k].completed);
    fair_throughput = std::min(fair_throughput, rho[k] / apps[k].weight);
  }
  if (apps.empty()) fair_throughput = 0;
  for (auto& n : nodes) {
    const auto it = per_node.find(n.name);
    n.tasks_computed = it == per_node.end() ? 0 : it->second;
  }
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

nlohmann::json to_json(const RunResults& r, bool with_tasks) {
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
    if (!r.prediction_source.empty()) j["prediction_source"] = r.prediction_source;
  }
  if (r.predicted_fair_interval) {
    j["fair_throughput_interval"] = {{"low", r.predicted_fair_interval->low}, {"high", r.predicted_fair_interval->high}};
    j["fair_inside_interval"] = r.fair_throughput >= r.predicted_fair_interval->low &&
                                r.fair_throughput <= r.predicted_fair_interval->high;
  }
  if (const auto& e = r.estimate_interval) {
    j["fair_throughput_interval_estimates"] = {{"at", e->at}, {"low", e->low}, {"median", e->median}, {"high", e->high}};
    j["fair_inside_interval_estimates"] = r.fair_throughput >= e->low && r.fair_throughput <= e->high;
  }
  if (r.predicted_fair_a_posteriori) {
    j["fair_predicted_a_posteriori"] = *r.predicted_fair_a_posteriori;
    j["fair_ratio_a_posteriori"] =
        *r.predicted_fair_a_posteriori > 0 ? r.fair_throughput / *r.predicted_fair_a_posteriori : 0.0;
  }
  if (!r.a_posteriori.is_null()) j["a_posteriori"] = r.a_posteriori;
  j["replans"] = r.replans;
  if (!r.plan.is_null()) j["plan"] = r.plan;
  j["duplicates"] = r.duplicates;
  j["lost"] = r.lost;
  if (!r.policy_fallbacks.empty()) {
    std::uint64_t total = 0;
    for (const auto& [node, n] : r.policy_fallbacks) total += n;
    j["policy_fallbacks"] = {{"total", total}, {"nodes", r.policy_fallbacks}};
  }
  if (!r.failures.empty()) {
    j["failures"] = nlohmann::json::array();
    for (const auto& f : r.failures) {
      j["failures"].push_back({{"app", r.apps.at(f.app).name}, {"id", f.id}, {"node", f.node}, {"error", f.error},
                               {"attempts", f.attempts}});
      if (!f.input.empty()) j["failures"].back()["input"] = f.input;
    }
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
  if (!with_tasks) return j;
  j["tasks"] = nlohmann::json::array();
  r.for_each_task([&](const TaskView& t) {
    j["tasks"].push_back({{"app", r.apps.at(t.app).name}, {"id", t.id}, {"node", t.node},
                          {"dispatched_at", t.dispatched_at}, {"started_at", t.completed_at - t.compute_seconds},
                          {"completed_at", t.completed_at}, {"compute_seconds", t.compute_seconds},
                          {"queued_seconds", t.queued_seconds}});
  });
  return j;
}

namespace {

/// A JSON number as nlohmann writes it (shortest round trip; null when not finite), so that
/// the streamed file reads back to the same values.
void append_number(fmt::memory_buffer& out, double v) {
  if (!std::isfinite(v)) {
    fmt::format_to(std::back_inserter(out), "null");
    return;
  }
  char buf[32];
  const auto end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

}  // namespace

void write_results_json(const std::function<void(std::string_view)>& sink, const RunResults& r,
                        const std::function<nlohmann::json()>& trailer) {
  std::string head = to_json(r, false).dump(1);
  // "{\n ... \n}": the task list and the trailer go before the closing brace.
  head.resize(head.size() - 2);
  head += ",\n \"tasks\": [";
  sink(head);
  std::vector<std::string> app_names, node_names;  // JSON-quoted once
  for (const auto& a : r.apps) app_names.push_back(nlohmann::json(a.name).dump());
  std::map<std::string, std::string, std::less<>> quoted_nodes;
  fmt::memory_buffer buf;
  bool first = true;
  r.for_each_task([&](const TaskView& t) {
    auto q = quoted_nodes.find(t.node);
    if (q == quoted_nodes.end()) q = quoted_nodes.emplace(std::string(t.node), nlohmann::json(t.node).dump()).first;
    buf.append(std::string_view(first ? "\n  {\"app\": " : ",\n  {\"app\": "));
    first = false;
    buf.append(std::string_view(app_names.at(t.app)));
    fmt::format_to(std::back_inserter(buf), ", \"id\": {}, \"node\": ", t.id);
    buf.append(std::string_view(q->second));
    buf.append(std::string_view(", \"dispatched_at\": "));
    append_number(buf, t.dispatched_at);
    buf.append(std::string_view(", \"started_at\": "));
    append_number(buf, t.completed_at - t.compute_seconds);
    buf.append(std::string_view(", \"completed_at\": "));
    append_number(buf, t.completed_at);
    buf.append(std::string_view(", \"compute_seconds\": "));
    append_number(buf, t.compute_seconds);
    buf.append(std::string_view(", \"queued_seconds\": "));
    append_number(buf, t.queued_seconds);
    buf.push_back('}');
    if (buf.size() >= (1u << 20)) {
      sink(std::string_view(buf.data(), buf.size()));
      buf.clear();
    }
  });
  buf.append(std::string_view(first ? "]" : "\n ]"));
  sink(std::string_view(buf.data(), buf.size()));
  std::string tail;
  if (trailer) {
    const nlohmann::json extra = trailer();
    for (const auto& [key, value] : extra.items()) tail += ",\n " + nlohmann::json(key).dump() + ": " + value.dump();
  }
  tail += "\n}\n";
  sink(tail);
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
  r.cancelled = j.value("cancelled", false);
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
  r.prediction_source = j.value("prediction_source", std::string());
  if (const auto it = j.find("fair_throughput_interval"); it != j.end())
    r.predicted_fair_interval = RunResults::Interval{it->at("low").get<double>(), it->at("high").get<double>()};
  if (const auto it = j.find("fair_throughput_interval_estimates"); it != j.end())
    r.estimate_interval = RunResults::EstimateInterval{it->at("at").get<double>(), it->at("low").get<double>(),
                                                       it->at("median").get<double>(), it->at("high").get<double>()};
  r.plan = j.value("plan", nlohmann::json());
  if (j.contains("fair_predicted_a_posteriori"))
    r.predicted_fair_a_posteriori = j["fair_predicted_a_posteriori"].get<double>();
  r.replans = j.value("replans", nlohmann::json::array());
  r.a_posteriori = j.value("a_posteriori", nlohmann::json());
  if (const auto it = j.find("failures"); it != j.end())
    for (const auto& jf : *it)
      r.failures.push_back(TaskFailure{app_index.at(jf.at("app").get<std::string>()), jf.at("id").get<std::uint64_t>(),
                                       jf.value("node", ""), jf.value("error", ""), jf.value("input", ""),
                                       jf.value("attempts", std::uint32_t{1})});
  r.compute();
  return r;
}

void print_table(std::ostream& out, const RunResults& r) {
  char line[256];
  const bool predicted = r.predicted_fair_throughput.has_value();
  std::snprintf(line, sizeof line, "%-16s %-7s %7s %8s %10s %6s %6s %14s", "application", "kernel", "weight", "tasks",
                "completed", "wrong", "failed", "throughput/s");
  out << line;
  if (predicted) out << "   predicted/s   ratio";
  out << "\n";
  for (const auto& a : r.apps) {
    std::snprintf(line, sizeof line, "%-16s %-7s %7.3g %8llu %10llu %6llu %6llu %14.4f", a.name.c_str(), a.kernel.c_str(),
                  a.weight, static_cast<unsigned long long>(a.tasks), static_cast<unsigned long long>(a.completed),
                  static_cast<unsigned long long>(a.wrong), static_cast<unsigned long long>(a.failed), a.throughput);
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
    if (r.prediction_source.rfind("estimates", 0) == 0) out << "   (LP over the run's own " << r.prediction_source << ")";
  }
  out << "\n";
  if (predicted && r.predicted_fair_interval && *r.predicted_fair_throughput > 0) {
    const auto& i = *r.predicted_fair_interval;
    const double p = *r.predicted_fair_throughput;
    const bool wide = i.low < 0.9 * p || i.high > 1.1 * p;
    const char* where = r.fair_throughput < i.low ? "measured below it" : r.fair_throughput > i.high ? "measured above it" : "measured inside";
    std::snprintf(line, sizeof line, "prediction interval (the calibration's spread): %.4f to %.4f tasks/s (%+.1f %% to %+.1f %%%s): %s",
                  i.low, i.high, 100 * (i.low / p - 1), 100 * (i.high / p - 1), wide ? ", wider than +-10 %" : "", where);
    out << line << "\n";
  }
  if (const auto& e = r.estimate_interval; e && e->median > 0) {
    const char* where = r.fair_throughput < e->low ? "measured below it" : r.fair_throughput > e->high ? "measured above it" : "measured inside";
    std::snprintf(line, sizeof line, "prediction interval from this run's estimates at %.1f s: %.4f to %.4f tasks/s (%+.1f %% to %+.1f %%): %s",
                  e->at, e->low, e->high, 100 * (e->low / e->median - 1), 100 * (e->high / e->median - 1), where);
    out << line << "\n";
  }
  if (r.predicted_fair_a_posteriori) {
    std::snprintf(line, sizeof line, "a posteriori (LP over the rates this run observed): %.4f tasks/s   ratio %.3f",
                  *r.predicted_fair_a_posteriori,
                  *r.predicted_fair_a_posteriori > 0 ? r.fair_throughput / *r.predicted_fair_a_posteriori : 0.0);
    out << line << "\n";
  } else if (r.a_posteriori.is_object() && r.a_posteriori.contains("reason") && r.a_posteriori["reason"].is_string()) {
    out << "a posteriori: none (" << r.a_posteriori["reason"].get<std::string>() << ")\n";
  }
  if (!r.replans.empty()) out << "re-plans: " << r.replans.size() << "\n";
  for (const auto& p : r.replans) {
    std::snprintf(line, sizeof line, "  at %.1f s: %s of %s moved %.4g -> %.4g s; optimum %.4f -> %.4f tasks/s",
                  p.value("at", 0.0), p.value("figure", std::string()).c_str(), p.value("node", std::string()).c_str(),
                  p.value("old_value", 0.0), p.value("new_value", 0.0), p.value("old_optimum", 0.0),
                  p.value("new_optimum", 0.0));
    out << line << "\n";
  }
  std::snprintf(line, sizeof line, "duration %.2f s, steady window [%.2f, %.2f] s, %s %llu, duplicates dropped %llu",
                r.duration, r.epsilon * r.steady_end, (1 - r.epsilon) * r.steady_end,
                r.cancelled ? "cancelled: not run" : "lost", static_cast<unsigned long long>(r.lost),
                static_cast<unsigned long long>(r.duplicates));
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
  if (!r.failures.empty()) {  // why, not only how many (all of them in results.json "failures")
    constexpr std::size_t shown = 50;
    auto failures = r.failures;
    std::sort(failures.begin(), failures.end(),
              [](const TaskFailure& a, const TaskFailure& b) { return std::tie(a.app, a.id) < std::tie(b.app, b.id); });
    out << failures.size() << " tasks failed" << (failures.size() > shown ? "; the first " + std::to_string(shown) : std::string())
        << ":\n";
    for (std::size_t i = 0; i < failures.size() && i < shown; ++i) {
      const auto& f = failures[i];
      out << "  " << r.apps.at(f.app).name << " task " << f.id;
      if (!f.input.empty()) out << " (" << f.input.substr(0, 120) << (f.input.size() > 120 ? "..." : "") << ")";
      out << " on " << f.node << (f.attempts > 1 ? ", after " + std::to_string(f.attempts) + " attempts" : std::string())
          << ": " << f.error.substr(0, 200) << (f.error.size() > 200 ? "..." : "") << "\n";
    }
    out << "every failure is in results.json (\"failures\"); treefarm resubmit OUT --failed runs only these again\n";
  }
}

}  // namespace treefarm::metrics
