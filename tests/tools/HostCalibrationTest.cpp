// Tests of tools/HostCalibration.hpp and tools/CommCost.hpp (the host-aware model).
#include "tools/HostCalibration.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>
#include <unistd.h>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::tools {
namespace {

TEST(HostCalibration, SharesOfCpusBusyAtOnce) {
  // The quickstart on 2 CPUs: master forwards, four 1-core workers, two per CPU.
  const auto s = cpu_shares({0, 1, 1, 1, 1}, {{}, {0}, {1}, {0}, {1}});
  ASSERT_EQ(s.size(), 5u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  for (std::size_t u = 1; u < 5; ++u) EXPECT_DOUBLE_EQ(s[u], 0.5) << u;
  // A 2-core node on CPUs 0-1 beside a 1-core node on CPU 1: CPU 0 carries one thread,
  // CPU 1 two: the 2-core node has (1 + 1/2)/2, the other 1/2.
  const auto t = cpu_shares({2, 1}, {{0, 1}, {1}});
  EXPECT_DOUBLE_EQ(t[0], 0.75);
  EXPECT_DOUBLE_EQ(t[1], 0.5);
  // Alone on its CPU: the whole of it.
  EXPECT_DOUBLE_EQ(cpu_shares({1}, {{3}})[0], 1.0);
}

TEST(HostCalibration, AddLocalHostRecordsEveryNode) {
  const auto ex = model::parse_experiment(
      "[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"a\"\nparent = \"m\"\ncores = 1\n"
      "[[node]]\nname = \"b\"\nparent = \"m\"\ncores = 1\n"
      "[[app]]\nname = \"x\"\nkernel = \"matadd\"\nn = 64\ntasks = 1\n",
      "e.toml");
  model::Calibration cal;
  CommCost cost;
  cost.cpu_seconds_per_byte = 2e-10;
  cost.spread = 0.1;
  add_local_host(cal, ex, {"", "0", "0"}, 2.0, "box", cost);
  ASSERT_EQ(cal.hosts.count("box"), 1u);
  EXPECT_EQ(cal.hosts.at("box").cores, 2.0);
  EXPECT_EQ(cal.hosts.at("box").comm_cpu_seconds_per_byte, 2e-10);
  EXPECT_EQ(cal.nodes.at("m").host, "box");
  EXPECT_TRUE(cal.nodes.at("m").cpus.empty());
  EXPECT_EQ(cal.nodes.at("a").cpus, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(cal.nodes.at("a").cpu_share, 0.5);  // a and b share CPU 0
  // And it survives the file.
  EXPECT_EQ(model::parse_calibration(model::to_json(cal), "c.json"), cal);
}

// Whole tasks (docs/lp.md, "Whole tasks measured through the runtime"): real
// treefarm-master and treefarm-worker processes run the experiment's applications one hop
// down, alone and together; every figure comes from their own results.json.
TEST(HostCalibration, EachApplicationsWholeCostIsMeasuredThroughTheRuntime) {
  const test_support::TempDir scratch("taskcpu-test");  // removed on every exit, a failure's included
  const auto& dir = scratch.path();
  const auto file = dir / "e.toml";
  // A depth-2 tree under lp: the measuring tree is one hop under FCFS, whatever the file's.
  std::ofstream(file) << "[[node]]\nname = \"root\"\ncores = 0\n[[node]]\nname = \"mid\"\nparent = \"root\"\ncores = 1\n"
                         "[[node]]\nname = \"leaf\"\nparent = \"mid\"\ncores = 1\n"
                         "[[app]]\nname = \"small\"\nkernel = \"matadd\"\nn = 64\nweight = 2\ntasks = 100000\n"
                         "[[app]]\nname = \"big\"\nkernel = \"matmul\"\nn = 96\nweight = 1\ntasks = 100000\n"
                         "[run]\nbuffer = 10\npolicy = \"lp\"\n";
  const auto ex = model::load_experiment(file.string());
  // Estimates of 20 ms per task keep the runs at their floor of 40 tasks alone; the run
  // together is sized from what the runs alone measured (~8 s of 2 CPUs).
  int between = 0;
  const auto c = measure_task_cpu(ex, {{"small", 0.02}, {"big", 0.02}}, 2, 2.0, false, TREEFARM_BIN_DIR, [&] { ++between; });
  ASSERT_EQ(c.seconds.size(), 2u);
  ASSERT_EQ(c.alone.size(), 2u);
  EXPECT_EQ(c.workers, 2u);
  // Each application alone in two rounds, one before the run together and one after; the
  // lower figure stands (a copy stall slows the round it falls on). `between` after each
  // of the five runs.
  EXPECT_EQ(between, 5);
  for (const char* app : {"small", "big"}) {
    ASSERT_EQ(c.alone_rounds.at(app).size(), 2u) << app;
    EXPECT_EQ(c.alone.at(app), std::min(c.alone_rounds.at(app)[0], c.alone_rounds.at(app)[1])) << app;
  }
  for (const char* app : {"small", "big"}) {
    // A task costs at least its kernel (96³·2 flop at < 1 Tflop/s: > 1.7 µs) and, on 2 CPUs
    // running tasks of a few microseconds, far less than a second.
    EXPECT_GT(c.alone.at(app), 1e-6) << app;
    EXPECT_LT(c.alone.at(app), 0.5) << app;
    EXPECT_NEAR(c.seconds.at(app), c.alone.at(app) * c.mix_scale, 1e-12) << "the ratios alone are kept";
  }
  EXPECT_GT(c.mix_scale, 0.0);
  EXPECT_GE(c.spread, 0.0);
  // The level comes from one run's steady span, in kMixWindows windows (not the master's
  // window of a run of a few tasks); the clock or its band stopped it, not a count.
  EXPECT_EQ(c.repeats.size(), kMixWindows);
  EXPECT_LE(c.run_seconds, kMixCapSeconds + 2.0);
  EXPECT_LT(c.steady_start, c.steady_end);
  EXPECT_GE(c.steady_start, 0.0);
  EXPECT_GT(c.busy, 0.0);
  // The tree's processes' CPU and the machine's idle time were sampled over its steady
  // span: a share of the CPU the tree could have had, some of it the tree's.
  ASSERT_TRUE(c.busy_share) << "no samples over the steady span";
  EXPECT_GT(*c.busy_share, 0.0);
  EXPECT_LE(*c.busy_share, 1.0);
  // A run that cannot start (no binaries there) is an error naming the applications.
  try {
    measure_task_cpu(ex, {{"small", 0.02}}, 1, 2.0, false, (dir / "nowhere").string());
    ADD_FAILURE() << "no error without binaries";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("small"), std::string::npos) << e.what();
  }
}

namespace {
/// Completions of two applications in weights 1 : 2 (a task of app 0 costs 3, of app 1
/// costs 1: a unit of weight = 5), at `rate(t)` units of weight per second from `from` to `to`.
template <typename Rate>
void add_units(std::vector<Completion>& out, double from, double to, Rate rate) {
  for (double t = from; t < to;) {
    const double step = 1.0 / rate(t);
    out.push_back({0, t + step * 0.2});
    out.push_back({1, t + step * 0.5});
    out.push_back({1, t + step * 0.8});
    t += step;
  }
}
const std::vector<double> kWeight{1.0, 2.0}, kCost{3.0, 1.0};
const std::vector<std::uint64_t> kTasks{100000, 200000};  // far more than done: the clock ends the run
}  // namespace

TEST(MixRun, ASteadyRunStopsOnceTightAndRecordsAtLeastTheTightBand) {
  std::vector<Completion> c;
  add_units(c, 0.0, 7.0, [](double) { return 100.0; });
  EXPECT_EQ(read_mix_run(c, kWeight, kCost, kTasks, false).stop, MixStop::running) << "a span under 8 s is never tight";
  add_units(c, 7.0, 9.8, [](double) { return 100.0; });
  const auto r = read_mix_run(c, kWeight, kCost, kTasks, false);
  ASSERT_TRUE(r.has_steady);
  EXPECT_EQ(r.stop, MixStop::tight);
  ASSERT_EQ(r.steady.windows.size(), kMixWindows);
  EXPECT_LT(r.steady.band, 0.02);
  // Stopped at the first tight band, it records the bound, not the band it happened to see.
  EXPECT_DOUBLE_EQ(mix_spread(MixStop::tight, r.steady.band), kMixTightBand);
}

TEST(MixRun, ARunWhoseWindowsDisagreeGoesOnToItsCapAndRecordsItsBandAsItIs) {
  // 100 units/s but for two stalls at 40 (3.5-4.3 s and 7.5-8.3 s, in the span's second
  // half: the warm-up rule cannot cut them): windows far apart. Not tight at 6 s, it runs on
  // (it used to end at its last task, sized by a first guess: 4-9 s), and the clock ends it
  // at the cap, whatever its count.
  const auto rate = [](double t) { return (t >= 3.5 && t < 4.3) || (t >= 7.5 && t < 8.3) ? 40.0 : 100.0; };
  std::vector<Completion> c;
  add_units(c, 0.0, 6.0, rate);
  const auto early = read_mix_run(c, kWeight, kCost, kTasks, false);
  ASSERT_TRUE(early.has_steady);
  EXPECT_GT(early.steady.band + early.steady.dip_band, kMixTightBand) << "the stalls are dips: its low end is wide";
  EXPECT_EQ(early.stop, MixStop::running);
  add_units(c, 6.0, kMixCapSeconds + 0.1, rate);
  const auto capped = read_mix_run(c, kWeight, kCost, kTasks, false);
  EXPECT_EQ(capped.stop, MixStop::capped);
  ASSERT_EQ(capped.steady.windows.size(), kMixWindows);
  EXPECT_GT(capped.steady.band + capped.steady.dip_band, kMixTightBand);
  // Ended by the clock (no choice of a lucky moment), its band is recorded unclipped.
  EXPECT_DOUBLE_EQ(mix_spread(MixStop::capped, capped.steady.band), capped.steady.band);
  EXPECT_DOUBLE_EQ(mix_spread(MixStop::ended, 0.03), 0.03);
  // A run whose tasks ran out first ends there.
  std::vector<Completion> short_run;
  add_units(short_run, 0.0, 3.0, rate);
  EXPECT_EQ(read_mix_run(short_run, kWeight, kCost, kTasks, true).stop, MixStop::ended);
  EXPECT_THROW(read_mix_run(c, {1.0}, kCost, kTasks, false), std::invalid_argument);
  EXPECT_THROW(read_mix_run(c, {1.0, 0.0}, kCost, kTasks, false), std::invalid_argument);
}

// A copy stall of the VM (2-3x slower copies for up to seconds) in two of eight samples
// taken between a calibration's phases: the figure is the level the others saw, and the
// spread is their middle half's (the whole range was 1.5 here: a prediction interval of
// the byte's cost at median × (1 ± 0.75)).
TEST(AloneCost, TheTreesStartUpBeforeItsFirstResultIsLeftOut) {
  // A quarter of a second with no result (processes, joins, the first inputs), then 100
  // completions 10 ms apart: 2 CPUs × 10 ms per task, whatever the start-up took.
  std::vector<Completion> done;
  for (int i = 0; i < 100; ++i) done.push_back({0, 0.25 + 0.01 * i});
  std::swap(done[3], done[70]);  // in any order
  EXPECT_NEAR(alone_seconds_per_task(done, 80.0, 2.0), 0.02, 1e-12);
  for (auto& c : done) c.at += 0.5;  // a start-up twice as long and more: the same cost
  EXPECT_NEAR(alone_seconds_per_task(done, 60.0, 2.0), 0.02, 1e-12);
  // Too few results to time: the master's fair throughput; neither: an error.
  done.resize(19);
  EXPECT_NEAR(alone_seconds_per_task(done, 80.0, 2.0), 2.0 / 80.0, 1e-12);
  EXPECT_THROW(alone_seconds_per_task(done, 0.0, 2.0), std::invalid_argument);
}

TEST(CommCost, SamplesInACopyStallMoveNeitherTheFigureNorItsSpread) {
  CommCostSeries series(1 << 20, false);
  for (const double v : {0.28e-9, 0.70e-9, 0.29e-9, 0.27e-9, 0.30e-9, 0.71e-9, 0.28e-9, 0.29e-9}) series.add({v, 1.0 / v});
  const auto c = series.summary();
  EXPECT_EQ(c.repetitions, 8);
  EXPECT_NEAR(c.cpu_seconds_per_byte, 0.29e-9, 1e-15);
  EXPECT_NEAR(c.bytes_per_second, 1.0 / 0.29e-9, 1.0);
  EXPECT_NEAR(c.spread, (0.30 - 0.28) / 0.29, 1e-9);
  // Under four samples: the whole range; none: an error, not a zero.
  EXPECT_NEAR(summarize_comm_reps({{1e-9, 1.0}, {3e-9, 1.0}}).spread, 2.0 / 3.0, 1e-9);
  EXPECT_THROW(summarize_comm_reps({}), std::invalid_argument);
  // A real sample adds to the series.
  series.sample(1);
  EXPECT_EQ(series.size(), 9u);
}

TEST(CommCost, MovingBytesOverLoopbackCostsCpu) {
  const auto c = measure_comm_cost(1 << 20, false, 2, 0.02);
  EXPECT_EQ(c.repetitions, 2);
  // At least the two copies through the kernel, at most a microsecond per byte.
  EXPECT_GT(c.cpu_seconds_per_byte, 1e-12);
  EXPECT_LT(c.cpu_seconds_per_byte, 1e-6);
  EXPECT_GT(c.bytes_per_second, 1e6);
}

}  // namespace
}  // namespace treefarm::tools
