// treefarm report (docs/commands.md).
#include <iostream>
#include <memory>

#include "runtime/cli/CliSupport.hpp"
#include "tools/Report.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

void add_report_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<tools::ReportOptions>();
  auto* report = app.add_subcommand(
      "report", "Print a run's result table again from its results.json and draw gantt.png and throughput.png;\n"
                "--html FILE also writes the run as one self-contained page (tree, throughput, task stream)");
  report->add_option("results", o->results, "results.json of a run (treefarm run --out DIR)")->required()->check(CLI::ExistingFile);
  report->add_option("--out", o->out_dir, "Directory for the PNGs and their gnuplot scripts (default: next to results.json)");
  report->add_flag_function("--no-plots", [o](std::int64_t n) { o->plots = n == 0; }, "The table only");
  report->add_option("--html", o->html, "Write the run as one self-contained HTML file (data and scripts inlined; opens with no network; docs/dashboard.md)");
  report->add_option("--bin", o->bin, "seconds per bin of the throughput plot (default: about 50 bins over the run)")
      ->check(cli_support::positive_seconds());
  out.push_back({report, [o] { return tools::report(*o, std::cout); }});
}

}  // namespace treefarm::cli
