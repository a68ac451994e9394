#include "tools/Report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/cli/EarlyChecks.hpp"
#include "runtime/dashboard/Page.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/metrics/Results.hpp"
#include "runtime/model/Experiment.hpp"
#include "runtime/node/ExitCode.hpp"
#include "tools/plot/Gnuplot.hpp"

namespace treefarm::tools {

namespace fs = std::filesystem;

using plot::quote;

double auto_bin_seconds(double duration) { return dashboard::report_bin_seconds(duration); }

int report(const ReportOptions& options, std::ostream& out) {
  if (!options.out_dir.empty()) cli_support::prepare_out_folder("--out", options.out_dir);  // before any output
  if (!options.html.empty()) cli_support::check_out_file("--html", options.html);
  std::ifstream f(options.results);
  if (!f) throw model::FileError(options.results, 0, "", "cannot read the file");
  metrics::RunResults r;
  try {
    r = metrics::results_from_json(nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw model::FileError(options.results, 0, "", std::string("not a treefarm results.json: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw model::FileError(options.results, 0, "", std::string("not a treefarm results.json: ") + e.what());
  }
  if (!r.started_utc.empty() || !r.treefarm_version.empty())
    out << "run of " << r.experiment << " started " << r.started_utc << " (treefarm " << r.treefarm_version
        << ", policy " << r.policy << ")\n";
  metrics::print_table(out, r);
  const int rc = r.ok() ? node::exit_ok : node::exit_wrong_results;
  if (!options.html.empty()) {
    const std::string page = dashboard::report_html(dashboard::report_view(r, options.bin > 0 ? options.bin : auto_bin_seconds(r.duration)));
    metrics::write_file_atomically(options.html, page);
    out << "wrote " << options.html << " (" << page.size() << " bytes, self-contained)\n";
  }
  if (!options.plots) return rc;
  if (!plot::gnuplot_available()) {
    out << "(gnuplot not found: no plots)\n";
    return rc;
  }
  const fs::path dir = options.out_dir.empty() ? fs::path(options.results).parent_path() : fs::path(options.out_dir);
  const auto path = [&](const std::string& name) { return (dir.empty() ? fs::path(name) : dir / name).string(); };

  // Gantt chart: rows are nodes in results order.
  std::map<std::string, std::size_t> row;
  for (const auto& n : r.nodes) row.emplace(n.name, row.size());
  for (const auto& t : r.tasks) row.emplace(t.node, row.size());
  {
    std::ofstream wait(path("gantt-wait.dat")), run(path("gantt-run.dat"));
    for (const auto& t : r.tasks) {
      const double y = static_cast<double>(row.at(t.node));
      const double start = std::max(0.0, t.started_at());
      if (t.dispatched_at >= 0 && start > t.dispatched_at) wait << t.dispatched_at << " " << y << " " << start - t.dispatched_at << "\n";
      run << start << " " << y << " " << t.completed_at - start << " " << t.app + 1 << "\n";
    }
    std::ofstream gp(path("gantt.gp"));
    gp << "set terminal pngcairo size 1200," << 150 + 40 * row.size() << "\nset output " << quote(path("gantt.png"))
       << "\nset title 'Tasks per node: dispatch to start (grey), start to completion (colour = application)'\n"
       << "set xlabel 'seconds since the start'\nset yrange [-0.5:" << static_cast<double>(row.size()) - 0.5
       << "]\nset ytics (";
    bool first = true;
    for (const auto& [name, y] : row) {
      gp << (first ? "" : ", ") << quote(name) << " " << y;
      first = false;
    }
    gp << ")\nset grid xtics\nset key outside right\n"
       << "plot " << quote(path("gantt-wait.dat")) << " using 1:2:3:(0) with vectors nohead lw 2 lc rgb '#bbbbbb' title 'waiting'";
    for (std::size_t k = 0; k < r.apps.size(); ++k)
      gp << ", " << quote(path("gantt-run.dat")) << " using 1:($4 == " << k + 1 << " ? $2 : 1/0):3:(0) with vectors nohead lw 8 lc "
         << k + 1 << " title " << quote(r.apps[k].name);
    gp << "\n";
  }
  // Throughput over time beside the prediction.
  {
    const double bin = options.bin > 0 ? options.bin : auto_bin_seconds(r.duration);
    const std::size_t bins = static_cast<std::size_t>(std::ceil(std::max(r.duration, bin) / bin));
    std::vector<std::vector<double>> counts(r.apps.size(), std::vector<double>(bins, 0.0));
    for (const auto& t : r.tasks) {
      const auto b = std::min(bins - 1, static_cast<std::size_t>(std::max(0.0, t.completed_at) / bin));
      counts[t.app][b] += 1;
    }
    std::ofstream data(path("throughput.dat"));
    for (std::size_t b = 0; b < bins; ++b) {
      data << (static_cast<double>(b) + 0.5) * bin;
      for (std::size_t k = 0; k < r.apps.size(); ++k) data << " " << counts[k][b] / bin;
      data << "\n";
    }
    std::ofstream gp(path("throughput.gp"));
    gp << "set terminal pngcairo dashed size 1000,550\nset output " << quote(path("throughput.png"))
       << "\nset title 'Throughput over time (" << bin << " s bins); dashed: LP prediction; dotted: steady window'\n"
       << "set xlabel 'seconds since the start'\nset ylabel 'tasks/s'\nset yrange [0:*]\nset grid\nset key outside right\n";
    if (r.steady_end > 0)
      gp << "set arrow from " << r.epsilon * r.steady_end << ", graph 0 to " << r.epsilon * r.steady_end
         << ", graph 1 nohead dt 3\nset arrow from " << (1 - r.epsilon) * r.steady_end << ", graph 0 to "
         << (1 - r.epsilon) * r.steady_end << ", graph 1 nohead dt 3\n";
    gp << "plot ";
    for (std::size_t k = 0; k < r.apps.size(); ++k) {
      gp << (k ? ", " : "") << quote(path("throughput.dat")) << " using 1:" << k + 2 << " with steps lw 2 lc " << k + 1
         << " title " << quote(r.apps[k].name + " measured");
      if (r.apps[k].predicted)
        gp << ", " << *r.apps[k].predicted << " with lines dt 2 lw 2 lc " << k + 1 << " title "
           << quote(r.apps[k].name + " LP");
    }
    gp << "\n";
  }
  // The fair throughput over time beside the LP optimum as it was re-planned
  // (docs/live-model.md): a step at each re-plan.
  const double first_optimum = !r.replans.empty() ? r.replans[0].value("old_optimum", 0.0)
                                                   : r.predicted_fair_throughput.value_or(0.0);
  const bool optimum = first_optimum > 0;
  if (optimum) {
    const double bin = options.bin > 0 ? options.bin : 1.0;
    const std::size_t bins = static_cast<std::size_t>(std::ceil(std::max(r.duration, bin) / bin));
    std::vector<std::vector<double>> counts(r.apps.size(), std::vector<double>(bins, 0.0));
    r.for_each_task([&](const metrics::TaskView& t) {
      if (t.app < counts.size()) counts[t.app][std::min(bins - 1, static_cast<std::size_t>(std::max(0.0, t.completed_at) / bin))] += 1;
    });
    std::ofstream data(path("optimum.dat"));
    for (std::size_t b = 0; b < bins; ++b) {
      double fair = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < r.apps.size(); ++k) fair = std::min(fair, counts[k][b] / bin / r.apps[k].weight);
      data << (static_cast<double>(b) + 0.5) * bin << " " << (r.apps.empty() ? 0.0 : fair) << "\n";
    }
    std::ofstream steps(path("optimum-lp.dat"));
    steps << 0 << " " << first_optimum << "\n";
    double last = first_optimum;
    for (const auto& p : r.replans) {
      steps << p.value("at", 0.0) << " " << last << "\n" << p.value("at", 0.0) << " " << p.value("new_optimum", 0.0) << "\n";
      last = p.value("new_optimum", 0.0);
    }
    steps << std::max(r.duration, bin) << " " << last << "\n";
    std::ofstream gp(path("optimum.gp"));
    gp << "set terminal pngcairo dashed size 1000,550\nset output " << quote(path("optimum.png"))
       << "\nset title 'Fair throughput min_k rho_k/w_k (" << bin << " s bins) beside the LP optimum; dotted: re-plans'\n"
       << "set xlabel 'seconds since the start'\nset ylabel 'tasks/s per unit of weight'\nset yrange [0:*]\nset grid\n"
       << "set key outside right\n";
    for (const auto& p : r.replans)
      gp << "set arrow from " << p.value("at", 0.0) << ", graph 0 to " << p.value("at", 0.0) << ", graph 1 nohead dt 3\n";
    gp << "plot " << quote(path("optimum.dat")) << " using 1:2 with steps lw 2 title 'measured', "
       << quote(path("optimum-lp.dat")) << " using 1:2 with lines dt 2 lw 2 title 'LP optimum'\n";
  }
  for (const char* name : {"gantt", "throughput", "optimum"}) {
    if (std::string_view(name) == "optimum" && !optimum) continue;
    const std::string why_not = plot::run_gnuplot(path(std::string(name) + ".gp"));
    out << (why_not.empty() ? "wrote " + path(std::string(name) + ".png") : why_not) << "\n";
  }
  return rc;
}

}  // namespace treefarm::tools
