// tools/plot: gnuplot's quoting, running a script (a PNG written; a failure named with
// its log), gnuplot absent from PATH, and the scaling benchmarks' curve.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tools/plot/Gnuplot.hpp"
#include "tools/plot/ScalingPlot.hpp"

namespace fs = std::filesystem;
using namespace treefarm::plot;

namespace {

struct Dir {
  fs::path path;
  Dir() {
    char t[] = "/tmp/treefarm-plot-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~Dir() { fs::remove_all(path); }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

bool is_png(const fs::path& p) { return slurp(p).rfind("\x89PNG\r\n\x1a\n", 0) == 0; }

}  // namespace

TEST(Gnuplot, QuotesForAGnuplotScript) {
  EXPECT_EQ(quote("a b.png"), "'a b.png'");
  EXPECT_EQ(quote("it's"), "'it''s'");
  EXPECT_EQ(quote(""), "''");
}

TEST(Gnuplot, RunsAScriptAndNamesAFailureWithItsLog) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not installed (tools/bootstrap.sh installs gnuplot-nox)";
  Dir d;
  const auto png = d.path / "it's.png";
  std::ofstream(d.path / "ok.gp") << "set terminal pngcairo size 200,100\nset output " << quote(png.string()) << "\nplot x\n";
  EXPECT_EQ(run_gnuplot(d.path / "ok.gp"), "");
  EXPECT_TRUE(is_png(png));

  std::ofstream(d.path / "bad.gp") << "plot nosuchfunction(x)\n";
  const auto why_not = run_gnuplot(d.path / "bad.gp", d.path / "bad.log");
  EXPECT_NE(why_not.find("gnuplot failed on " + (d.path / "bad.gp").string()), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("see " + (d.path / "bad.log").string()), std::string::npos) << why_not;
  EXPECT_NE(slurp(d.path / "bad.log").find("nosuchfunction"), std::string::npos) << slurp(d.path / "bad.log");
}

TEST(Gnuplot, SaysSoWhenGnuplotIsNotOnPath) {
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  Dir d;
  std::ofstream(d.path / "ok.gp") << "plot x\n";
  const bool available = gnuplot_available();
  const auto why_not = run_gnuplot(d.path / "ok.gp");
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_FALSE(available);
  EXPECT_NE(why_not.find("gnuplot is not installed"), std::string::npos) << why_not;
}

TEST(ScalingPlot, DrawsEachSeriesOnLogAxesWithItsExponentCommandAndMachine) {
  if (!gnuplot_available()) GTEST_SKIP() << "gnuplot is not installed (tools/bootstrap.sh installs gnuplot-nox)";
  Dir d;
  const auto png = d.path / "curve.png";
  ScalingCurve c{"treefarm bench lp", "nodes", "seconds",
                 {{"one-port", {100, 1000, 10000}, {0.01, 0.1, 1.0}, 1.0},
                  {"multi-port", {100, 1000, 0}, {0.02, 0.0, 3.0}, std::nan("")}},
                 "treefarm bench lp --sizes 100,1000,10000", machine_line()};
  EXPECT_EQ(write_scaling_plot(png, c), "");
  EXPECT_TRUE(is_png(png));
  const auto gp = slurp(d.path / "curve.gp");
  EXPECT_NE(gp.find("set logscale xy"), std::string::npos) << gp;
  EXPECT_NE(gp.find("'one-port (exponent 1.00)'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("'multi-port'"), std::string::npos) << gp;  // no exponent: none printed
  EXPECT_NE(gp.find("'treefarm bench lp --sizes 100,1000,10000'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("CPUs ("), std::string::npos) << gp;
  // One block per series; the points that cannot stand on log axes are left out.
  EXPECT_EQ(slurp(d.path / "curve.dat"),
            "# one-port: size cost\n100 0.01\n1000 0.1\n10000 1\n\n\n# multi-port: size cost\n100 0.02\n\n\n");
  EXPECT_NE(write_scaling_plot(d.path / "curve.svg", c).find("must end in .png"), std::string::npos);
}

TEST(ScalingPlot, NamesThisCommandWithoutItsFolder) {
  const auto c = this_command();
  EXPECT_EQ(c.rfind("plot_tests", 0), 0u) << c;
}
