#include "runtime/model/Application.hpp"

#include <limits>

#include "runtime/model/EnumNames.hpp"

namespace treefarm::model {

namespace {

constexpr EnumNames<Kernel, 5> kernel_names = {{{Kernel::matmul, "matmul"},
                                                {Kernel::matadd, "matadd"},
                                                {Kernel::noop, "noop"},
                                                {Kernel::abstract, "abstract"},
                                                {Kernel::command, "command"}}};

}  // namespace

std::string_view to_string(Kernel kernel) { return name_of(kernel_names, kernel); }

std::optional<Kernel> kernel_from_string(std::string_view name) { return value_of(kernel_names, name); }

std::vector<UnknownArgvField> unknown_argv_fields(const AppSpec& app) {
  std::vector<UnknownArgvField> out;
  const auto word_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  for (std::size_t i = 0; i < app.argv.size(); ++i) {
    const std::string& arg = app.argv[i];
    for (std::size_t open = arg.find('{'); open != std::string::npos; open = arg.find('{', open + 1)) {
      std::size_t end = open + 1;
      while (end < arg.size() && word_char(arg[end])) ++end;
      if (end == open + 1 || end >= arg.size() || arg[end] != '}') continue;
      const std::string field = arg.substr(open, end - open + 1);
      if (field != "{index}" && field != "{input}" && field != "{output}") out.push_back({i, field});
    }
  }
  return out;
}

std::uint64_t AppSpec::input_bytes() const {
  switch (kernel) {
    case Kernel::matmul:
    case Kernel::matadd: return 2ull * n * n * sizeof(double);
    case Kernel::noop:
    case Kernel::abstract:
    case Kernel::command: return bytes;
  }
  return 0;
}

double AppSpec::task_flops() const {
  const double nd = n;
  switch (kernel) {
    case Kernel::matmul: return 2.0 * nd * nd * nd;
    case Kernel::matadd: return nd * nd;
    case Kernel::noop:
    case Kernel::command: return 0.0;  // a command's work is measured in seconds (calibration)
    case Kernel::abstract: return flops;
  }
  return 0.0;
}

double AppSpec::ccr() const {
  const double f = task_flops();
  if (f <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(input_bytes()) / f;
}

}  // namespace treefarm::model
