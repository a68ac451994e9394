#pragma once
/// @file ScratchDir.hpp
/// A command's scratch folder and its benchmark runs under Ctrl-C: the folder is
/// $TMPDIR/treefarm-WHAT-XXXXXX (else under /tmp) and goes with its content when the object
/// goes, an error or an interruption included; a tree a benchmark starts for itself stops
/// on Ctrl-C (cli_support::interrupted()) and the benchmark ends with exit 130.

#include <filesystem>
#include <string>

#include "tools/TreeLauncher.hpp"

namespace treefarm::tools {

class ScratchDir {
 public:
  /// Makes the folder. @throws std::runtime_error naming it.
  explicit ScratchDir(const std::string& what);
  ~ScratchDir();  ///< Removes it with its content (errors ignored).
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  operator const std::filesystem::path&() const { return path_; }  // NOLINT: used as the path it is
  std::string string() const { return path_.string(); }
  friend std::filesystem::path operator/(const ScratchDir& d, const std::filesystem::path& p) { return d.path_ / p; }

 private:
  std::filesystem::path path_;
};

/// launch_tree() of a benchmark's own run, stopped by Ctrl-C; its exit code, or
/// cli_support::Interrupted ("interrupted; WHAT stopped, nothing written") once stopped.
int launch_benchmark_tree(const model::Experiment& ex, const LaunchOptions& options, const std::string& what);

}  // namespace treefarm::tools
