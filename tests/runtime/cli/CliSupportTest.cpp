#include "runtime/cli/CliSupport.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/dashboard/Address.hpp"

namespace treefarm::cli_support {
namespace {

struct Parsed {
  std::optional<int> rc;
  std::string file;
  std::string address = "unset";
  std::size_t given = 0;
};

/// `program run [--dashboard [ADDRESS]] [--out DIR] [FILE]`, as `treefarm run` declares them.
Parsed parse_run(std::vector<std::string> words) {
  CLI::App app{"test"};
  auto* run = app.add_subcommand("run");
  Parsed p;
  std::string out;
  run->add_option("experiment", p.file);
  auto* dashboard = run->add_option("--dashboard", p.address)->expected(0, 1);
  run->add_option("--out", out);
  optional_value(*dashboard, dashboard::looks_like_address, dashboard::default_address);
  words.insert(words.begin(), "program");
  std::vector<const char*> argv;
  for (const auto& w : words) argv.push_back(w.c_str());
  p.rc = parse(app, static_cast<int>(argv.size()), argv.data());
  p.given = dashboard->count();
  return p;
}

TEST(OptionalValue, AWordWithoutTheShapeOfTheValueIsLeftToWhatFollows) {
  const auto p = parse_run({"run", "--dashboard", "exp.toml"});
  EXPECT_FALSE(p.rc);
  EXPECT_EQ(p.file, "exp.toml");
  EXPECT_EQ(p.address, dashboard::default_address);
  EXPECT_EQ(p.given, 1u);
}

TEST(OptionalValue, AWordWithTheShapeIsTheValue) {
  for (const std::string value : {"9000", "127.0.0.1:0", "[::1]:8080", "0.0.0.0:80"}) {
    const auto p = parse_run({"run", "--dashboard", value, "exp.toml"});
    EXPECT_FALSE(p.rc) << value;
    EXPECT_EQ(p.address, value);
    EXPECT_EQ(p.file, "exp.toml") << value;
  }
}

TEST(OptionalValue, NoValueBeforeAnotherOptionOrAtTheEnd) {
  auto p = parse_run({"run", "exp.toml", "--dashboard"});
  EXPECT_FALSE(p.rc);
  EXPECT_EQ(p.file, "exp.toml");
  EXPECT_EQ(p.given, 1u);
  p = parse_run({"run", "--dashboard", "--out", "d", "exp.toml"});
  EXPECT_FALSE(p.rc);
  EXPECT_EQ(p.file, "exp.toml");
  EXPECT_EQ(p.given, 1u);
  p = parse_run({"run", "--dashboard=9000", "exp.toml"});
  EXPECT_FALSE(p.rc);
  EXPECT_EQ(p.address, "9000");
}

}  // namespace
}  // namespace treefarm::cli_support
