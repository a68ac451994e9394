#include "runtime/dashboard/Page.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>

#include "runtime/dashboard/DashboardAssets.hpp"
#include "runtime/dashboard/Feed.hpp"

namespace treefarm::dashboard {

using nlohmann::json;

namespace {
std::string_view bytes_of(const unsigned char* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Text safe inside <script>...</script> and <style>...</style>: no "</script" or
/// "</style" that would close the element and no "<!--" (JSON, JavaScript strings and CSS
/// read "<\/" and "<\!--" alike; Chart.js has neither sequence).
std::string inline_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto starts = [&](std::size_t i, std::string_view what) {
    if (i + what.size() > text.size()) return false;
    for (std::size_t j = 0; j < what.size(); ++j)
      if (std::tolower(static_cast<unsigned char>(text[i + j])) != what[j]) return false;
    return true;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (starts(i, "</script") || starts(i, "</style") || starts(i, "<!--")) out += '\\';
  }
  return out;
}

void replace_once(std::string& text, std::string_view what, const std::string& with) {
  const auto at = text.find(what);
  if (at == std::string::npos) throw std::logic_error("dashboard page: marker '" + std::string(what) + "' missing");
  text.replace(at, what.size(), with);
}

double rounded(double seconds) { return std::round(seconds * 1e6) / 1e6; }
}  // namespace

std::string_view page_html() { return bytes_of(assets::page_html, assets::page_html_size); }
std::string_view page_js() { return bytes_of(assets::page_js, assets::page_js_size); }
std::string_view page_css() { return bytes_of(assets::page_css, assets::page_css_size); }
std::string_view chart_js() { return bytes_of(assets::chart_js, assets::chart_js_size); }

json report_view(const metrics::RunResults& r, double bin) {
  if (!(bin > 0)) throw std::invalid_argument("report: the throughput bin must be > 0 seconds");
  const double duration = std::max(r.duration, 1e-9);
  // Bins of at least `bin` seconds, at most 2000 of them.
  const double width = std::max(bin, duration / 2000);
  const auto bins = static_cast<std::size_t>(std::ceil(duration / width));
  std::vector<std::vector<double>> counts(r.apps.size(), std::vector<double>(bins, 0.0));
  std::map<std::string, std::uint64_t, std::less<>> done_by_node;
  const std::uint64_t total = r.task_count();
  const std::uint64_t every = std::max<std::uint64_t>(1, (total + report_tasks_max - 1) / report_tasks_max);
  std::map<std::string, std::size_t, std::less<>> node_index;
  json tree = json::array();
  for (const auto& n : r.nodes) {
    node_index.emplace(n.name, tree.size());
    tree.push_back({{"name", n.name}, {"parent", n.parent}, {"cores", n.cores}, {"done", std::uint64_t{0}},
                    {"state", "finished"}});
  }
  json rows = json::array();
  std::uint64_t seen = 0;
  r.for_each_task([&](const metrics::TaskView& t) {
    if (t.app < counts.size()) {
      const auto b = std::min(bins - 1, static_cast<std::size_t>(std::max(0.0, t.completed_at) / width));
      counts[t.app][b] += 1;
    }
    auto it = node_index.find(t.node);
    if (it == node_index.end()) {  // a node results.json does not list (older files)
      it = node_index.emplace(std::string(t.node), tree.size()).first;
      tree.push_back({{"name", t.node}, {"parent", ""}, {"cores", 0}, {"done", std::uint64_t{0}}, {"state", "finished"}});
    }
    tree[it->second]["done"] = tree[it->second]["done"].get<std::uint64_t>() + 1;
    if (seen++ % every == 0)
      rows.push_back({it->second, t.app, rounded(t.completed_at - t.compute_seconds), rounded(t.completed_at)});
  });
  for (auto& n : tree) n["rate"] = static_cast<double>(n["done"].get<std::uint64_t>()) / duration;
  add_plan(tree, r.plan);
  json apps = json::array(), app_names = json::array();
  for (const auto& a : r.apps) {
    apps.push_back({{"name", a.name}, {"kernel", a.kernel}, {"weight", a.weight}, {"tasks", a.tasks},
                    {"done", a.completed}, {"wrong", a.wrong + a.failed}, {"throughput", a.throughput},
                    {"predicted", a.predicted ? json(*a.predicted) : json()}});
    app_names.push_back(a.name);
  }
  json t = json::array(), history = json::object();
  for (std::size_t b = 0; b < bins; ++b) t.push_back(rounded(std::min(duration, static_cast<double>(b + 1) * width)));
  for (std::size_t k = 0; k < r.apps.size(); ++k) {
    json h = json::array();
    for (std::size_t b = 0; b < bins; ++b) h.push_back(rounded(counts[k][b] / width));
    history[r.apps[k].name] = h;
  }
  json names = json::array();
  for (const auto& n : tree) names.push_back(n["name"]);
  json report{{"experiment", r.experiment},
              {"started_utc", r.started_utc},
              {"treefarm_version", r.treefarm_version},
              {"policy", r.policy},
              {"duration", r.duration},
              {"epsilon", r.epsilon},
              {"steady_end", r.steady_end},
              {"fair_throughput", r.fair_throughput},
              {"predicted_fair_throughput", r.predicted_fair_throughput ? json(*r.predicted_fair_throughput) : json()},
              {"tasks_recorded", total},
              {"tasks_shown", rows.size()},
              {"lost", r.lost},
              {"duplicates", r.duplicates},
              {"ok", r.ok()}};
  return {{"serving", nullptr},
          {"tree", tree},
          {"waiting", json::array()},
          {"running", {{"elapsed", r.duration}, {"apps", apps}, {"nodes", tree}}},
          {"queue", json::array()},
          {"finished", json::array()},
          {"plan", r.plan},
          {"history", {{"t", t}, {"apps", history}}},
          {"tasks", {{"nodes", names}, {"apps", app_names}, {"rows", rows}}},
          {"report", report}};
}

std::string report_html(const json& view) {
  std::string html(page_html());
  replace_once(html, "<link rel=\"stylesheet\" href=\"dashboard.css\">",
               "<style>\n" + inline_safe(page_css()) + "\n</style>");
  replace_once(html, "<script src=\"chart.js\"></script>", "<script>\n" + inline_safe(chart_js()) + "\n</script>");
  replace_once(html, "<script src=\"dashboard.js\"></script>",
               "<script>\nwindow.TREEFARM_REPORT = " + inline_safe(view.dump()) + ";\n</script>\n<script>\n" +
                   inline_safe(page_js()) + "\n</script>");
  return html;
}

double report_bin_seconds(double duration) {
  if (!(duration > 0) || !std::isfinite(duration)) return 1.0;
  const double want = duration / 50;
  const double decade = std::pow(10.0, std::floor(std::log10(want)));
  for (const double step : {1.0, 2.0, 5.0})
    if (step * decade >= want) return step * decade;
  return 10 * decade;
}

std::optional<json> report_view_of_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  try {
    const metrics::RunResults r = metrics::results_from_json(json::parse(f));
    return report_view(r, report_bin_seconds(r.duration));
  } catch (const std::exception&) {  // not a results.json (json or out_of_range errors)
    return std::nullopt;
  }
}

std::string served_report_html(const std::string& data_path) {
  std::string html(page_html());
  replace_once(html, "<link rel=\"stylesheet\" href=\"dashboard.css\">", "<link rel=\"stylesheet\" href=\"/dashboard.css\">");
  replace_once(html, "<script src=\"chart.js\"></script>", "<script src=\"/chart.js\"></script>");
  replace_once(html, "<script src=\"dashboard.js\"></script>",
               "<script src=\"" + data_path + "\"></script>\n<script src=\"/dashboard.js\"></script>");
  return html;
}

std::string report_data_js(const json& view) { return "window.TREEFARM_REPORT = " + inline_safe(view.dump()) + ";\n"; }

}  // namespace treefarm::dashboard
