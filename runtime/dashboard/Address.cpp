#include "runtime/dashboard/Address.hpp"

#include <charconv>
#include <stdexcept>

namespace treefarm::dashboard {

Address parse_address(const std::string& text) {
  if (text.empty()) return parse_address(default_address);
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument("--dashboard '" + text + "': " + why + " (expected PORT, HOST:PORT or [IPV6]:PORT)");
  };
  Address a;
  std::string port = text;
  if (text.starts_with("[")) {
    const auto close = text.find("]:");
    if (close == std::string::npos) throw fail("an IPv6 address needs ']:' before the port");
    a.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string::npos) {
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) throw fail("write an IPv6 address in brackets");
  }
  if (a.host.empty()) throw fail("empty host");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
    throw fail("port '" + port + "' is not a number in [0, 65535]");
  a.port = static_cast<std::uint16_t>(value);
  return a;
}

bool looks_like_address(const std::string& word) {
  if (word.find(':') != std::string::npos) return !word.starts_with("-");  // HOST:PORT, right or wrong
  return !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
}

bool is_loopback_host(const std::string& host) {
  // 127.0.0.0/8 only as a dotted address: a host name such as "127.example.org" is not loopback.
  const bool ipv4 = host.starts_with("127.") && host.find_first_not_of("0123456789.") == std::string::npos;
  return ipv4 || host == "::1" || host == "localhost";
}

std::string to_string(const Address& a) {
  const bool v6 = a.host.find(':') != std::string::npos;
  return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

}  // namespace treefarm::dashboard
