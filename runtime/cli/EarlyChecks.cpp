#include "runtime/cli/EarlyChecks.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <regex>
#include <stdexcept>
#include <unistd.h>

namespace treefarm::cli_support {

namespace fs = std::filesystem;

namespace {
/// "" if a new file can be made in `dir`, else the reason (a probe file, removed).
std::string cannot_write_in(const fs::path& dir) {
  const auto probe = dir / (".treefarm-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}
}  // namespace

void prepare_out_folder(const std::string& option, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(option + " " + dir.string() + ": cannot create folder: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(option + " " + dir.string() + ": cannot create folder: " + std::strerror(ENOTDIR));
  if (const auto why = cannot_write_in(dir); !why.empty())
    throw std::runtime_error(option + " " + dir.string() + ": cannot write in it: " + why);
}

void check_out_file(const std::string& option, const fs::path& file, bool create_folder) {
  const fs::path dir = fs::absolute(file).parent_path();
  std::error_code ec;
  if (create_folder) fs::create_directories(dir, ec);
  std::string why = ec ? ec.message() : "";
  if (why.empty() && !fs::is_directory(dir, ec)) why = fs::exists(dir, ec) ? std::strerror(ENOTDIR) : std::strerror(ENOENT);
  if (why.empty()) why = cannot_write_in(dir);
  if (!why.empty())
    throw std::runtime_error(option + " " + file.string() + ": cannot write in its folder " + dir.string() + ": " + why);
}

const CLI::Validator& endpoint_check(bool empty_ok) {
  static const auto make = [](bool empty) {
    return CLI::Validator(
        [empty](std::string& value) -> std::string {
          static const std::regex shape(R"(^(tcp://(\[[0-9a-fA-F:.]+\]|[^:/\s\[\]]+):([0-9]{1,5}|\*)|ipc://\S+)$)");
          if ((empty && value.empty()) || std::regex_match(value, shape)) return {};
          return "'" + value + "' is not an endpoint: expected tcp://HOST:PORT (PORT a number or *) or ipc://PATH" +
                 (empty ? std::string(", or \"\" for none") : std::string());
        },
        "", "endpoint");
  };
  static const CLI::Validator strict = make(false), or_none = make(true);
  return empty_ok ? or_none : strict;
}

}  // namespace treefarm::cli_support
