// The master's journal: what a crash leaves behind is read back, each task once.
#include "runtime/metrics/Journal.hpp"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/TempDir.hpp"

namespace treefarm::metrics {
namespace {

namespace fs = std::filesystem;

using Dir = test_support::TempDir;

const std::vector<std::uint64_t> tasks = {4, 3};
const std::string fp = journal_fingerprint(7, {"mm", "nop"}, {"matmul", "noop"}, tasks);

TEST(Journal, EntriesWrittenAreReadBackOnceEach) {
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  {
    Journal j(p, fp, false);
    j.add({0, 3, 1.5, 0.25, "w1"});
    j.add({1, 0, 2.0, 0.0, "w\t2"});  // a tab in a name cannot break the line
    j.add({0, 3, 2.5, 0.25, "w3"});   // a second copy is dropped at load
  }
  const auto e = load_journal(p, fp, tasks);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].app, 0u);
  EXPECT_EQ(e[0].index, 3u);
  EXPECT_DOUBLE_EQ(e[0].completed_at, 1.5);
  EXPECT_EQ(e[0].node, "w1");
  EXPECT_EQ(e[1].node, "w_2");
}

TEST(Journal, ARevocationDropsTheEntryAndALaterOneCounts) {
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  {
    Journal j(p, fp, false);
    j.add({0, 1, 1.0, 0.1, "forger"});
    j.add({0, 2, 1.1, 0.1, "forger"});
    j.add({1, 0, 1.2, 0.1, "honest"});
    j.revoke(0, 1);  // forger caught: both its tasks are redone
    j.revoke(0, 2);
    j.add({0, 1, 2.0, 0.1, "honest"});
  }
  const auto e = load_journal(p, fp, tasks);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].app, 1u);
  EXPECT_EQ(e[1].index, 1u);
  EXPECT_EQ(e[1].node, "honest");
  // A bad revocation names the line and the field.
  { std::ofstream(p, std::ios::app) << "-\t0\t9\n"; }
  try {
    load_journal(p, fp, tasks);
    ADD_FAILURE() << "out-of-range revocation accepted";
  } catch (const std::runtime_error& err) {
    EXPECT_NE(std::string(err.what()).find(":8: field 'index'"), std::string::npos) << err.what();
  }
}

TEST(Journal, ATornLastLineIsIgnoredAndAppendingAfterItWorks) {
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  { Journal j(p, fp, false); j.add({0, 1, 1.0, 0.1, "a"}); }
  { std::ofstream(p, std::ios::app) << "0\t2\t1.2"; }  // cut by kill -9
  EXPECT_EQ(load_journal(p, fp, tasks).size(), 1u);
  { Journal j(p, fp, true); j.add({0, 2, 3.0, 0.1, "b"}); }
  const auto e = load_journal(p, fp, tasks);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].index, 2u);
  EXPECT_EQ(e[1].node, "b");
}

TEST(Journal, BadLinesNameFileLineAndField) {
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  auto expect_error = [&](const std::string& body, const std::string& what) {
    std::ofstream(p) << body;
    try {
      load_journal(p, fp, tasks);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  const std::string head = "treefarm-journal 1 " + fp + "\n";
  expect_error(head + "0\t9\t1\t1\tw\n", "journal.tsv:2: field 'index'");
  expect_error(head + "5\t0\t1\t1\tw\n", "journal.tsv:2: field 'app'");
  expect_error(head + "0\t1\tsoon\t1\tw\n", "journal.tsv:2: field 'completed_at'");
  expect_error(head + "0\t1\n", "journal.tsv:2: field 'line'");
  expect_error("treefarm-journal 1 seed=8 mm:matmul:4 nop:noop:3\n", "journal.tsv:1: field 'header'");
  expect_error("hello\n", "not a treefarm journal");
}

TEST(Journal, AFreshJournalTruncatesTheOldOne) {
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  { Journal j(p, fp, false); j.add({0, 1, 1.0, 0.1, "a"}); }
  { Journal j(p, fp, false); }
  EXPECT_TRUE(load_journal(p, fp, tasks).empty());
}

TEST(Journal, BatchesWrittenOnTheWritersThreadAreAllOnDiskAfterFlush) {
  // More than three batches, handed over by add() (full batches) and by sync() (the tick's,
  // not waited for), interleaved with revocations: flush() returns once every line is on
  // disk, in the order queued, while the journal is still open.
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  const std::uint64_t n = 3 * Journal::batch_size + 123;
  const std::vector<std::uint64_t> big = {n, 1};
  const auto big_fp = journal_fingerprint(7, {"mm", "nop"}, {"matmul", "noop"}, big);
  Journal j(p, big_fp, false);
  for (std::uint64_t i = 0; i < n; ++i) {
    j.add({0, i, static_cast<double>(i), 0.0, "w"});
    if (i % 1000 == 999) j.sync();
    if (i == 5000) j.revoke(0, 17);  // task 17 is done again: its entry no longer counts
  }
  j.flush();
  const auto e = load_journal(p, big_fp, big);
  ASSERT_EQ(e.size(), n - 1);
  EXPECT_EQ(e.front().index, 0u);
  EXPECT_EQ(e.back().index, n - 1);
  for (std::size_t i = 1; i < e.size(); ++i) ASSERT_LT(e[i - 1].index, e[i].index) << "out of order at " << i;
}

// A run watched while it goes (tools/HostCalibration stops its run once the journal says
// enough): each read parses only what was appended, a line being written waits.
TEST(Journal, AReaderParsesOnlyWhatWasAppendedSinceItsLastRead) {
  Dir d("journal");
  const auto p = d.path() / "journal.tsv";
  { Journal j(p, fp, false); j.add({0, 1, 1.0, 0.1, "a"}); }
  JournalReader reader(p, fp, tasks);
  EXPECT_EQ(reader.read().size(), 1u);
  { std::ofstream(p, std::ios::app) << "0\t2\t1."; }  // being written
  EXPECT_EQ(reader.read().size(), 1u);
  { std::ofstream(p, std::ios::app) << "5\t0.1\tb\n"; }
  ASSERT_EQ(reader.read().size(), 2u);
  EXPECT_DOUBLE_EQ(reader.read()[1].completed_at, 1.5);
  // Overwrite the first entry's application in place: the reader does not read it again
  // (load_journal, reading it all, refuses it).
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    std::string head;
    std::getline(f, head);
    f.seekp(static_cast<std::streamoff>(head.size() + 1));
    f << '9';
  }
  EXPECT_THROW(load_journal(p, fp, tasks), std::runtime_error);
  { std::ofstream(p, std::ios::app) << "1\t0\t2\t0.1\tc\n-\t0\t2\n"; }
  const auto& e = reader.read();
  ASSERT_EQ(e.size(), 2u) << "one more entry, one revoked";
  EXPECT_EQ(e[0].node, "a");
  EXPECT_EQ(e[1].node, "c");
  // A bad appended line names its line (5: header, a, b, c, the revocation, then it).
  { std::ofstream(p, std::ios::app) << "0\t99\t1\t1\tw\n"; }
  for (int twice = 0; twice < 2; ++twice) {
    try {
      reader.read();
      ADD_FAILURE() << "out-of-range index accepted";
    } catch (const std::runtime_error& err) {
      EXPECT_NE(std::string(err.what()).find(":6: field 'index'"), std::string::npos) << err.what();
    }
  }
}

TEST(Journal, AJournalThatCannotBeWrittenIsRefusedNamingTheFile) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  try {
    Journal j("/dev/full", fp, false);  // every write fails: no space left
    FAIL() << "a journal on /dev/full was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace treefarm::metrics
