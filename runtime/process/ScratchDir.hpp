#pragma once
/// @file ScratchDir.hpp
/// A folder of a command's own: $TMPDIR/treefarm-WHAT-XXXXXX (else under /tmp, as
/// mkdtemp(1) does), mode 0700, removed with its content when the object goes — an error
/// or an interruption included — unless keep() was called (a run's results or a failed
/// run's logs that the user is told about).

#include <filesystem>
#include <string>

namespace treefarm::process {

class ScratchDir {
 public:
  /// Makes the folder. @throws std::runtime_error naming it and the system's reason.
  explicit ScratchDir(const std::string& what);
  ~ScratchDir();  ///< Removes it with its content (errors ignored) unless kept.
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  /// The folder stays when the object goes.
  void keep() { keep_ = true; }

  const std::filesystem::path& path() const { return path_; }
  operator const std::filesystem::path&() const { return path_; }  // NOLINT: used as the path it is
  std::string string() const { return path_.string(); }
  friend std::filesystem::path operator/(const ScratchDir& d, const std::filesystem::path& p) { return d.path_ / p; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

}  // namespace treefarm::process
