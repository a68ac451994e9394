// Tests of the [[app]] keys of a command application (docs/command-tasks.md).
#include <gtest/gtest.h>

#include <filesystem>
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


// Served submissions (docs/security.md): the wire's limits and a served master's file
// system are checked when the experiment is parsed, naming file, line and field.
TEST(CommandApp, AnArgumentTooLongForTheWireIsRefusedAtParseTimeNamingItsLineAndField) {
  const std::string big(5000, 'x');
  const auto err = error_of(with_app("kind = \"command\"\nbytes = 10\nargv = [\n  \"echo\",\n  \"" + big + "\"]\n"));
  EXPECT_NE(err.find("cmd.toml:10: field 'app[0].argv[1]'"), std::string::npos) << err.substr(0, 300);
  EXPECT_NE(err.find("5000 bytes"), std::string::npos) << err.substr(0, 300);
  // At the limit it parses.
  EXPECT_EQ(error_of(with_app("kind = \"command\"\nbytes = 10\nargv = [\"echo\", \"" + std::string(2048, 'x') + "\"]\n")), "");
  std::string many = "kind = \"command\"\nbytes = 10\nargv = [\"echo\"";
  for (int i = 0; i < 300; ++i) many += ", \"a\"";
  const auto count = error_of(with_app(many + "]\n"));
  EXPECT_NE(count.find("field 'app[0].argv'"), std::string::npos) << count;
  EXPECT_NE(count.find("301 elements; at most 256"), std::string::npos) << count;
}

TEST(CommandApp, ApplicationsThatDoNotFitInOneWelcomeAreRefusedAtTheFirstThatOverflows) {
  std::string text = "[[node]]\nname = \"m\"\ncores = 1\n";
  const std::string arg(2000, 'y');
  for (int k = 0; k < 40; ++k) {
    text += "[[app]]\nname = \"c" + std::to_string(k) + "\"\nkind = \"command\"\nbytes = 10\ntasks = 1\nargv = [\"echo\"";
    for (int i = 0; i < 2; ++i) text += ", \"" + arg + "\"";
    text += "]\n";
  }
  const auto err = error_of(text);
  // About 4,100 bytes an application (two 2,000-byte arguments): the 12th goes past the
  // 49,152 bytes a Welcome leaves for applications.
  EXPECT_NE(err.find("field 'app[11].argv'"), std::string::npos) << err;
  EXPECT_NE(err.find("at most 49152 bytes"), std::string::npos) << err;
}

TEST(CommandApp, ADotOrDotDotApplicationNameIsRefused) {
  for (const char* name : {".", ".."}) {
    const auto err = error_of("[[node]]\nname = \"m\"\n[[app]]\nname = \"" + std::string(name) +
                              "\"\nkernel = \"noop\"\nbytes = 8\ntasks = 1\n");
    EXPECT_NE(err.find("cmd.toml:4: field 'app[0].name'"), std::string::npos) << err;
    EXPECT_NE(err.find("not '.' or '..'"), std::string::npos) << err;
  }
  EXPECT_EQ(error_of("[[node]]\nname = \"m\"\n[[app]]\nname = \"a..b\"\nkernel = \"noop\"\nbytes = 8\ntasks = 1\n"), "");
}

TEST(CommandApp, AServedSubmissionReadsOnlyInputFilesInsideItsFolder) {
  test_support::TempDir dir("cmd-served");
  std::filesystem::create_directories(dir.path() / "job" / "data");
  std::ofstream(dir.path() / "job" / "data" / "in.txt") << "ok";
  std::ofstream(dir.path() / "secret") << "key";
  const auto exp = (dir.path() / "job" / "exp.toml").string();
  const ParseOptions served{.confine_inputs = true};
  const auto app = [](const std::string& input) {
    return with_app("kind = \"command\"\nargv = [\"cat\"]\ninput_file = \"" + input + "\"\n");
  };
  EXPECT_EQ(parse_experiment(app("data/in.txt"), exp, served).apps[0].input_bytes(), 2u);
  for (const std::string& bad : {(dir.path() / "secret").string(), std::string("../secret"), std::string("data/../../secret")}) {
    std::string err;
    try {
      parse_experiment(app(bad), exp, served);
    } catch (const FileError& e) {
      err = e.what();
    }
    EXPECT_NE(err.find("exp.toml:8: field 'app[0].input_file'"), std::string::npos) << bad << ": " << err;
    EXPECT_NE(err.find("only the files sent with the submission"), std::string::npos) << err;
    // Not confined (an operator's own run): the same file is read.
    EXPECT_EQ(parse_experiment(app(bad), exp).apps[0].input_bytes(), 3u) << bad;
  }
}

}  // namespace
}  // namespace treefarm::model
