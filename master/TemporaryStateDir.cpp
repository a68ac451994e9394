#include "master/TemporaryStateDir.hpp"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "master/ServeState.hpp"
#include "runtime/cli/CliSupport.hpp"

namespace treefarm::master {

TemporaryStateDir::TemporaryStateDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "treefarm-serve-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    throw std::runtime_error("cannot create a state folder " + tmpl + ": " + std::strerror(errno));
  path_ = tmpl;
}

TemporaryStateDir::~TemporaryStateDir() {
  std::size_t waiting = 0;
  try {
    waiting = JobStore(path_).restore().queue.size();
  } catch (const std::exception&) {
    // unreadable: nothing a restart could take up
  }
  if (waiting > 0) {
    std::cerr << cli_support::warning_message(std::to_string(waiting) + " experiment(s) not done are kept in " +
                                              path_.string() + ": treefarm-master --serve --state-dir " +
                                              path_.string() + " takes them up")
              << "\n";
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace treefarm::master
