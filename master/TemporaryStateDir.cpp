#include "master/TemporaryStateDir.hpp"

#include <iostream>
#include <string>

#include "master/ServeState.hpp"
#include "runtime/cli/CliSupport.hpp"

namespace treefarm::master {

TemporaryStateDir::TemporaryStateDir() = default;

TemporaryStateDir::~TemporaryStateDir() {
  std::size_t waiting = 0;
  try {
    waiting = JobStore(path()).restore().queue.size();
  } catch (const std::exception&) {
    // unreadable: nothing a restart could take up
  }
  if (waiting > 0) {
    std::cerr << cli_support::warning_message(std::to_string(waiting) + " experiment(s) not done are kept in " +
                                              path().string() + ": treefarm-master --serve --state-dir " +
                                              path().string() + " takes them up")
              << "\n";
    dir_.keep();
  }
}

}  // namespace treefarm::master
