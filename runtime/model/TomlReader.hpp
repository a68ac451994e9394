#pragma once
/// @file TomlReader.hpp
/// Typed, checked access to a TOML document parsed by toml++ (toml::parse gives the
/// tables and every node's source position): each read names the file, the line and the
/// field ("node[2].cores") in its FileError, and checks the type and the range, since
/// experiment files are user input. Internal to runtime/model (includes toml++, which
/// only treefarm::model links).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <utility>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/Units.hpp"

namespace treefarm::model {

/// The line (1-based) where a node starts in its file.
inline int line_of(const toml::node& node) { return static_cast<int>(node.source().begin.line); }

/// "an integer", "a table", ... for error messages.
std::string toml_type_name(toml::node_type type);

/// "a, b, c".
std::string join_words(std::initializer_list<std::string_view> words);

/// The root table of the TOML document `text` read from `path`; a syntax error throws
/// FileError("TOML syntax error: ...") with its line.
toml::table parse_toml(const std::string& text, const std::string& path);

/// Typed access to the tables of one file; every error names file, line and field.
class TomlReader {
 public:
  explicit TomlReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(int line, const std::string& field, const std::string& message) const {
    throw FileError(path_, line, field, message);
  }
  /// The path errors name.
  const std::string& path() const { return path_; }

  /// Rejects keys not in `allowed` (typo protection); reports the first one in the file.
  void check_keys(const toml::table& table, const std::string& prefix,
                  std::initializer_list<std::string_view> allowed, std::string_view where) const {
    const toml::key* bad = nullptr;
    for (auto&& [key, value] : table) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
      if (!bad || key.source().begin.line < bad->source().begin.line) bad = &key;
    }
    if (bad)
      fail(static_cast<int>(bad->source().begin.line), prefix + std::string(bad->str()),
           "unknown key '" + std::string(bad->str()) + "' in " + std::string(where) +
               "; expected one of: " + join_words(allowed));
  }

  [[noreturn]] void wrong_type(const toml::node& node, const std::string& field,
                               std::string_view expected) const {
    fail(line_of(node), field,
         "expected " + std::string(expected) + ", got " + toml_type_name(node.type()));
  }

  /// Fails on `table.key` (which must exist) unless `ok`.
  void require(bool ok, const toml::table& table, std::string_view key, const std::string& prefix,
               const std::string& message) const {
    if (!ok) fail(line_of(*table.get(key)), prefix + std::string(key), message);
  }

  /// Fails unless exactly one of `keys` is in `table` (one change per [[event]], one fault
  /// per [[fault]]): `missing` when none is, `several` when more are; the field named is the
  /// first of `keys`.
  void require_one_of(const toml::table& table, const std::string& prefix, std::initializer_list<std::string_view> keys,
                      const std::string& missing, const std::string& several) const {
    int given = 0;
    for (std::string_view key : keys) given += table.contains(key) ? 1 : 0;
    if (given != 1) fail(line_of(table), prefix + std::string(*keys.begin()), given == 0 ? missing : several);
  }

  void require_present(const toml::table& table, std::string_view key, const std::string& prefix,
                       std::string_view what) const {
    if (!table.contains(key))
      fail(line_of(table), prefix + std::string(key),
           "missing required key '" + std::string(key) + "' (" + std::string(what) + ")");
  }

  std::optional<std::string> string_of(const toml::table& table, std::string_view key,
                                       const std::string& prefix) const {
    const toml::node* node = table.get(key);
    if (!node) return std::nullopt;
    if (const auto* s = node->as_string()) return s->get();
    wrong_type(*node, prefix + std::string(key), "a string");
  }

  std::optional<std::int64_t> integer_of(const toml::table& table, std::string_view key,
                                         const std::string& prefix, std::int64_t min,
                                         std::int64_t max) const {
    const toml::node* node = table.get(key);
    if (!node) return std::nullopt;
    const std::int64_t v = whole_number(*node, prefix + std::string(key), "an integer");
    if (v < min || v > max)
      fail(line_of(*node), prefix + std::string(key),
           "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
               std::to_string(v));
    return v;
  }

  /// An integer, or a float that is an exact integer ("bytes = 1e6", "tasks = 1e4"): users
  /// write sizes that way. Anything else names the field and says what was expected.
  std::int64_t whole_number(const toml::node& node, const std::string& field, std::string_view expected) const {
    if (const auto* i = node.as_integer()) return i->get();
    if (const auto* f = node.as_floating_point()) {
      const double d = f->get();
      // 2^63 is exactly representable; anything at or above it does not fit an int64.
      if (std::isfinite(d) && d == std::trunc(d) && d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)
        return static_cast<std::int64_t>(d);
      fail(line_of(node), field, "expected " + std::string(expected) + ", got " + std::to_string(d) +
                                     " (a float that is not a whole number)");
    }
    wrong_type(node, field, expected);
  }

  /// An integer or a float, finite.
  std::optional<double> number_of(const toml::table& table, std::string_view key,
                                  const std::string& prefix) const {
    const toml::node* node = table.get(key);
    if (!node) return std::nullopt;
    double v = 0;
    if (const auto* i = node->as_integer())
      v = static_cast<double>(i->get());
    else if (const auto* f = node->as_floating_point())
      v = f->get();
    else
      wrong_type(*node, prefix + std::string(key), "a number");
    if (!std::isfinite(v)) fail(line_of(*node), prefix + std::string(key), "must be finite");
    return v;
  }

  /// A number in base units or a string with a unit, parsed by `parse`; must be >= 0.
  template <typename Parse>
  std::optional<double> quantity_of(const toml::table& table, std::string_view key,
                                    const std::string& prefix, Parse parse,
                                    std::string_view expected) const {
    const toml::node* node = table.get(key);
    if (!node) return std::nullopt;
    double v = 0;
    if (const auto* s = node->as_string()) {
      try {
        v = static_cast<double>(parse(s->get()));
      } catch (const std::invalid_argument& e) {
        fail(line_of(*node), prefix + std::string(key), e.what());
      }
    } else if (node->is_integer() || node->is_floating_point()) {
      v = *number_of(table, key, prefix);
    } else {
      wrong_type(*node, prefix + std::string(key), expected);
    }
    if (v < 0) fail(line_of(*node), prefix + std::string(key), "must be >= 0");
    return v;
  }

  /// An integer of bytes or a size string ("512MiB"), at most `max`.
  std::optional<std::uint64_t> bytes_of(const toml::table& table, std::string_view key,
                                        const std::string& prefix, std::uint64_t max) const {
    const toml::node* node = table.get(key);
    if (!node) return std::nullopt;
    std::uint64_t v = 0;
    if (const auto* s = node->as_string()) {
      try {
        v = parse_size(s->get());
      } catch (const std::invalid_argument& e) {
        fail(line_of(*node), prefix + std::string(key), e.what());
      }
    } else if (node->is_integer() || node->is_floating_point()) {
      const std::int64_t i = whole_number(*node, prefix + std::string(key), "an integer (bytes) or a size like '512MiB'");
      if (i < 0) fail(line_of(*node), prefix + std::string(key), "must be >= 0");
      v = static_cast<std::uint64_t>(i);
    } else {
      wrong_type(*node, prefix + std::string(key), "an integer (bytes) or a size like '512MiB'");
    }
    if (v > max)
      fail(line_of(*node), prefix + std::string(key),
           "too large: " + std::to_string(v) + " bytes, at most " + std::to_string(max));
    return v;
  }

  /// The array of tables `key` of the root (each element must be a table).
  std::vector<const toml::table*> tables_of(const toml::table& root, std::string_view key) const {
    std::vector<const toml::table*> out;
    const toml::node* node = root.get(key);
    if (!node) return out;
    const auto* array = node->as_array();
    if (!array)
      wrong_type(*node, std::string(key),
                 "an array of tables ([[" + std::string(key) + "]] entries)");
    for (const auto& element : *array) {
      const auto* table = element.as_table();
      if (!table)
        wrong_type(element, std::string(key), "tables ([[" + std::string(key) + "]] entries)");
      out.push_back(table);
    }
    return out;
  }

 private:
  std::string path_;
};

}  // namespace treefarm::model
