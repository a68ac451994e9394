#pragma once
/// @file Address.hpp
/// The address the dashboard listens on: `--dashboard [HOST:]PORT` (docs/dashboard.md).

#include <cstdint>
#include <string>

namespace treefarm::dashboard {

/// Where the dashboard listens when `--dashboard` is given without a value.
inline constexpr const char* default_address = "127.0.0.1:8787";

struct Address {
  std::string host = "127.0.0.1";  ///< A dotted IPv4 address, an IPv6 address or a host name
  std::uint16_t port = 8787;       ///< 0 = any free port (the bound one is printed)
};

/// Parses "PORT", "HOST:PORT" or "[IPV6]:PORT". "" gives default_address.
/// @throws std::invalid_argument naming the text and what was expected.
Address parse_address(const std::string& text);

/// True when `word` has the shape of an address: a ':' in it, or all digits, so that
/// `--dashboard exp.toml` is read as the option without a value followed by a file, while
/// `--dashboard 127.0.0.1:notaport` is taken and refused by parse_address(), which says
/// whether it is a valid address.
bool looks_like_address(const std::string& word);

/// True for 127.0.0.0/8 as a dotted address, ::1 and localhost: the addresses that only
/// this machine can reach.
bool is_loopback_host(const std::string& host);

/// "HOST:PORT" ("[HOST]:PORT" for IPv6).
std::string to_string(const Address& address);

}  // namespace treefarm::dashboard
