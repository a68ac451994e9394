// Tests of the [[app]] keys of a command application (issue 20; docs/command-tasks.md).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::model {
namespace {

std::string with_app(const std::string& app) {
  return "[[node]]\nname = \"m\"\ncores = 1\n[[app]]\nname = \"c\"\n" + app + "tasks = 3\n";
}

/// The FileError message of parsing `text` ("" if it parsed).
std::string error_of(const std::string& text, const std::string& path = "cmd.toml") {
  try {
    parse_experiment(text, path);
  } catch (const FileError& e) {
    return e.what();
  }
  return "";
}

TEST(CommandApp, KindCommandWithGeneratedInput) {
  const auto e = parse_experiment(
      with_app("kind = \"command\"\nargv = [\"gzip\", \"-9\", \"{input}\"]\nbytes = \"4KiB\"\ntimeout = 2.5\n"
               "expect_digest = \"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\"\n"),
      "cmd.toml");
  const AppSpec& a = e.apps.at(0);
  EXPECT_EQ(a.kernel, Kernel::command);
  EXPECT_EQ(a.argv, (std::vector<std::string>{"gzip", "-9", "{input}"}));
  EXPECT_EQ(a.input_bytes(), 4096u);
  EXPECT_EQ(a.task_flops(), 0.0);
  EXPECT_EQ(a.timeout, 2.5);
  EXPECT_EQ(a.expect_digest.size(), 64u);
  EXPECT_FALSE(a.spot_check);
  EXPECT_EQ(to_string(Kernel::command), "command");
}

TEST(CommandApp, InputFileIsResolvedAgainstTheExperimentsFolderAndSetsBytes) {
  test_support::TempDir dir("cmd-app");
  std::ofstream(dir.path() / "data.txt") << "0123456789";
  const auto e = parse_experiment(with_app("kernel = \"command\"\nargv = [\"cat\"]\ninput_file = \"data.txt\"\n"
                                           "spot_check = true\n"),
                                  (dir.path() / "exp.toml").string());
  EXPECT_EQ(e.apps[0].input_file, (dir.path() / "data.txt").string());
  EXPECT_EQ(e.apps[0].input_bytes(), 10u);
  EXPECT_TRUE(e.apps[0].spot_check);
}

TEST(CommandApp, MistakesNameTheLineAndField) {
  EXPECT_NE(error_of(with_app("kind = \"command\"\nbytes = 1\n")).find("field 'app[0].argv': missing"),
            std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = \"gzip -9\"\nbytes = 1\n")).find("cmd.toml:7: field 'app[0].argv'"),
            std::string::npos)
      << error_of(with_app("kind = \"command\"\nargv = \"gzip -9\"\nbytes = 1\n"));
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"\"]\nbytes = 1\n")).find("must name a program"),
            std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"gzip\", 9]\nbytes = 1\n")).find("app[0].argv[1]"),
            std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"cat\"]\n")).find("app[0].bytes"), std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"cat\"]\nbytes = 1\nexpect_digest = \"abc\"\n"))
                .find("app[0].expect_digest"),
            std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"cat\"]\nbytes = 1\ntimeout = -1\n")).find("app[0].timeout"),
            std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"cat\"]\ninput_file = \"/nonexistent/x\"\n"))
                .find("app[0].input_file"),
            std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nkernel = \"command\"\nargv = [\"cat\"]\nbytes = 1\n")).find("app[0].kind"),
            std::string::npos);
  // Command keys on a kernel application are errors, not ignored.
  EXPECT_NE(error_of(with_app("kernel = \"noop\"\nbytes = 1\nargv = [\"cat\"]\n")).find("app[0].argv"), std::string::npos);
  EXPECT_NE(error_of(with_app("kind = \"command\"\nargv = [\"cat\"]\nbytes = 1\nn = 3\n")).find("app[0].n"),
            std::string::npos);
}

TEST(CommandApp, ExampleFileParses) {
  const auto e = load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/command-gzip.toml");
  ASSERT_EQ(e.apps.size(), 1u);
  EXPECT_EQ(e.apps[0].kernel, Kernel::command);
  EXPECT_EQ(e.apps[0].argv.at(0), "gzip");
}

}  // namespace
}  // namespace treefarm::model
