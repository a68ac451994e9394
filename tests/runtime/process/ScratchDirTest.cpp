// runtime/process/ScratchDir: a command's own folder under $TMPDIR, mode 0700, gone with
// its content at the end (an exception included) unless kept.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>

#include "runtime/process/ScratchDir.hpp"

namespace fs = std::filesystem;
using treefarm::process::ScratchDir;

namespace {

/// Sets $TMPDIR for the test's life.
struct TmpDirEnv {
  fs::path dir;
  explicit TmpDirEnv(const fs::path& d) : dir(d) {
    fs::create_directories(dir);
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~TmpDirEnv() {
    ::unsetenv("TMPDIR");
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

fs::path fresh_parent() {
  return fs::temp_directory_path() / ("scratch-test-" + std::to_string(::getpid()) + "-" +
                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

}  // namespace

TEST(ScratchDir, IsMadeUnderTmpdirOnlyForItsOwnerAndGoesWithItsContent) {
  const TmpDirEnv env(fresh_parent());
  fs::path made;
  {
    const ScratchDir d("probe");
    made = d.path();
    EXPECT_EQ(made.parent_path(), env.dir);
    EXPECT_EQ(made.filename().string().rfind("treefarm-probe-", 0), 0u) << made;
    struct stat st {};
    ASSERT_EQ(::stat(made.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    fs::create_directories(d / "a" / "b");
    std::ofstream(d / "a" / "b" / "f.txt") << "x";
  }
  EXPECT_FALSE(fs::exists(made)) << made;
}

TEST(ScratchDir, GoesWhenAnErrorLeavesTheScope) {
  const TmpDirEnv env(fresh_parent());
  fs::path made;
  EXPECT_THROW(
      {
        const ScratchDir d("err");
        made = d.path();
        std::ofstream(d / "partial.json") << "{";
        throw std::runtime_error("failed half-way");
      },
      std::runtime_error);
  ASSERT_FALSE(made.empty());
  EXPECT_FALSE(fs::exists(made)) << made;
}

TEST(ScratchDir, StaysWhenKept) {
  const TmpDirEnv env(fresh_parent());
  fs::path made;
  {
    ScratchDir d("kept");
    made = d.path();
    std::ofstream(d / "results.json") << "{}";
    d.keep();
  }
  EXPECT_TRUE(fs::exists(made / "results.json")) << made;
}

TEST(ScratchDir, AnUnwritableParentIsNamedInTheError) {
  const TmpDirEnv env(fresh_parent() / "no" / "such");
  fs::remove_all(env.dir);
  try {
    const ScratchDir d("x");
    FAIL() << "made " << d.path();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(env.dir.string()), std::string::npos) << e.what();
  }
}
