#pragma once
/// @file TempDir.hpp
/// A fresh temporary directory for one test, removed with everything in it when the
/// object goes. Shared by all tests (tests/support, target treefarm::test_support).

#include <filesystem>
#include <string>

namespace treefarm::test_support {

class TempDir {
 public:
  /// Creates /tmp/treefarm-<label>-XXXXXX (mkdtemp: unique, mode 0700); throws
  /// std::runtime_error naming the template if that fails.
  explicit TempDir(const std::string& label = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace treefarm::test_support
