#include "runtime/process/ScratchDir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <stdlib.h>

namespace treefarm::process {

ScratchDir::ScratchDir(const std::string& what) {
  std::error_code ec;
  const auto parent = std::filesystem::temp_directory_path(ec);
  if (ec) {
    const char* env = std::getenv("TMPDIR");
    throw std::runtime_error("cannot create a temporary directory in " + std::string(env ? env : "/tmp") +
                             " ($TMPDIR): " + ec.message());
  }
  std::string tmpl = (parent / ("treefarm-" + what + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory " + tmpl + ": " + std::strerror(errno));
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  if (keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace treefarm::process
