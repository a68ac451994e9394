#include "tools/plot/ScalingPlot.hpp"

#include <sched.h>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

#include "tools/plot/Gnuplot.hpp"

namespace treefarm::plot {

namespace fs = std::filesystem;

std::string this_command() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()), out;
  std::stringstream words(all);
  for (std::string w; std::getline(words, w, '\0');)
    out += (out.empty() ? fs::path(w).filename().string() : " " + w);
  return out;
}

std::string machine_line() {
  std::string model = "unknown CPU";
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 1);
      model.erase(0, model.find_first_not_of(" \t"));
      break;
    }
  cpu_set_t set;
  const int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  double load = -1;
  std::ifstream("/proc/loadavg") >> load;
  std::ostringstream s;
  s << cpus << " CPUs (" << model << "), load average " << std::fixed << std::setprecision(1) << load;
  return s.str();
}

std::string write_scaling_plot(const fs::path& png, const ScalingCurve& curve) {
  if (png.extension() != ".png") return png.string() + ": the plot's file name must end in .png";
  fs::path dat = png, gp = png;
  dat.replace_extension(".dat");
  gp.replace_extension(".gp");
  {
    std::ofstream d(dat);
    d << std::setprecision(9);
    for (const auto& s : curve.series) {  // one gnuplot data block per series
      d << "# " << s.name << ": size cost\n";
      for (std::size_t i = 0; i < s.sizes.size() && i < s.costs.size(); ++i)
        if (s.sizes[i] > 0 && s.costs[i] > 0) d << s.sizes[i] << ' ' << s.costs[i] << '\n';
      d << "\n\n";
    }
    if (!d) return "cannot write " + dat.string();
  }
  std::ostringstream g;
  g << "set terminal pngcairo size 900,600 font ',10'\nset output " << quote(png.string()) << "\n"
    << "set title " << quote(curve.title) << "\nset logscale xy\nset grid\nset key top left\n"
    << "set xlabel " << quote(curve.size_label) << " noenhanced\nset ylabel " << quote(curve.cost_label) << " noenhanced\n"
    << "set bmargin 8\nset label 1 " << quote(curve.command) << " at screen 0.01, 0.06 noenhanced font ',9'\n"
    << "set label 2 " << quote(curve.machine) << " at screen 0.01, 0.025 noenhanced font ',9'\nplot ";
  for (std::size_t k = 0; k < curve.series.size(); ++k) {
    const auto& s = curve.series[k];
    std::ostringstream title;
    title << s.name;
    if (std::isfinite(s.exponent)) title << " (exponent " << std::fixed << std::setprecision(2) << s.exponent << ")";
    g << (k ? ", " : "") << quote(dat.string()) << " index " << k << " using 1:2 with linespoints pt 7 title "
      << quote(title.str()) << " noenhanced";
  }
  g << "\n";
  {
    std::ofstream f(gp);
    f << g.str();
    if (!f) return "cannot write " + gp.string();
  }
  return run_gnuplot(gp, fs::path(gp).replace_extension(".log"));
}

}  // namespace treefarm::plot
