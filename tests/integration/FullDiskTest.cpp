// A full disk (docs/fault-tolerance.md, "A full disk"), with real processes: the master's
// --out, or a worker's scratch folder, on a small tmpfs mounted in a private mount
// namespace of the test's own (`unshare -m`: nothing is seen or left outside it). Needs
// root; skips without it.
//  - The journal fills mid-run: the master stops (exit 1) naming journal.tsv and the bytes
//    it needed, the journal ends with a whole line, no results.json is written; after
//    space is freed `--resume` completes with every task exactly once.
//  - results.json does not fit: every result was journaled, the error names the file and
//    the bytes, no truncated results.json; `--resume` writes it, every task once.
//  - A command task that cannot write its output or its input fails with the reason.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/EveryTaskOnce.hpp"
#include "tests/support/TreeToml.hpp"

using namespace treefarm::testing;

namespace {

std::string star(const std::string& apps) {
  return treefarm::test_support::star_nodes_toml(2) + apps + "[run]\nbuffer = 8\n";
}

std::string matmul(std::uint64_t tasks) {
  return "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 128\ntasks = " + std::to_string(tasks) + "\n";
}

/// Why this test cannot run here ("" = it can): root and `unshare -m` with a tmpfs.
std::string unavailable() {
  if (::geteuid() != 0) return "needs root (a tmpfs in a private mount namespace)";
  const auto r = run_command("unshare -m sh -c 'mount --make-rprivate / && d=$(mktemp -d) && mount -t tmpfs -o size=64k "
                             "tmpfs $d && umount $d && rmdir $d'");
  return r.exit_code == 0 ? "" : "unshare -m / mount -t tmpfs does not work here: " + r.output;
}

#define SKIP_UNLESS_TMPFS()                                        \
  do {                                                             \
    static const std::string why = unavailable();                  \
    if (!why.empty()) GTEST_SKIP() << "full-disk tests skipped: " << why; \
  } while (0)

/// Runs `script` with sh in a private mount namespace (its tmpfs mounts vanish with it).
CommandResult in_private_mounts(const TempDir& dir, const std::string& script) {
  const auto file = write_file(dir.path() / "script.sh", "set -u\nmount --make-rprivate /\n" + script);
  return run_command("unshare -m sh " + file);
}

std::size_t count_lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST(FullDisk, AJournalThatFillsTheDiskStopsTheRunCleanlyAndResumeCompletesExactlyOnce) {
  SKIP_UNLESS_TMPFS();
  TempDir dir("full-journal");
  const auto exp = write_file(dir.path() / "exp.toml", star(matmul(8000)));
  const auto out = dir.path() / "out", keep = dir.path() / "keep";
  fs::create_directories(out);
  fs::create_directories(keep);
  const std::string run = treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120";
  const auto r = in_private_mounts(dir, "mount -t tmpfs -o size=128k tmpfs " + out.string() + "\n" +  //
                                            run + " > " + (keep / "run1.log").string() + " 2>&1; echo $? > " +
                                            (keep / "rc1").string() + "\n" +  //
                                            "cp " + (out / "journal.tsv").string() + " " + (keep / "journal1.tsv").string() +
                                            "\nls -a " + out.string() + " > " + (keep / "ls1").string() + "\n" +
                                            "mount -o remount,size=32m " + out.string() + "\n" +  // space freed
                                            run + " --resume > " + (keep / "run2.log").string() + " 2>&1; echo $? > " +
                                            (keep / "rc2").string() + "\n" +  //
                                            "cp " + (out / "journal.tsv").string() + " " + (out / "results.json").string() +
                                            " " + keep.string() + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log1 = read_file(keep / "run1.log");
  EXPECT_EQ(read_file(keep / "rc1"), "1\n") << log1;
  EXPECT_NE(log1.find("journal: cannot write " + (out / "journal.tsv").string() + ": No space left on device (it needed "),
            std::string::npos)
      << log1;
  EXPECT_NE(log1.find("bytes for a batch of results"), std::string::npos) << log1;
  const auto journal1 = read_file(keep / "journal1.tsv");
  ASSERT_FALSE(journal1.empty());
  EXPECT_EQ(journal1.back(), '\n') << "the journal ends with a truncated line";
  EXPECT_LT(count_lines(journal1), 8001u) << "the disk filled after the run: the test shows nothing";
  const auto listing = read_file(keep / "ls1");
  EXPECT_EQ(listing.find("results.json"), std::string::npos) << "a failed run wrote results: " << listing;

  EXPECT_EQ(read_file(keep / "rc2"), "0\n") << read_file(keep / "run2.log");
  const auto results = nlohmann::json::parse(read_file(keep / "results.json"));
  treefarm::test_support::every_task_once(results);
  EXPECT_EQ(results.at("apps").at(0).at("wrong").get<int>(), 0);
  const auto journal = read_file(keep / "journal.tsv");
  EXPECT_EQ(count_lines(journal), 8001u) << "the journal holds every task once, after its header";
  EXPECT_EQ(journal.find("#torn"), std::string::npos);
}

TEST(FullDisk, ResultsJsonThatDoesNotFitIsNeverTruncatedAndResumeWritesIt) {
  SKIP_UNLESS_TMPFS();
  TempDir dir("full-results");
  const auto exp = write_file(dir.path() / "exp.toml", star(matmul(2000)));
  const auto out = dir.path() / "out", keep = dir.path() / "keep";
  fs::create_directories(out);
  fs::create_directories(keep);
  const std::string run = treefarm_bin + " run " + exp + " --out " + out.string() + " --quiet --timeout 120";
  const auto r = in_private_mounts(dir, "mount -t tmpfs -o size=160k tmpfs " + out.string() + "\n" + run + " > " +
                                            (keep / "run1.log").string() + " 2>&1; echo $? > " + (keep / "rc1").string() +
                                            "\ncp " + (out / "journal.tsv").string() + " " +
                                            (keep / "journal1.tsv").string() + "\nls -a " + out.string() + " > " +
                                            (keep / "ls1").string() + "\nmount -o remount,size=32m " + out.string() +
                                            "\n" + run + " --resume > " + (keep / "run2.log").string() +
                                            " 2>&1; echo $? > " + (keep / "rc2").string() + "\ncp " +
                                            (out / "results.json").string() + " " + keep.string() + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log1 = read_file(keep / "run1.log");
  EXPECT_EQ(read_file(keep / "rc1"), "1\n") << log1;
  EXPECT_NE(log1.find("cannot write " + (out / "results.json.tmp").string() +
                      ": No space left on device (it needed more than "),
            std::string::npos)
      << log1;
  EXPECT_NE(log1.find((out / "results.json").string() + " is left as it was"), std::string::npos) << log1;
  // Every result was taken and journaled: only results.json could not be written.
  EXPECT_EQ(count_lines(read_file(keep / "journal1.tsv")), 2001u);
  const auto listing = read_file(keep / "ls1");
  EXPECT_EQ(listing.find("results.json"), std::string::npos) << "a truncated results.json or its temporary: " << listing;

  const auto log2 = read_file(keep / "run2.log");
  EXPECT_EQ(read_file(keep / "rc2"), "0\n") << log2;
  EXPECT_NE(log2.find("2000 of 2000 tasks already done"), std::string::npos) << log2;
  treefarm::test_support::every_task_once(nlohmann::json::parse(read_file(keep / "results.json")));
}

TEST(FullDisk, ACommandTaskThatCannotWriteItsOutputOrInputFailsWithTheReason) {
  SKIP_UNLESS_TMPFS();
  TempDir dir("full-scratch");
  const auto exp = write_file(dir.path() / "exp.toml", star(R"([[app]]
name = "big"
kind = "command"
argv = ["sh", "-c", "head -c 300000 /dev/zero > {output}"]
bytes = 100
tasks = 3
[[app]]
name = "in"
kind = "command"
argv = ["true"]
bytes = "200KiB"
tasks = 2
)"));
  const auto scratch = dir.path() / "scratch", out = dir.path() / "out";
  fs::create_directories(scratch);
  // Tasks of a worker running as root run as nobody (docs/command-tasks.md): they must
  // reach the scratch folder (the tmpfs mounted there is open to all, mode 1777).
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const auto r = in_private_mounts(dir, "mount -t tmpfs -o size=64k tmpfs " + scratch.string() + "\nTMPDIR=" +
                                            scratch.string() + " " + treefarm_bin + " run " + exp + " --out " +
                                            out.string() + " --quiet --timeout 120; echo rc=$?\n");
  EXPECT_NE(r.output.find("rc=4"), std::string::npos) << r.output;  // the run ended, tasks failed
  const auto results = nlohmann::json::parse(read_file(out / "results.json"));
  ASSERT_EQ(results.at("failures").size(), 5u) << results.at("failures").dump();
  for (const auto& f : results.at("failures")) {
    const auto error = f.at("error").get<std::string>();
    EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
    if (f.at("app") == "in") {
      EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
    }
  }
}
