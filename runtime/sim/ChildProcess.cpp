#include "runtime/sim/ChildProcess.hpp"

#include <cerrno>
#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

namespace treefarm::sim {

void die_with_parent() { ::prctl(PR_SET_PDEATHSIG, SIGKILL); }

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace treefarm::sim
