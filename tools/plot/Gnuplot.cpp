#include "tools/plot/Gnuplot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "runtime/process/Spawn.hpp"

namespace treefarm::plot {

namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

bool gnuplot_available() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((fs::path(dir) / "gnuplot").c_str(), X_OK) == 0) return true;
  return false;
}

std::string run_gnuplot(const fs::path& script, const fs::path& log) {
  if (!gnuplot_available()) return "gnuplot is not installed (Debian package gnuplot-nox): no plot";
  const fs::path sink = log.empty() ? fs::path("/dev/null") : log;
  const int fd = ::open(sink.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot write " + sink.string() + ": " + std::strerror(errno);
  process::ChildSetup setup;
  setup.stdin_null = true;
  setup.stdout_fd = fd;
  setup.stderr_fd = fd;
  setup.default_signals = true;
  int status = -1;
  try {
    const pid_t pid = process::spawn({"gnuplot", script.string()}, setup);
    ::close(fd);
    status = process::wait(pid);
  } catch (const std::exception& e) {
    ::close(fd);
    return std::string("cannot start gnuplot: ") + e.what();
  }
  const int rc = process::exit_code(status);
  if (rc == 0) return "";
  return "gnuplot failed on " + script.string() + " (exit " + std::to_string(rc) + ")" +
         (log.empty() ? "" : ", see " + log.string());
}

}  // namespace treefarm::plot
