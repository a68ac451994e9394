#include "lab/lee2010/LeeCampaign.hpp"
#include "tools/plot/Gnuplot.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace treefarm::lab::lee2010 {

namespace {

struct Point {
  std::string sweep;  // "load" or "ratio"
  double load = 0, ratio = 0;
  LeeScheme scheme = LeeScheme::vanilla;
  double mean_wait = 0, p95_wait = 0, tau = 0, messages_per_job = 0, migrations_per_job = 0;
};

Point average(const LeeCampaignOptions& o, const std::string& sweep, double load, double ratio, LeeScheme scheme) {
  Point p{sweep, load, ratio, scheme};
  for (std::uint32_t k = 0; k < o.seeds; ++k) {
    LeeStudyOptions so = o.base;
    so.load = load;
    so.constraint_ratio = ratio;
    so.seed = o.base.seed + k;
    const LeeResult r = run_lee_study(so, scheme);
    const double jobs = static_cast<double>(so.jobs - r.unplaceable);
    p.mean_wait += r.mean_wait / o.seeds;
    p.p95_wait += r.p95_wait / o.seeds;
    p.tau += r.mean_interarrival / o.seeds;
    p.messages_per_job += static_cast<double>(r.messages) / jobs / o.seeds;
    p.migrations_per_job += static_cast<double>(r.migrations) / jobs / o.seeds;
  }
  return p;
}

void table(std::ostream& out, const LeeCampaignOptions& o, const std::vector<Point>& pts, const std::string& sweep,
           bool messages) {
  const bool by_load = sweep == "load";
  out << "| scheme |";
  for (double x : by_load ? o.loads : o.ratios) out << " " << (by_load ? "load " : "ratio ") << x << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < (by_load ? o.loads : o.ratios).size(); ++i) out << "---:|";
  out << "\n";
  for (auto s : o.schemes) {
    out << "| " << to_string(s) << " |";
    for (const auto& p : pts) {
      if (p.sweep != sweep || p.scheme != s) continue;
      std::ostringstream cell;
      cell << std::fixed << std::setprecision(messages ? 2 : 1);
      if (messages)
        cell << p.messages_per_job << " (" << p.migrations_per_job << ")";
      else
        cell << p.mean_wait / 60;
      out << " " << cell.str() << " |";
    }
    out << "\n";
  }
}

void plot(const std::filesystem::path& dir, const LeeCampaignOptions& o, const std::vector<Point>& pts, const std::string& sweep) {
  const bool by_load = sweep == "load";
  // One row per x, one column per scheme (minutes): lines that gnuplot can join.
  const auto dat = dir / ("lee2010-" + sweep + ".dat");
  {
    std::ofstream d(dat);
    d << "# " << (by_load ? "load" : "constraint_ratio");
    for (auto s : o.schemes) d << " " << to_string(s);
    d << "\n";
    for (double x : by_load ? o.loads : o.ratios) {
      d << x;
      for (auto s : o.schemes)
        for (const auto& p : pts)
          if (p.sweep == sweep && p.scheme == s && (by_load ? p.load : p.ratio) == x) d << " " << p.mean_wait / 60;
      d << "\n";
    }
  }
  const auto script = dir / ("lee2010-" + sweep + ".gp");
  std::ofstream gp(script);
  gp << "set terminal pngcairo size 900,560\nset output " << plot::quote((dir / ("lee2010-" + sweep + ".png")).string()) << "\n"
     << "set key outside right\nset grid\n"
     << "set xlabel '" << (by_load ? "offered load" : "job constraint ratio") << "'\n"
     << "set ylabel 'average wait time (min)'\n"
     << "set title 'lee2010 " << (by_load ? "slide 21: wait time against load (ratio " : "slide 23: wait time against constraint ratio (load ")
     << (by_load ? o.ratio_at_loads : o.load_at_ratios) << ")'\nplot ";
  for (std::size_t i = 0; i < o.schemes.size(); ++i)
    gp << (i ? ", " : "") << plot::quote(dat.string()) << " using 1:" << i + 2 << " with linespoints title '" << to_string(o.schemes[i]) << "'";
  gp << "\n";
  gp.close();
  if (const auto why_not = plot::run_gnuplot(script); plot::gnuplot_available() && !why_not.empty())
    std::fprintf(stderr, "treefarm-lab lee2010: %s\n", why_not.c_str());
}

}  // namespace

int lee_campaign(const LeeCampaignOptions& o, std::ostream& out) {
  namespace fs = std::filesystem;
  if (o.seeds == 0 || o.schemes.empty()) throw std::invalid_argument("treefarm experiment lee2010: need >= 1 seed and >= 1 scheme");
  const fs::path dir(o.out_dir);
  fs::create_directories(dir);
  std::vector<Point> pts;
  for (double load : o.loads)
    for (auto s : o.schemes) {
      pts.push_back(average(o, "load", load, o.ratio_at_loads, s));
      out << "load " << load << " ratio " << o.ratio_at_loads << " " << to_string(s) << ": mean wait "
          << pts.back().mean_wait / 60 << " min, " << pts.back().messages_per_job << " messages/job\n" << std::flush;
    }
  for (double ratio : o.ratios)
    for (auto s : o.schemes) {
      pts.push_back(average(o, "ratio", o.load_at_ratios, ratio, s));
      out << "load " << o.load_at_ratios << " ratio " << ratio << " " << to_string(s) << ": mean wait "
          << pts.back().mean_wait / 60 << " min, " << pts.back().messages_per_job << " messages/job\n" << std::flush;
    }
  {
    std::ofstream csv(dir / "lee2010.csv");
    csv << "sweep,load,constraint_ratio,scheme,mean_wait_s,p95_wait_s,mean_interarrival_s,messages_per_job,migrations_per_job\n";
    for (const auto& p : pts)
      csv << p.sweep << "," << p.load << "," << p.ratio << "," << to_string(p.scheme) << "," << p.mean_wait << ","
          << p.p95_wait << "," << p.tau << "," << p.messages_per_job << "," << p.migrations_per_job << "\n";
  }
  std::ostringstream md;
  md << "Command: `" << o.command << "`\n\n" << o.base.nodes << " nodes, " << o.base.jobs << " jobs, " << o.seeds
     << " seeds per point, dynamic scheduling every " << o.base.period << " s, ~" << o.base.neighbours
     << " neighbours per node, queue balancing " << (o.base.balance == LeeBalance::tll ? "TLL" : "MLL") << ".\n\n"
     << "Average wait time (minutes) against the offered load (constraint ratio " << o.ratio_at_loads << "):\n\n";
  table(md, o, pts, "load", false);
  md << "\nAverage wait time (minutes) against the job constraint ratio (load " << o.load_at_ratios << "):\n\n";
  table(md, o, pts, "ratio", false);
  md << "\nMigration messages per job (jobs moved per job) against the offered load:\n\n";
  table(md, o, pts, "load", true);
  std::ofstream(dir / "lee2010.md") << md.str();
  out << "\n" << md.str();
  plot(dir, o, pts, "load");
  plot(dir, o, pts, "ratio");
  return 0;
}

}  // namespace treefarm::lab::lee2010
