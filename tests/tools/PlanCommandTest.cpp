// `treefarm gen-machines` and `treefarm plan` end to end: the JSON object, the written
// experiment file (loads, and `treefarm predict` gives the planned throughput), errors
// naming file and line, exit code 4 when the QoS is not met.

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/model/Experiment.hpp"
#include "tests/support/Shell.hpp"

namespace {

const std::string treefarm = std::string(TREEFARM_BIN_DIR) + "/treefarm";

std::pair<int, std::string> run(const std::string& cmd) {
  auto r = treefarm::test_support::run_shell(cmd + " 2>&1");
  return {r.exit_code, std::move(r.output)};
}

class PlanCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("treefarm-plan-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "apps.toml") << "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 1024\ntasks = 100\n\n"
                                         "[[app]]\nname = \"add\"\nkernel = \"matadd\"\nn = 512\ntasks = 100\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(PlanCommand, GeneratesPlansAndWritesAnExperimentThatPredictsTheSame) {
  auto [rc, text] = run(treefarm + " gen-machines --machines 6 --lans 2 --seed 4 --out " + path("m.toml"));
  ASSERT_EQ(rc, 0) << text;
  for (const char* method : {"rmshc", "qlse", "greedy", "exhaustive"}) {
    const std::string out = path(std::string(method) + ".toml");
    auto [prc, json_text] = run(treefarm + " plan " + path("m.toml") + " --apps " + path("apps.toml") + " --method " +
                                method + " --json --out " + out);
    ASSERT_EQ(prc, 0) << json_text;
    const auto j = nlohmann::json::parse(json_text);
    EXPECT_EQ(j["method"], method);
    ASSERT_TRUE(j.contains("fair_throughput"));
    ASSERT_TRUE(j.contains("seconds"));
    EXPECT_GT(j["fair_throughput"].get<double>(), 0);
    const auto ex = treefarm::model::load_experiment(out);
    EXPECT_EQ(ex.nodes.size(), j["tree"].size());
    auto [qrc, pred] = run(treefarm + " predict " + out + " --json");
    ASSERT_EQ(qrc, 0) << pred;
    EXPECT_NEAR(nlohmann::json::parse(pred)["fair_throughput"].get<double>(), j["fair_throughput"].get<double>(),
                1e-9 * j["fair_throughput"].get<double>());
  }
}

TEST_F(PlanCommand, ExitCodeTwoWhenTheQosCannotBeMet) {
  ASSERT_EQ(run(treefarm + " gen-machines --machines 4 --lans 2 --seed 1 --out " + path("m.toml")).first, 0);
  auto [rc, text] = run(treefarm + " plan " + path("m.toml") + " --apps " + path("apps.toml") +
                        " --method qlse --qos 1e6 --out " + path("never.toml"));
  EXPECT_EQ(rc, 4) << text;  // exit_wrong_results (runtime/node/ExitCode.hpp)
  EXPECT_NE(text.find("QoS is not met"), std::string::npos) << text;
  EXPECT_FALSE(std::filesystem::exists(path("never.toml")));
}

TEST_F(PlanCommand, BadMachinesFileNamesFileLineAndField) {
  std::ofstream(path("bad.toml")) << "[[lan]]\nname = \"a\"\nbandwidth = \"1Gbps\"\n\n[[machine]]\nname = \"x\"\n"
                                     "lan = \"a\"\nspeed = \"quick\"\n";
  auto [rc, text] = run(treefarm + " plan " + path("bad.toml") + " --apps " + path("apps.toml"));
  EXPECT_EQ(rc, 3);  // exit_bad_input (runtime/node/ExitCode.hpp)
  EXPECT_NE(text.find("bad.toml:8"), std::string::npos) << text;
  EXPECT_NE(text.find("machine[0].speed"), std::string::npos) << text;
}

}  // namespace
