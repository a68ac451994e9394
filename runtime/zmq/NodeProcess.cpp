#include "runtime/zmq/NodeProcess.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <sys/resource.h>

namespace treefarm::zmq_node {

void raise_descriptor_limit() {
  if (rlimit lim{}; getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &lim);
  }
}

void write_ready_file(const std::string& path, const std::string& endpoint) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << endpoint << "\n";
    if (!f) throw std::runtime_error("cannot write the ready file " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace treefarm::zmq_node
