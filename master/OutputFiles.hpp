#pragma once
/// @file OutputFiles.hpp
/// The output files of command applications on the master (docs/command-tasks.md,
/// "Output files"): OUT/outputs/APP/NAME, written as NAME.part then renamed, both opened
/// with O_NOFOLLOW | O_EXCL (a symbolic link planted under either name is never written
/// through), under a quota of bytes per experiment.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace treefarm::master {

class OutputFiles {
 public:
  /// Outputs go under `out_dir`/outputs/; at most `quota` bytes in all (0: no output kept).
  OutputFiles(std::filesystem::path out_dir, std::uint64_t quota);
  /// Writes `bytes` as outputs/`app`/`name` (both plain names, checked when the experiment
  /// was parsed). False, writing nothing, when the quota would be exceeded (and for every
  /// output after that one). Throws
  /// std::runtime_error naming the file when it cannot be written.
  bool write(const std::string& app, const std::string& name, std::span<const std::byte> bytes);
  std::uint64_t written() const { return written_; }  ///< bytes
  std::uint64_t quota() const { return quota_; }       ///< bytes
  bool over_quota() const { return over_quota_; }     ///< an output was refused for the quota

  /// The whole output files under `out_dir`/outputs/ as (application, file), sorted; a
  /// NAME.part still being written is left out.
  static std::vector<std::pair<std::string, std::filesystem::path>> finished(const std::filesystem::path& out_dir);

 private:
  std::filesystem::path dir_;
  std::uint64_t quota_;
  std::uint64_t written_ = 0;
  bool over_quota_ = false;
};

}  // namespace treefarm::master
