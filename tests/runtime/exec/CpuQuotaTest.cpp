// runtime/exec/CpuQuota on control-group files written by the test (v1 and v2 layouts).
#include "runtime/exec/CpuQuota.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/TempDir.hpp"

namespace fs = std::filesystem;
using treefarm::exec::cpu_quota;
using treefarm::test_support::TempDir;

namespace {
void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}
}  // namespace

TEST(CpuQuota, V1QuotaOfTheGroupOrATighterAncestor) {
  TempDir d("cpuquota");
  const auto root = d.path() / "cg";
  write(d.path() / "cgroup", "12:memory:/x\n4:cpu,cpuacct:/emu/node1\n0::/\n");
  write(root / "cpu,cpuacct/emu/node1/cpu.cfs_quota_us", "30000");
  write(root / "cpu,cpuacct/emu/node1/cpu.cfs_period_us", "100000");
  write(root / "cpu,cpuacct/emu/cpu.cfs_quota_us", "-1");
  write(root / "cpu,cpuacct/emu/cpu.cfs_period_us", "100000");
  auto q = cpu_quota((d.path() / "cgroup").string(), root.string());
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 0.3);
  EXPECT_DOUBLE_EQ(q->period_seconds, 0.1);

  write(root / "cpu,cpuacct/emu/cpu.cfs_quota_us", "10000");
  write(root / "cpu,cpuacct/emu/cpu.cfs_period_us", "50000");
  q = cpu_quota((d.path() / "cgroup").string(), root.string());
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 0.2) << "the ancestor's quota is tighter";
  EXPECT_EQ(fs::path(q->group), root / "cpu,cpuacct/emu");
}

TEST(CpuQuota, V2CpuMaxAndNone) {
  TempDir d("cpuquota");
  const auto root = d.path() / "cg";
  write(d.path() / "cgroup", "0::/a/b\n");
  write(root / "a/b/cpu.max", "max 100000");
  EXPECT_FALSE(cpu_quota((d.path() / "cgroup").string(), root.string()).has_value());
  write(root / "a/cpu.max", "250000 200000");
  const auto q = cpu_quota((d.path() / "cgroup").string(), root.string());
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 1.25);
  EXPECT_DOUBLE_EQ(q->period_seconds, 0.2);
  EXPECT_FALSE(cpu_quota((d.path() / "missing").string(), root.string()).has_value());
  write(d.path() / "garbage", "no colons here\n3:cpu:\n");
  EXPECT_FALSE(cpu_quota((d.path() / "garbage").string(), root.string()).has_value());
}
