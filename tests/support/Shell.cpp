#include "tests/support/Shell.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>

namespace treefarm::test_support {

ShellResult run_shell(const std::string& command) {
  ShellResult r;
  std::FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  if (status == -1) return r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace treefarm::test_support
