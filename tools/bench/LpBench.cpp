#include "tools/bench/LpBench.hpp"

#include <chrono>
#include <ctime>
#include <iomanip>
#include <ostream>

#include "runtime/lp/RandomTree.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "tools/bench/FittedExponent.hpp"
#include "tools/bench/Scaling.hpp"
#include "tools/plot/ScalingPlot.hpp"

namespace treefarm::bench {

void bench_lp(std::ostream& out) { bench_lp(out, {100, 1000, 10000}); }

void bench_lp(std::ostream& out, const std::vector<std::size_t>& sizes, const std::string& plot_png) {
  std::vector<plot::Series> curves;
  out << std::left << std::setw(8) << "nodes" << std::setw(6) << "apps" << std::setw(12) << "comm"
      << std::setw(11) << "variables" << std::setw(9) << "rows" << std::setw(12) << "generate_s"
      << std::setw(10) << "build_s" << std::setw(10) << "solve_s" << std::setw(8) << "cpu_s" << std::setw(8) << "load"
      << "fair_throughput\n";
  for (const model::CommModel comm : {model::CommModel::one_port, model::CommModel::multi_port}) {
    std::vector<double> xs, seconds;
    for (const std::size_t nodes : sizes) {
      const auto t0 = std::chrono::steady_clock::now();
      const std::clock_t c0 = std::clock();  // CPU seconds: on a shared machine the wall time is the load's
      const lp::PlatformModel m = lp::random_tree(nodes, 10, 42 + nodes, comm);
      const double generate =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const lp::Solution s = lp::solve(m);
      const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
      out << std::setw(8) << nodes << std::setw(6) << m.apps.size() << std::setw(12)
          << (comm == model::CommModel::one_port ? "one-port" : "multi-port") << std::setw(11)
          << s.lp_variables << std::setw(9) << s.lp_rows << std::setw(12) << std::setprecision(3)
          << generate << std::setw(10) << s.build_seconds << std::setw(10) << s.solve_seconds
          << std::setw(8) << cpu << std::setw(8) << std::setprecision(3) << load_average() << std::setprecision(12)
          << s.fair_throughput << '\n'
          << std::flush;
      xs.push_back(static_cast<double>(nodes));
      seconds.push_back(generate + s.build_seconds + s.solve_seconds);
    }
    if (xs.size() >= 2)
      out << (comm == model::CommModel::one_port ? "one-port" : "multi-port")
          << ": fitted exponent of generate + build + solve seconds against nodes " << std::setprecision(3)
          << bench::fitted_exponent(xs, seconds) << '\n' << std::flush;
    if (xs.size() >= 2)
      curves.push_back({comm == model::CommModel::one_port ? "one-port" : "multi-port", xs, seconds, bench::fitted_exponent(xs, seconds)});
  }
  if (!plot_png.empty() && !curves.empty()) {
    const std::string why_not = plot::write_scaling_plot(
        plot_png, {"treefarm bench lp: random trees, 10 applications", "nodes", "seconds (generate + build + solve)", curves,
                   plot::this_command(), plot::machine_line()});
    out << (why_not.empty() ? "wrote " + plot_png : why_not) << '\n';
  }
}

}  // namespace treefarm::bench
