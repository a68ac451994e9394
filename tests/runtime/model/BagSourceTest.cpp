// Tests of the bags with their own inputs (runtime/model/BagSource, BagKeys;
// docs/command-tasks.md, "One task per file, per line, per number").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/model/BagSource.hpp"
#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::model {
namespace {

namespace fs = std::filesystem;

std::string experiment(const std::string& app) {
  return "[[node]]\nname = \"m\"\ncores = 1\n[[app]]\nname = \"c\"\nkind = \"command\"\n" + app;
}

/// The FileError message of parsing `text` at `path` ("" if it parsed).
std::string error_of(const std::string& text, const std::string& path) {
  try {
    parse_experiment(text, path);
  } catch (const FileError& e) {
    return e.what();
  }
  return "";
}

std::string value_of(const std::vector<TaskField>& fields, const std::string& key) {
  for (const auto& [k, v] : fields)
    if (k == key) return v;
  return "<none>";
}

TEST(BagSource, ArrayRangesStepsAndLists) {
  const auto a = BagSource::array(parse_array("1-1000"));
  EXPECT_EQ(a.count(), 1000u);
  EXPECT_EQ(a.number(0), 1u);
  EXPECT_EQ(a.number(999), 1000u);
  const auto s = BagSource::array(parse_array("1-1000:10"));
  EXPECT_EQ(s.count(), 100u);
  EXPECT_EQ(s.number(1), 11u);
  EXPECT_EQ(s.number(99), 991u);
  const auto l = BagSource::array(parse_array("1,5,9-12"));
  ASSERT_EQ(l.count(), 6u);
  std::vector<std::uint64_t> got;
  for (std::uint64_t i = 0; i < l.count(); ++i) got.push_back(l.number(i));
  EXPECT_EQ(got, (std::vector<std::uint64_t>{1, 5, 9, 10, 11, 12}));
  EXPECT_EQ(value_of(l.fields(2), "index"), "9");
  for (const char* bad : {"", "5-1", "1-10:0", "a-3", "1,,2", "7:2", "1-"})
    EXPECT_THROW(parse_array(bad), std::invalid_argument) << bad;
}

TEST(BagSource, CsvFieldsQuotesAndMistakes) {
  EXPECT_EQ(split_csv("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_csv("\"x, y\",\"say \"\"hi\"\"\",,z"), (std::vector<std::string>{"x, y", "say \"hi\"", "", "z"}));
  EXPECT_EQ(split_csv(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_csv("a,"), (std::vector<std::string>{"a", ""}));
  EXPECT_THROW(split_csv("\"open"), std::invalid_argument);
  EXPECT_THROW(split_csv("\"a\"b"), std::invalid_argument);
  EXPECT_THROW(split_csv("a\"b"), std::invalid_argument);
}

TEST(BagSource, LinesAreReadWhenAskedAndBlankLinesMakeNoTask) {
  test_support::TempDir dir("bag-lines");
  const auto path = (dir.path() / "p.txt").string();
  std::ofstream(path) << "alpha 1\n\nbeta 2\r\n   \ngamma 3";
  const auto b = BagSource::lines(path, false);
  ASSERT_EQ(b.count(), 3u);
  EXPECT_EQ(b.line(0), "alpha 1");
  EXPECT_EQ(b.line(1), "beta 2");
  EXPECT_EQ(b.line(2), "gamma 3");
  EXPECT_EQ(value_of(b.fields(1), "line"), "beta 2");
  EXPECT_EQ(value_of(b.fields(1), "index"), "1");
  std::vector<std::byte> in;
  b.read_input(2, in, 1000);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(in.data()), in.size()), "gamma 3\n");
  EXPECT_EQ(b.total_bytes(), 8u + 7u + 8u);
}

TEST(BagSource, CsvHeaderNamesThePlaceholders) {
  test_support::TempDir dir("bag-csv");
  const auto path = (dir.path() / "p.csv").string();
  std::ofstream(path) << "seed,label\n1,\"a, b\"\n2,c\n";
  const auto b = BagSource::lines(path, true);
  ASSERT_EQ(b.count(), 2u);
  EXPECT_EQ(b.header(), (std::vector<std::string>{"seed", "label"}));
  EXPECT_EQ(value_of(b.fields(0), "label"), "a, b");
  EXPECT_EQ(value_of(b.fields(1), "seed"), "2");
  std::ofstream(path) << "seed,label\n1,a\n2\n";
  try {
    BagSource::lines(path, true);
    FAIL() << "a record with one field of two was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("line 3: 1 fields; the header has 2"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "seed,index\n1,2\n";
  EXPECT_THROW(BagSource::lines(path, true), std::invalid_argument);
}

TEST(BagSource, PlaceholdersAndOutputNames) {
  const std::vector<TaskField> f{{"name", "a.txt"}, {"stem", "a"}, {"index", "7"}};
  EXPECT_EQ(expand_placeholders("{stem}.gz", f), "a.gz");
  EXPECT_EQ(expand_placeholders("awk '{print $1}' {name}", f), "awk '{print $1}' a.txt");
  EXPECT_EQ(expand_placeholders("${HOME}/{index}{", f), "${HOME}/7{");
  EXPECT_EQ(output_name("{line}.out", {{"line", "../etc/x"}}), "_._etc_x.out");
  EXPECT_EQ(output_name("{line}", {{"line", ".hidden"}}), "_hidden");
  EXPECT_EQ(placeholders_in("{a}-{b_c} {not one} ${x}"), (std::vector<std::string>{"a", "b_c", "x"}));
}

TEST(BagKeys, InputsGlobGivesATaskPerFileAndTheMeanSize) {
  test_support::TempDir dir("bag-glob");
  fs::create_directories(dir.path() / "data");
  std::ofstream(dir.path() / "data" / "b.txt") << std::string(300, 'b');
  std::ofstream(dir.path() / "data" / "a.txt") << std::string(100, 'a');
  std::ofstream(dir.path() / "data" / "c.log") << "c";
  const auto e = parse_experiment(experiment("argv = [\"gzip\", \"-c\", \"{input}\"]\ninputs = \"data/*.txt\"\n"
                                             "output_file = \"{stem}.gz\"\n"),
                                  (dir.path() / "x.toml").string());
  const auto& a = e.apps.at(0);
  ASSERT_TRUE(a.bag);
  EXPECT_EQ(a.tasks, 2u);
  EXPECT_EQ(a.input_bytes(), 200u) << "the mean input size";
  EXPECT_TRUE(a.task_fields);
  EXPECT_EQ(fs::path(a.bag->paths()[0]).filename(), "a.txt") << "matches in order";
  EXPECT_EQ(value_of(a.bag->fields(1), "stem"), "b");
  std::vector<std::byte> in;
  a.bag->read_input(1, in, 1000);
  EXPECT_EQ(in.size(), 300u);
  EXPECT_THROW(a.bag->read_input(1, in, 299), std::runtime_error) << "over the limit: refused naming the file";
}

TEST(BagKeys, MistakesNameTheFileLineAndField) {
  test_support::TempDir dir("bag-bad");
  const auto file = (dir.path() / "x.toml").string();
  std::ofstream(dir.path() / "a.txt") << "1";
  std::ofstream(dir.path() / "a.csv") << "2";
  const auto has = [&](const std::string& app, const std::string& what) {
    const auto msg = error_of(experiment(app), file);
    EXPECT_NE(msg.find(what), std::string::npos) << "got: " << msg;
  };
  has("argv = [\"cat\"]\narray = \"5-1\"\n", "x.toml:8: field 'app[0].array': '5-1': the range ends before it starts");
  has("argv = [\"cat\"]\ninputs = \"none/*.txt\"\n", "field 'app[0].inputs': 'none/*.txt' matches no file");
  has("argv = [\"cat\"]\narray = \"1-3\"\ntasks = 3\n", "field 'app[0].tasks': not with 'array'");
  has("argv = [\"cat\"]\narray = \"1-3\"\nlines = \"p.txt\"\n", "give one of 'inputs', 'lines' or 'array'");
  has("argv = [\"cat\"]\ninputs = \"*.*\"\noutput_file = \"{stem}.gz\"\n", "two input files give the output name 'a.gz'");
  has("argv = [\"cat\"]\narray = \"1-3\"\noutput_file = \"{stme}.gz\"\n", "unknown placeholder {stme}");
  has("argv = [\"cat\"]\nbytes = 3\ntasks = 2\ncsv = true\n", "field 'app[0].csv': only with 'lines'");
  has("argv = [\"cat\"]\nlines = \"missing.txt\"\n", "field 'app[0].lines'");
  has("argv = [\"cat\"]\narray = \"1-3\"\nmax_retries = 101\n", "field 'app[0].max_retries'");
  // A served master reads only what came with the submission.
  try {
    parse_experiment(experiment("argv = [\"cat\"]\ninputs = \"/etc/*.conf\"\n"), file, {.confine_inputs = true});
    FAIL() << "an absolute glob was accepted on a served master";
  } catch (const FileError& e) {
    EXPECT_EQ(e.field(), "app[0].inputs");
  }
  EXPECT_THROW(parse_experiment(experiment("argv = [\"cat\"]\nlines = \"../p.txt\"\n"), file, {.confine_inputs = true}),
               FileError);
}

TEST(BagKeys, ArrayOfAMillionHoldsOnlyItsRanges) {
  const auto e = parse_experiment(experiment("argv = [\"true\"]\narray = \"1-1000000\"\nmax_retries = 2\n"), "x.toml");
  EXPECT_EQ(e.apps[0].tasks, 1'000'000u);
  EXPECT_EQ(e.apps[0].input_bytes(), 0u);
  EXPECT_EQ(e.apps[0].max_retries, 2u);
  EXPECT_EQ(e.apps[0].bag->number(999'999), 1'000'000u);
}

}  // namespace
}  // namespace treefarm::model
