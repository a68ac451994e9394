#include "tools/Interrupt.hpp"

#include <csignal>

namespace treefarm::tools {

std::atomic<bool>& interrupted() {
  static std::atomic<bool> flag{false};
  return flag;
}

std::atomic<int>& interrupt_signal() {
  static std::atomic<int> sig{SIGINT};
  return sig;
}

}  // namespace treefarm::tools
