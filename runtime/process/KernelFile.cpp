#include "runtime/process/KernelFile.hpp"

#include <fstream>
#include <sstream>

namespace treefarm::process {

std::string read_kernel_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace treefarm::process
