#include "tools/SteadyRate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace treefarm::tools {
namespace {

/// Completions of two applications drawn in weights 1 : 2 (a task of 1 costs 3, of 0 costs 1:
/// a unit of weight = 1·3 + 2·1 = 5), at `rate` units of weight per second from `from` to `to`.
void add_units(std::vector<Completion>& out, double from, double to, double rate) {
  const double step = 1.0 / rate;  // one unit: one task of app 0 and two of app 1
  for (double t = from; t + step <= to + 1e-12; t += step) {
    out.push_back({0, t + step * 0.2});
    out.push_back({1, t + step * 0.5});
    out.push_back({1, t + step * 0.8});
  }
}

std::uint64_t count(const std::vector<Completion>& c, std::uint32_t app) {
  std::uint64_t n = 0;
  for (const auto& e : c) n += e.app == app;
  return n;
}

}  // namespace

TEST(SteadyRate, AWarmUpIsLeftOutAndTheSteadyRateMeasured) {
  // 2 s at 80 units/s (a slow start), then 8 s at 100 units/s (the mean of the first 9 s,
  // warm-up included, is 95.6: what a short run measures); then 1 s of the other
  // application alone after the first one ran out (left out by the (1 - ε)·T end).
  std::vector<Completion> c;
  add_units(c, 0.0, 2.0, 80.0);
  add_units(c, 2.0, 10.0, 100.0);
  const std::vector<std::uint64_t> tasks{count(c, 0), count(c, 1) + 50};  // app 1 still had 50 to go at T = 10 s
  for (int i = 0; i < 50; ++i) c.push_back({1, 10.0 + 0.02 * i});
  const auto s = steady_rate(c, {1.0, 2.0}, {3.0, 1.0}, tasks, 0.1, 0.25, 4);
  EXPECT_GE(s.start, 2.0 - 0.26) << "the warm-up is left out";
  EXPECT_LE(s.start, 4.5) << "at most half the run is";
  EXPECT_LE(s.end, 9.0 + 1e-9);
  EXPECT_GT(s.end, 8.7);
  EXPECT_NEAR(s.units_per_second, 100.0, 1.5);
  ASSERT_EQ(s.windows.size(), 4u);
  for (const double w : s.windows) EXPECT_NEAR(w, 100.0, 4.0);
  EXPECT_LT(s.spread, 0.08);
  EXPECT_LT(s.band, 0.15);
}

TEST(SteadyRate, WorkOutOfItsMixStillCountsAtItsCost) {
  // 10 s of app 0 only (cost 3 of a unit of 5) at 50 tasks/s: 30 units/s; no warm-up.
  std::vector<Completion> c;
  for (int i = 0; i < 500; ++i) c.push_back({0, 0.01 + 0.02 * i});
  const auto s = steady_rate(c, {1.0, 2.0}, {3.0, 1.0}, {500, 1000}, 0.1, 0.25, 4);
  EXPECT_NEAR(s.units_per_second, 30.0, 1.0);
  EXPECT_LT(s.spread, 0.1);
}

TEST(SteadyRate, TheWindowsSpreadAsTheRunMoved) {
  // No warm-up; the rate alternates 100 / 80 units/s every 2 s: four windows of ~2 s apart.
  std::vector<Completion> c;
  for (int j = 0; j < 5; ++j) add_units(c, 2.0 * j, 2.0 * (j + 1), j % 2 ? 80.0 : 100.0);
  const auto s = steady_rate(c, {1.0, 2.0}, {3.0, 1.0}, {count(c, 0), count(c, 1)}, 0.1, 0.25, 4);
  EXPECT_GT(s.spread, 0.1) << "the windows see the machine move";
  // The 95 % prediction band of a next span: that of one more window's rate,
  // 2·t(0.975, 3)·jitter·√(1 + 1/4) / median, t = 3.182, jitter = 1.4826 × the windows'
  // median absolute deviation: a machine whose level moves by seconds moves a next span
  // as much as a window.
  ASSERT_EQ(s.windows.size(), 4u);
  auto w = s.windows;
  std::sort(w.begin(), w.end());
  const double median = (w[1] + w[2]) / 2;
  std::vector<double> dev;
  for (const double x : w) dev.push_back(std::abs(x - median));
  std::sort(dev.begin(), dev.end());
  const double jitter = 1.4826 * (dev[1] + dev[2]) / 2;
  EXPECT_NEAR(s.jitter, jitter, 1e-9);
  EXPECT_NEAR(s.band, 2 * 3.182446305284263 * jitter * std::sqrt(1.25) / median, 1e-9);
  EXPECT_GT(s.band, s.spread) << "wider than the windows' range with four of them";
  EXPECT_TRUE(s.dips.empty()) << "80 against 100 is jitter here, not a dip";
  EXPECT_EQ(s.dip_band, 0.0);
  EXPECT_GT(s.units_per_second, 85.0);
  EXPECT_LT(s.units_per_second, 95.0);
}

TEST(SteadyRate, AStalledWindowAmongTightOnesIsADipNotJitter) {
  // Eight windows of ~1 s at 100 units/s but for a second at 40 (a stall of the machine):
  // the level is the other windows', the band their jitter's (the sd of the eight made it
  // ~40 % wide: an interval of ±20 % from one stall), and the stall widens the low end
  // alone: one episode seen, the 95th percentile of a Poisson count of mean 1 is 3, each
  // losing what it lost, 60 units of ~775: 3 × 7.7 % = 23 %.
  std::vector<Completion> c;
  add_units(c, 0.0, 5.0, 100.0);
  add_units(c, 5.0, 6.0, 40.0);
  add_units(c, 6.0, 8.9, 100.0);
  const std::vector<std::uint64_t> tasks{count(c, 0), count(c, 1) + 1000};
  for (int i = 0; i < 400; ++i) c.push_back({1, 8.9 + 0.0025 * i});  // app 0 done at T = 8.9 s: the span ends by 8 s
  const auto s = steady_rate(c, {1.0, 2.0}, {3.0, 1.0}, tasks, 0.1, 0.25, 8);
  ASSERT_EQ(s.windows.size(), 8u);
  EXPECT_NEAR(s.median, 100.0, 3.0) << "the level is not pulled down";
  EXPECT_LT(s.band, 0.06) << "one stall does not make the jitter's band wide";
  ASSERT_FALSE(s.dips.empty());
  EXPECT_EQ(s.dip_episodes, 1u) << "the stall's windows are consecutive: one episode";
  EXPECT_NEAR(s.dip_loss, 60.0 / (s.median * (s.end - s.start)), 0.01) << "what the stall lost of the span's work";
  EXPECT_NEAR(s.dip_band, 3 * s.dip_loss, 1e-12);
  // Two stalls apart are two episodes: the 95th percentile of a Poisson count of mean 2 is 5.
  std::vector<Completion> two;
  add_units(two, 0.0, 2.0, 100.0);
  add_units(two, 2.0, 3.0, 40.0);
  add_units(two, 3.0, 5.0, 100.0);
  add_units(two, 5.0, 6.0, 40.0);
  add_units(two, 6.0, 8.9, 100.0);
  const std::vector<std::uint64_t> t2{count(two, 0), count(two, 1) + 1000};
  for (int i = 0; i < 400; ++i) two.push_back({1, 8.9 + 0.0025 * i});
  const auto s2 = steady_rate(two, {1.0, 2.0}, {3.0, 1.0}, t2, 0.1, 0.25, 8);
  EXPECT_EQ(s2.dip_episodes, 2u);
  EXPECT_NEAR(s2.dip_band, 2.5 * s2.dip_loss, 1e-12);
}

TEST(SteadyRate, TheMedianWindowIsNotPulledDownByAStall) {
  // 100 units/s but for a stall at 40 units/s from 4 to 6 s: the span's mean drops, the
  // median of its four windows much less.
  std::vector<Completion> c;
  add_units(c, 0.0, 4.0, 100.0);
  add_units(c, 4.0, 6.0, 40.0);
  add_units(c, 6.0, 10.0, 100.0);
  const auto s = steady_rate(c, {1.0, 2.0}, {3.0, 1.0}, {count(c, 0), count(c, 1)}, 0.1, 0.25, 4);
  ASSERT_EQ(s.windows.size(), 4u);
  auto w = s.windows;
  std::sort(w.begin(), w.end());
  EXPECT_DOUBLE_EQ(s.median, (w[1] + w[2]) / 2);
  EXPECT_LT(s.units_per_second, 90.0);
  EXPECT_GT(s.median, s.units_per_second + 5.0);
}

TEST(SteadyRate, BadInputIsRefusedByName) {
  const std::vector<Completion> c{{0, 0.1}, {1, 0.2}};
  auto refuses = [&](auto&& call, const std::string& word) {
    try {
      call();
      ADD_FAILURE() << "no error, expected one naming " << word;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  };
  refuses([&] { steady_rate(c, {1.0}, {1.0, 1.0}, {1, 1}); }, "weights");
  refuses([&] { steady_rate(c, {1.0, 0.0}, {1.0, 1.0}, {1, 1}); }, "weight > 0");
  refuses([&] { steady_rate(c, {1.0, 1.0}, {1.0, 1.0}, {1, 1}, 0.1, 0.0); }, "batch");
  refuses([&] { steady_rate(c, {1.0, 1.0}, {1.0, 1.0}, {1, 1}, 0.1, 0.25, 0); }, "windows");
  refuses([&] { steady_rate(c, {1.0, 1.0}, {1.0, 1.0}, {1, 1}, 0.5); }, "epsilon");
  refuses([&] { steady_rate({{2, 0.1}}, {1.0, 1.0}, {1.0, 1.0}, {1, 1}); }, "out of range");
  refuses([&] { steady_rate(c, {1.0, 1.0}, {1.0, 1.0}, {1, 1}); }, "a longer run");
}

}  // namespace treefarm::tools
