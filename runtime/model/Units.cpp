#include "runtime/model/Units.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>

namespace treefarm::model {
namespace {

struct Prefix {
  std::string_view name;
  double factor;
};

constexpr Prefix decimal_prefixes[] = {
    {"", 1.0}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
};
constexpr Prefix binary_prefixes[] = {
    {"Ki", 1024.0},
    {"Mi", 1024.0 * 1024},
    {"Gi", 1024.0 * 1024 * 1024},
    {"Ti", 1024.0 * 1024 * 1024 * 1024},
    {"Pi", 1024.0 * 1024 * 1024 * 1024 * 1024},
    {"Ei", 1024.0 * 1024 * 1024 * 1024 * 1024 * 1024},
};

struct Unit {
  std::string_view name;
  double factor;  // base units per unit
};

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

/// Splits "1.5 Gf" into 1.5 and "Gf"; throws with `what` and `example` in the message.
std::pair<double, std::string_view> split(std::string_view text, std::string_view what,
                                          std::string_view example) {
  const std::string expected =
      "expected a " + std::string(what) + " such as '" + std::string(example) + "'";
  std::string_view s = text;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.empty()) throw std::invalid_argument("empty " + std::string(what) + "; " + expected);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data())
    throw std::invalid_argument(quoted(text) + " does not start with a number; " + expected);
  if (!std::isfinite(value))
    throw std::invalid_argument(quoted(text) + " is not a finite number; " + expected);
  if (value < 0) throw std::invalid_argument(quoted(text) + " is negative; " + expected);
  std::string_view unit(end, static_cast<std::size_t>(s.data() + s.size() - end));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (unit.empty())
    throw std::invalid_argument(quoted(text) + " has no unit; " + expected +
                                " (or a plain TOML number in base units)");
  return {value, unit};
}

/// Finds prefix+unit = `unit` among the tables; 0 if none matches.
template <std::size_t NP, std::size_t NU>
double find_factor(std::string_view unit, const Prefix (&prefixes)[NP], const Unit (&units)[NU]) {
  for (const auto& p : prefixes)
    for (const auto& u : units)
      if (unit.size() == p.name.size() + u.name.size() && unit.starts_with(p.name) &&
          unit.ends_with(u.name))
        return p.factor * u.factor;
  return 0.0;
}

[[noreturn]] void unknown_unit(std::string_view text, std::string_view unit,
                               std::string_view accepted) {
  throw std::invalid_argument(quoted(text) + ": unknown unit " + quoted(unit) + "; expected " +
                              std::string(accepted) + " (units are case-sensitive)");
}

/// A number of flop (or flop/s: SimGrid writes both "f"): `what` names it in errors.
double parse_flop_quantity(std::string_view text, std::string_view what) {
  const auto [value, unit] = split(text, what, "2Gf");
  static constexpr Unit units[] = {{"f", 1.0}, {"flops", 1.0}};
  const double factor = find_factor(unit, decimal_prefixes, units);
  if (factor == 0.0)
    unknown_unit(text, unit, "f or flops with an optional prefix k, M, G, T, P, E (e.g. 'Gf')");
  return value * factor;
}

}  // namespace

double parse_speed(std::string_view text) { return parse_flop_quantity(text, "speed"); }

double parse_flops(std::string_view text) { return parse_flop_quantity(text, "flop amount"); }

double parse_bandwidth(std::string_view text) {
  const auto [value, unit] = split(text, "bandwidth", "125MBps");
  static constexpr Unit units[] = {{"Bps", 1.0}, {"bps", 1.0 / 8.0}};
  double factor = find_factor(unit, decimal_prefixes, units);
  if (factor == 0.0) factor = find_factor(unit, binary_prefixes, units);
  if (factor == 0.0)
    unknown_unit(text, unit,
                 "Bps (bytes/s) or bps (bits/s) with an optional prefix k, M, G, T or "
                 "Ki, Mi, Gi, Ti (e.g. 'MBps', 'Gbps', 'MiBps')");
  return value * factor;
}

double parse_time(std::string_view text) {
  const auto [value, unit] = split(text, "time", "50us");
  static constexpr Prefix none[] = {{"", 1.0}};
  static constexpr Unit units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3},
                                   {"s", 1.0},   {"m", 60.0},  {"h", 3600.0}};
  const double factor = find_factor(unit, none, units);
  if (factor == 0.0) unknown_unit(text, unit, "ns, us, ms, s, m (minutes) or h");
  return value * factor;
}

std::uint64_t parse_size(std::string_view text) {
  const auto [value, unit] = split(text, "size", "512MiB");
  static constexpr Unit units[] = {{"B", 1.0}};
  double factor = find_factor(unit, decimal_prefixes, units);
  if (factor == 0.0) factor = find_factor(unit, binary_prefixes, units);
  if (factor == 0.0) {
    if (unit.ends_with('b'))
      throw std::invalid_argument(quoted(text) + ": a size is in bytes ('B'), not bits ('b'); " +
                                  "expected e.g. '512MiB'");
    unknown_unit(text, unit, "B with an optional prefix k, M, G, T or Ki, Mi, Gi, Ti (e.g. 'MiB')");
  }
  const double bytes = value * factor;
  if (bytes >= 9.2e18)
    throw std::invalid_argument(quoted(text) + " is too large; expected a size below 2^63 bytes");
  if (bytes != std::floor(bytes))
    throw std::invalid_argument(quoted(text) + " is not a whole number of bytes");
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace treefarm::model
