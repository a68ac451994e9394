#pragma once
/// @file Page.hpp
/// The dashboard's page, compiled in (runtime/dashboard/page/, Chart.js 3 from Debian's
/// libjs-chart.js), and the one-file HTML report of a finished run (`treefarm report
/// RESULTS.json --html FILE`, docs/dashboard.md): the same page with its style, scripts
/// and data inlined, which opens from a file with no network.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/metrics/Results.hpp"

namespace treefarm::dashboard {

std::string_view page_html();
std::string_view page_js();
std::string_view page_css();
std::string_view chart_js();

/// Tasks a report's task stream shows at most (evenly spread over the run beyond that).
inline constexpr std::size_t report_tasks_max = 20000;

/// The dashboard's view (docs/dashboard.md) of a finished run: its tree with each node's
/// tasks and rate beside the plan's, the applications, the throughput over time in
/// `bin`-second bins (tasks/s), the task stream, and a "report" object (experiment,
/// start, duration, fair throughput and its prediction, steady window).
nlohmann::json report_view(const metrics::RunResults& results, double bin = 1.0);

/// The one-file page of `view`: style, Chart.js, the page's script and the data inlined
/// (nothing is fetched from anywhere).
std::string report_html(const nlohmann::json& view);

/// seconds per throughput bin for a run of `duration` seconds: about 50 bins of 1, 2 or 5
/// times a power of ten (1 s for an unknown duration).
double report_bin_seconds(double duration);

/// report_view() of the results.json at `path`, in report_bin_seconds() bins; nullopt
/// when the file is missing or is not a treefarm results.json.
std::optional<nlohmann::json> report_view_of_file(const std::string& path);

/// A finished run's page as the live dashboard serves it (GET /jobs/ID/report.html): the
/// page with its style and scripts from the server's root and its data from the script at
/// `data_path` (report_data_js): nothing inline, as the server's Content-Security-Policy asks.
std::string served_report_html(const std::string& data_path);

/// The script that hands `view` to the page (window.TREEFARM_REPORT).
std::string report_data_js(const nlohmann::json& view);

}  // namespace treefarm::dashboard
