#include "tools/ScratchDir.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <stdlib.h>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/node/ExitCode.hpp"

namespace treefarm::tools {

ScratchDir::ScratchDir(const std::string& what) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("treefarm-" + what + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory " + tmpl + ": " + std::strerror(errno));
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

int launch_benchmark_tree(const model::Experiment& ex, const LaunchOptions& options, const std::string& what) {
  const int rc = launch_tree(ex, options, cli_support::interrupted());
  if (rc == node::exit_interrupted || cli_support::interrupted())
    throw cli_support::Interrupted("interrupted; " + what + " stopped, nothing written");
  return rc;
}

}  // namespace treefarm::tools
