#include "runtime/exec/CpuList.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <stdexcept>

namespace treefarm::exec {

namespace {
int parse_int(const std::string& s, const std::string& whole) {
  int v = -1;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 65535)
    throw std::invalid_argument("bad CPU list '" + whole + "': '" + s + "' is not a CPU number (expected e.g. 0-3,6)");
  return v;
}
}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      cpus.push_back(parse_int(part, text));
    } else {
      const int lo = parse_int(part.substr(0, dash), text), hi = parse_int(part.substr(dash + 1), text);
      if (hi < lo) throw std::invalid_argument("bad CPU list '" + text + "': range " + part + " is backwards");
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  if (cpus.empty()) throw std::invalid_argument("empty CPU list '" + text + "'");
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace treefarm::exec
