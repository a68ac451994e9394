// Tests of tasks/CommandTask: the application kind `command`.
#include "tasks/CommandTask.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tasks/Checksum.hpp"
#include "tasks/Payload.hpp"
#include "tasks/TaskRunner.hpp"
#include "tests/support/Affinity.hpp"
#include "tests/support/TempDir.hpp"
#include "tests/support/TestApps.hpp"

namespace treefarm::tasks {
namespace {

using test_support::command;

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// sha256sum of "hello\n".
constexpr const char* hello_sha256 = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

TEST(CommandTask, ExpandArgvReplacesEveryFieldInsideArguments) {
  const auto out = expand_argv({"x{index}y", "{input}", "-o{output}", "{unknown}", "{index}{index}"}, 42, "/i", "/o");
  EXPECT_EQ(out, (std::vector<std::string>{"x42y", "/i", "-o/o", "{unknown}", "4242"}));
}

TEST(CommandTask, StandardOutputIsTheOutputAndItsDigestIsSha256) {
  const auto o = run_command(command({"cat"}), bytes_of("hello\n"), 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_EQ(o.exit_status, 0);
  EXPECT_EQ(o.sha256, hello_sha256);
  EXPECT_EQ(o.output_bytes, 6u);
  EXPECT_EQ(o.checksum, sha256_checksum(hello_sha256));
  EXPECT_GT(o.checksum, 0.0);
}

TEST(CommandTask, OutputFileTemplateIsTheOutputAndInputFileHoldsTheInput) {
  const auto o = run_command(command({"sh", "-c", "cp {input} {output}; echo noise"}), bytes_of("hello\n"), 7, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_EQ(o.sha256, hello_sha256);  // the file, not stdout ("noise")
}

TEST(CommandTask, IndexReachesTheProgram) {
  const auto o = run_command(command({"sh", "-c", "echo hell{index}"}), {}, 0, {});
  const auto p = run_command(command({"sh", "-c", "echo hell{index}"}), {}, 1, {});
  ASSERT_FALSE(o.failed || p.failed);
  EXPECT_NE(o.sha256, p.sha256);
}

TEST(CommandTask, NonZeroExitFailsWithStatusAndStderr) {
  const auto o = run_command(command({"sh", "-c", "echo out; echo 'disk on fire' >&2; exit 3"}), {}, 0, {});
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.exit_status, 3);
  EXPECT_NE(o.error.find("exit status 3"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find("disk on fire"), std::string::npos) << o.error;
  EXPECT_EQ(o.error.find("out"), std::string::npos) << "stdout is not the error: " << o.error;
}

TEST(CommandTask, FalseFailsAndAMissingProgramFailsWithoutThrowing) {
  EXPECT_TRUE(run_command(command({"false"}), {}, 0, {}).failed);
  const auto o = run_command(command({"/nonexistent/treefarm-no-such-program"}), {}, 0, {});
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.error.find("cannot run"), std::string::npos) << o.error;
}

TEST(CommandTask, LongStderrKeepsItsTail) {
  const auto o = run_command(command({"sh", "-c", "i=0; while [ $i -lt 500 ]; do echo line$i >&2; i=$((i+1)); done; "
                                                  "echo LAST >&2; exit 1"}),
                             {}, 0, {});
  ASSERT_TRUE(o.failed);
  EXPECT_NE(o.error.find("LAST"), std::string::npos);
  EXPECT_LE(o.error.size(), max_error_bytes + 100);
}

TEST(CommandTask, TimeoutKillsTheWholeProcessGroup) {
  auto app = command({"sh", "-c", "sleep 30 & sleep 30"});
  app.timeout = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = run_command(app, {}, 0, {});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.error.find("timed out"), std::string::npos) << o.error;
  EXPECT_LT(took, 10.0);
}

TEST(CommandTask, ExpectedDigestIsChecked) {
  auto app = command({"cat"});
  app.expect_digest = hello_sha256;
  EXPECT_FALSE(run_command(app, bytes_of("hello\n"), 0, {}).failed);
  const auto o = run_command(app, bytes_of("hullo\n"), 0, {});
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.error.find("expected " + std::string(hello_sha256)), std::string::npos) << o.error;
}

TEST(CommandTask, ProgramIsPinnedToTheGivenCoresAndTheCallerKeepsItsAffinity) {
  const auto cpus = test_support::affinity_cpus();
  const int cpu = cpus.back();
  auto app = command({"grep", "Cpus_allowed_list", "/proc/self/status"});
  app.send_output = true;
  const auto o = run_command(app, {}, 0, std::vector<int>{cpu});
  ASSERT_FALSE(o.failed) << o.error;
  ASSERT_NE(o.output, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(o.output->data()), o.output->size()),
            "Cpus_allowed_list:\t" + std::to_string(cpu) + "\n");
  cpu_set_t now;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof now, &now), 0);
  EXPECT_EQ(static_cast<std::size_t>(CPU_COUNT(&now)), cpus.size()) << "the calling thread's affinity is untouched";
}

TEST(CommandTask, GeneratedInputIsDeterministicTextOfTheRightSize) {
  auto app = command({"cat"});
  app.bytes = 10000;
  std::vector<std::byte> a, b, c;
  fill_input(app, 1, 0, 0, a);
  fill_input(app, 1, 0, 0, b);
  fill_input(app, 2, 0, 0, c);
  ASSERT_EQ(a.size(), 10000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (auto x : a) {
    const char ch = static_cast<char>(x);
    ASSERT_TRUE((ch >= 'a' && ch <= 'z') || ch == ' ' || ch == '\n') << int(ch);
  }
}

TEST(CommandTask, InputFileIsEveryTasksInput) {
  test_support::TempDir dir("cmd-input");
  const auto file = dir.path() / "in.txt";
  std::ofstream(file) << "hello\n";
  auto app = command({"cat"});
  app.input_file = file.string();
  app.bytes = 6;
  std::vector<std::byte> in;
  fill_input(app, 9, 0, 0, in);
  EXPECT_EQ(in, bytes_of("hello\n"));
  app.bytes = 7;  // the file changed size since the experiment was read
  EXPECT_THROW(fill_input(app, 9, 0, 0, in), std::runtime_error);
}

TEST(CommandTask, RunTaskRunsTheCommandAndThrowsItsFailure) {
  const auto in = bytes_of("hello\n");
  auto cat = command({"cat"});
  cat.bytes = in.size();  // run_task checks the input's size as for every kernel
  EXPECT_EQ(run_task(cat, in, nullptr), sha256_checksum(hello_sha256));
  try {
    run_task(command({"sh", "-c", "echo bad >&2; exit 2"}), {}, nullptr);
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad"), std::string::npos);
  }
  auto app = command({"cat"});
  EXPECT_TRUE(checksum_matches(sha256_checksum(hello_sha256), sha256_checksum(hello_sha256), app));
  EXPECT_FALSE(checksum_matches(sha256_checksum(hello_sha256), sha256_checksum(hello_sha256) + 1, app));
}

// Output files (docs/command-tasks.md): with send_output the output's bytes are kept.
TEST(CommandTask, SentBackOutputKeepsItsBytesAndTheirDigest) {
  auto app = command({"sh", "-c", "cp {input} {output}"});
  app.send_output = true;
  const auto o = run_command(app, bytes_of("hello\n"), 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  ASSERT_NE(o.output, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(o.output->data()), o.output->size()), "hello\n");
  EXPECT_EQ(o.sha256, hello_sha256);
  EXPECT_EQ(sha256_hex(*o.output), hello_sha256);
  EXPECT_EQ(o.output_bytes, 6u);

  auto kept_nothing = command({"cat"});  // without send_output only the digest is kept
  EXPECT_EQ(run_command(kept_nothing, bytes_of("hello\n"), 0, {}).output, nullptr);

  auto empty = command({"true"});  // an empty output is an output of 0 bytes
  empty.send_output = true;
  const auto e = run_command(empty, {}, 0, {});
  ASSERT_FALSE(e.failed) << e.error;
  ASSERT_NE(e.output, nullptr);
  EXPECT_TRUE(e.output->empty());
}

TEST(CommandTask, AnOutputOverTheLimitFailsTheTaskAndIsNotKept) {
  auto app = command({"sh", "-c", "head -c 5000 /dev/zero"});
  app.send_output = true;
  app.max_output_bytes = 4999;
  const auto o = run_command(app, {}, 0, {});
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.output, nullptr);
  EXPECT_NE(o.error.find("output over max_output_bytes 4999"), std::string::npos) << o.error;
  app.max_output_bytes = 5000;  // at the limit: kept
  const auto p = run_command(app, {}, 0, {});
  ASSERT_FALSE(p.failed) << p.error;
  EXPECT_EQ(p.output->size(), 5000u);
}

}  // namespace
}  // namespace treefarm::tasks
