// write_file_atomically and check_writable_directory.
#include "runtime/metrics/AtomicFile.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/TempDir.hpp"

namespace treefarm::metrics {
namespace {

namespace fs = std::filesystem;

using Dir = test_support::TempDir;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(AtomicFile, ReplacesTheContentAndLeavesNoTemporary) {
  Dir d("atomic");
  const auto p = d.path() / "results.json";
  write_file_atomically(p, "first\n");
  write_file_atomically(p, std::string(1 << 20, 'x'));
  EXPECT_EQ(read(p), std::string(1 << 20, 'x'));
  EXPECT_FALSE(fs::exists(d.path() / "results.json.tmp"));
}

TEST(AtomicFile, AFailedWriteNamesThePathAndKeepsTheOldFile) {
  Dir d("atomic");
  const auto p = d.path() / "results.json";
  write_file_atomically(p, "old\n");
  // The temporary name is taken by a directory: creating it fails.
  fs::create_directory(d.path() / "results.json.tmp");
  try {
    write_file_atomically(p, "new\n");
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((d.path() / "results.json.tmp").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(read(p), "old\n");
}

TEST(AtomicFile, AFullDiskIsAnErrorNotAnEmptyFile) {
  // /dev/full fails every write with ENOSPC; its directory /dev cannot hold our temporary
  // file unless we are root, so write through a symlink whose .tmp is /dev/full.
  Dir d("atomic");
  const auto p = d.path() / "out.json";
  fs::create_symlink("/dev/full", d.path() / "out.json.tmp");
  EXPECT_THROW(write_file_atomically(p, "data\n"), std::runtime_error);
  EXPECT_FALSE(fs::exists(p));
}

TEST(AtomicFile, AnUnwritableDirectoryIsRefusedNamingIt) {
  Dir d("atomic");
  std::ofstream(d.path() / "file") << "x";
  const auto bad = d.path() / "file" / "out";
  try {
    check_writable_directory(bad);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
  check_writable_directory(d.path() / "new" / "dir");
  EXPECT_TRUE(fs::is_directory(d.path() / "new" / "dir"));
  EXPECT_TRUE(fs::is_empty(d.path() / "new" / "dir"));
}

}  // namespace
}  // namespace treefarm::metrics
