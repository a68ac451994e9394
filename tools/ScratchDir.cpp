#include "tools/ScratchDir.hpp"

#include "runtime/cli/CliSupport.hpp"
#include "runtime/node/ExitCode.hpp"

namespace treefarm::tools {

int launch_benchmark_tree(const model::Experiment& ex, const LaunchOptions& options, const std::string& what) {
  const int rc = launch_tree(ex, options, cli_support::interrupted());
  if (rc == node::exit_interrupted || cli_support::interrupted())
    throw cli_support::Interrupted("interrupted; " + what + " stopped, nothing written");
  return rc;
}

}  // namespace treefarm::tools
