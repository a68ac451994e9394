#include "tests/support/TempDir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace treefarm::test_support {

TempDir::TempDir(const std::string& label) {
  const std::string pattern =
      (std::filesystem::temp_directory_path() / ("treefarm-" + label + "-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    throw std::runtime_error("TempDir: mkdtemp(" + pattern + "): " + std::strerror(errno));
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;  // a destructor must not throw; a leftover is only untidy
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace treefarm::test_support
