// treefarm selects its BLAS kernel before OpenBLAS initialises: measured once per host
// and cached, honouring OPENBLAS_CORETYPE set by whoever starts the process.

#include <gtest/gtest.h>

#include <cmath>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "tests/support/Shell.hpp"

namespace {

const std::string treefarm = std::string(TREEFARM_BIN_DIR) + "/treefarm";

std::pair<int, std::string> run(const std::string& cmd) {
  auto r = treefarm::test_support::run_shell(cmd);
  return {r.exit_code, std::move(r.output)};
}

struct CacheDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("tf-blas-test-" + std::to_string(getpid()));
  CacheDir() { std::filesystem::create_directories(path); }
  ~CacheDir() { std::filesystem::remove_all(path); }
};

nlohmann::json blas_of(const std::string& env) {
  auto [status, out] = run(env + " " + treefarm + " hwdetect --json 2>/dev/null");
  EXPECT_EQ(status, 0) << out;
  return nlohmann::json::parse(out).at("blas");
}

}  // namespace

TEST(BlasSelect, MeasuresOnceCachesAndReusesTheChoice) {
  CacheDir dir;
  const std::string env = "env -u OPENBLAS_CORETYPE -u TREEFARM_BLAS_SELECT XDG_CACHE_HOME=" + dir.path.string();
  const auto first = blas_of(env);
  EXPECT_EQ(first.at("selected_by") == "measured" || first.at("selected_by") == "library", true) << first;
  const auto cache_file = dir.path / "treefarm" / "blas-kernel.json";
  ASSERT_TRUE(std::filesystem::exists(cache_file));
  const auto cache = nlohmann::json::parse(std::ifstream(cache_file));
  ASSERT_EQ(cache.size(), 1u);
  const auto entry = cache.begin().value();
  EXPECT_EQ(entry.at("kernel"), first.at("kernel"));
  // The choice is the fastest measured kernel over both sizes: the geometric mean of its
  // rates at n = 256 and at n = 32.
  EXPECT_EQ(entry.at("dgemm_n"), 256);
  EXPECT_EQ(entry.at("dgemm_small_n"), 32);
  double best = 0;
  std::string best_kernel;
  for (auto& [k, g] : entry.at("dgemm_gflops").items()) {
    ASSERT_TRUE(entry.at("dgemm_small_gflops").contains(k)) << k;
    const double score = std::sqrt(g.get<double>() * entry.at("dgemm_small_gflops").at(k).get<double>());
    if (score > best) best = score, best_kernel = k;
  }
  EXPECT_EQ(entry.at("kernel"), best_kernel);
  const auto second = blas_of(env);
  EXPECT_EQ(second.at("kernel"), first.at("kernel"));
  if (second.at("kernel") != entry.at("library_kernel")) {
    EXPECT_EQ(second.at("selected_by"), "cached");
  }
}

TEST(BlasSelect, OpenblasCoretypeFromTheCallerWins) {
  CacheDir dir;
  const auto b = blas_of("OPENBLAS_CORETYPE=Prescott XDG_CACHE_HOME=" + dir.path.string());
  EXPECT_EQ(b.at("kernel"), "Prescott");
  EXPECT_EQ(b.at("selected_by"), "environment");
  EXPECT_FALSE(std::filesystem::exists(dir.path / "treefarm" / "blas-kernel.json"));
}

TEST(BlasSelect, DisabledKeepsTheLibrarysChoice) {
  CacheDir dir;
  const auto b = blas_of("env -u OPENBLAS_CORETYPE TREEFARM_BLAS_SELECT=0 XDG_CACHE_HOME=" + dir.path.string());
  EXPECT_EQ(b.at("selected_by"), "library");
}
