#include "runtime/process/KernelFile.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace treefarm::process {
namespace {

namespace fs = std::filesystem;

TEST(KernelFile, ReadsTheTextWithoutTrailingNewlinesOrSpaces) {
  const fs::path dir = fs::temp_directory_path() / ("kernelfile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "cpuset.cpus") << "0-1 \n\n";
  std::ofstream(dir / "cgroup.procs") << "12\n34\n";
  EXPECT_EQ(read_kernel_file((dir / "cpuset.cpus").string()), "0-1");
  EXPECT_EQ(read_kernel_file((dir / "cgroup.procs").string()), "12\n34");  // inner lines kept
  fs::remove_all(dir);
}

TEST(KernelFile, AMissingFileReadsEmpty) {
  EXPECT_EQ(read_kernel_file("/nonexistent/cgroup.procs"), "");
}

TEST(KernelFile, ReadsARealKernelFile) {
  // /proc/self/stat starts with this process's pid: what a kernel file holds, not "".
  const std::string stat = read_kernel_file("/proc/self/stat");
  EXPECT_EQ(stat.substr(0, stat.find(' ')), std::to_string(::getpid()));
}

}  // namespace
}  // namespace treefarm::process
