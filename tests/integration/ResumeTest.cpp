// Master journal and --resume and checked output, with real
// processes on loopback (docs/fault-tolerance.md).
#include <gtest/gtest.h>

#include <set>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;

namespace {


std::string experiment(const std::string& prefix, std::uint64_t tasks) {
  return "[[node]]\nname = \"m\"\ncores = 0\n"
         "[[node]]\nname = \"" + prefix + "a\"\nparent = \"m\"\ncores = 1\n"
         "[[node]]\nname = \"" + prefix + "b\"\nparent = \"m\"\ncores = 1\n"
         "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 192\ntasks = " + std::to_string(tasks) +
         "\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 4096\ntasks = " + std::to_string(tasks) +
         "\n[run]\nbuffer = 4\n";
}


std::size_t journal_entries(const fs::path& journal) {
  std::size_t n = 0;
  for (char c : read_file(journal)) n += c == '\n';
  return n == 0 ? 0 : n - 1;  // minus the header
}

}  // namespace

TEST(ResumeTest, KillNineOfTheMasterHalfWayThenResumeCountsEveryTaskOnce) {
  TempDir dir;
  const std::string p = "resume" + std::to_string(getpid());
  // Enough tasks that the once-a-second progress line sees half done well before the
  // end (batched dispatch runs 3,000 of these in under 2 s).
  const std::uint64_t tasks = 6000;
  const auto exp = write_file(dir.path() / (p + ".toml"), experiment(p, tasks));
  const auto out = dir.path() / "out";
  {
    Child run({treefarm_bin, "run", exp, "--out", out.string(), "--heartbeat-timeout", "2", "--heartbeat-interval",
               "0.3"},
              dir.path() / "run1.log");
    ASSERT_TRUE(wait_until([&] { return progress_done(run.output()) > 2 * tasks / 2; }, 120)) << run.output();
    const auto master = processes_mentioning("treefarm-master " + exp);
    ASSERT_EQ(master.size(), 1u) << run.output();
    kill(master[0], SIGKILL);
    const auto rc = run.wait(60);
    ASSERT_TRUE(rc.has_value()) << run.output();
    EXPECT_NE(*rc, 0) << "the run lost its master: " << run.output();
  }
  ASSERT_TRUE(wait_until([&] { return processes_mentioning(p).empty(); }, 30)) << "workers outlived their master";
  EXPECT_FALSE(fs::exists(out / "results.json")) << "no results.json from a killed master";
  const auto journaled = journal_entries(out / "journal.tsv");
  // Fsync'd at least every second: most of the half done is journaled, not all tasks.
  EXPECT_GT(journaled, tasks / 4);
  EXPECT_LT(journaled, 2 * tasks);

  Child resumed({treefarm_bin, "run", exp, "--out", out.string(), "--resume"}, dir.path() / "run2.log");
  const auto rc = resumed.wait(180);
  ASSERT_TRUE(rc.has_value()) << resumed.output();
  EXPECT_EQ(*rc, 0) << resumed.output();
  const std::string log = read_file(out / "logs" / "m.log") + resumed.output();
  EXPECT_NE(log.find(std::to_string(journaled) + " of " + std::to_string(2 * tasks) + " tasks already done"),
            std::string::npos)
      << log;

  const auto j = nlohmann::json::parse(read_file(out / "results.json"));
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (const auto& t : j.at("tasks"))
    EXPECT_TRUE(seen.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second)
        << "task counted twice";
  EXPECT_EQ(seen.size(), 2 * tasks);
  for (const auto& a : j.at("apps")) {
    EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u);
    EXPECT_EQ(a.at("completed").get<std::uint64_t>(), tasks);
  }
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_EQ(journal_entries(out / "journal.tsv"), 2 * tasks) << "the journal holds every task once at the end";
  EXPECT_FALSE(fs::exists(out / "results.json.tmp"));
}

TEST(ResumeTest, AnUnwritableOutIsRefusedBeforeAnythingStartsNamingThePath) {
  if (geteuid() == 0) {
    // root writes through mode bits: use a path under a regular file instead.
  }
  TempDir dir;
  const auto exp = write_file(dir.path() / "x.toml", experiment("unw" + std::to_string(getpid()), 10));
  write_file(dir.path() / "file", "not a directory\n");
  const auto bad = (dir.path() / "file" / "out").string();
  for (const auto& cmd : {treefarm_bin + " run " + exp + " --out " + bad, master_bin + " " + exp + " --out " + bad}) {
    const auto r = run_command("timeout 20 " + cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find(bad), std::string::npos) << r.output;
  }
}

TEST(ResumeTest, ResumeWithAJournalOfAnotherExperimentIsRefused) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "x.toml", experiment("oth" + std::to_string(getpid()), 10));
  fs::create_directories(dir.path() / "out");
  write_file(dir.path() / "out" / "journal.tsv", "treefarm-journal 1 seed=1 other:noop:5\n0\t1\t0.5\t0.1\tw\n");
  const auto r = run_command("timeout 20 " + master_bin + " " + exp + " --out " + (dir.path() / "out").string() +
                             " --resume --wait-timeout 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("journal.tsv:1: field 'header'"), std::string::npos) << r.output;
}

TEST(ResumeTest, OutOfRangeSettingsAreRefusedAtStart) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "x.toml", experiment("bad" + std::to_string(getpid()), 10));
  auto r = run_command("timeout 20 " + treefarm_bin + " run " + exp + " --buffer 1000000000");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--buffer"), std::string::npos) << r.output;
  const auto huge = write_file(dir.path() / "huge.toml",
                               "[[node]]\nname = \"m\"\ncores = 1\n[[app]]\nname = \"big\"\nkernel = \"noop\"\n"
                               "bytes = 64\ntasks = 3\nmemory_per_task = \"100TiB\"\n");
  r = run_command("timeout 20 " + treefarm_bin + " run " + huge);
  EXPECT_EQ(r.exit_code, 3) << r.output;  // bad input file: the field named
  EXPECT_NE(r.output.find("treefarm: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory_per_task"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("huge.toml:4"), std::string::npos) << r.output;
}
