// runtime/metrics/Progress: the live bar, the plain line and the JSON lines of a run.
#include "runtime/metrics/Progress.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

namespace treefarm::metrics {
namespace {

std::vector<Progress::App> apps() { return {{"mm", 100}, {"ma", 1000}}; }

TEST(Progress, RateIsSmoothedAndEtaFollowsIt) {
  std::ostringstream out;
  Progress p(apps(), Progress::Mode::off, out);
  p.tick(1, {10, 100});
  EXPECT_DOUBLE_EQ(p.rate(0), 10);
  EXPECT_DOUBLE_EQ(p.eta(0), 9);      // 90 left at 10/s
  p.tick(2, {30, 100});               // 20/s last second; 0/s for ma
  EXPECT_DOUBLE_EQ(p.rate(0), 0.3 * 20 + 0.7 * 10);
  EXPECT_DOUBLE_EQ(p.rate(1), 0.7 * 100);
  p.tick(3, {100, 100});
  EXPECT_DOUBLE_EQ(p.eta(0), 0);      // done
  EXPECT_TRUE(out.str().empty());     // off prints nothing
  Progress idle(apps(), Progress::Mode::off, out);
  idle.tick(1, {0, 0});
  EXPECT_LT(idle.eta(0), 0);          // unknown while nothing completes
}

TEST(Progress, BarRedrawsInPlaceWithPercentRateAndEta) {
  std::ostringstream out;
  Progress p(apps(), Progress::Mode::bar, out);
  p.tick(1, {50, 100});
  const std::string first = out.str();
  EXPECT_EQ(first.find("\x1b[3A"), std::string::npos);  // nothing to move over yet
  EXPECT_NE(first.find("mm           [###############...............]  50.0%  50/100  50.0/s  ETA 1 s"),
            std::string::npos)
      << first;
  p.tick(2, {60, 200});
  EXPECT_NE(out.str().find("\x1b[3A", first.size()), std::string::npos);  // cursor up over 1 + 2 lines
  EXPECT_EQ(Progress::format_duration(185), "3 min 05 s");
  EXPECT_EQ(Progress::format_duration(3720), "1 h 02 min");
  EXPECT_EQ(Progress::format_duration(-1), "?");
}

TEST(Progress, PlainIsOneLinePerTickAndJsonOneObjectPerTick) {
  std::ostringstream plain, json;
  Progress p(apps(), Progress::Mode::plain, plain), j(apps(), Progress::Mode::json, json);
  for (int t = 1; t <= 3; ++t) {
    const std::vector<std::uint64_t> c{static_cast<std::uint64_t>(10 * t), static_cast<std::uint64_t>(100 * t)};
    p.tick(t, c);
    j.tick(t, c);
  }
  const std::string text = plain.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("[3 s] 330/1100  mm 30/100 30% (10.0/s, ETA 7 s)"), std::string::npos) << text;
  std::istringstream lines(json.str());
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const auto o = nlohmann::json::parse(line);
    ++n;
    EXPECT_EQ(o["type"], "progress");
    EXPECT_EQ(o["tasks"], 1100);
    EXPECT_EQ(o["apps"][1]["completed"], 100 * n);
    EXPECT_DOUBLE_EQ(o["apps"][0]["percent"].get<double>(), 10.0 * n);
  }
  EXPECT_EQ(n, 3);
}

}  // namespace
}  // namespace treefarm::metrics
