#pragma once
/// @file EnumNames.hpp
/// The names of an enum's values, as they appear in experiment files, on command lines and
/// in results: one table of (value, name) pairs gives both directions.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace treefarm::model {

template <typename E, std::size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

/// The name of `value` in `names`, "?" if it has none.
template <typename E, std::size_t N>
constexpr std::string_view name_of(const EnumNames<E, N>& names, E value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

/// The value named `name` in `names`, nullopt if none is.
template <typename E, std::size_t N>
constexpr std::optional<E> value_of(const EnumNames<E, N>& names, std::string_view name) {
  for (const auto& [v, n] : names)
    if (n == name) return v;
  return std::nullopt;
}

}  // namespace treefarm::model
