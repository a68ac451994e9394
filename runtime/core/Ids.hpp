#pragma once
/// @file Ids.hpp
/// Strong id types of the scheduler core, so that ids of different things cannot be mixed.

#include <compare>
#include <cstdint>
#include <functional>

namespace treefarm::core {

/// A child of a node, numbered by that node's adapter (not globally unique).
struct ChildId {
  std::uint32_t value = 0;
  auto operator<=>(const ChildId&) const = default;
};

/// An application of the experiment, 0..K-1 in experiment order.
struct AppId {
  std::uint32_t value = 0;
  auto operator<=>(const AppId&) const = default;
};

/// A task, unique within a run: the application in the top 24 bits, the task's index
/// within its application in the low 40 bits.
struct TaskId {
  std::uint64_t value = 0;
  auto operator<=>(const TaskId&) const = default;

  static constexpr unsigned index_bits = 40;
  static constexpr std::uint64_t max_index = (std::uint64_t{1} << index_bits) - 1;

  static constexpr TaskId make(AppId app, std::uint64_t index) {
    return TaskId{(std::uint64_t{app.value} << index_bits) | (index & max_index)};
  }
  constexpr AppId app() const { return AppId{static_cast<std::uint32_t>(value >> index_bits)}; }
  constexpr std::uint64_t index() const { return value & max_index; }
};

/// Who asked for work: the node's own executor, or one of its children.
struct Target {
  bool local = true;
  ChildId child{};

  static constexpr Target executor() { return Target{true, ChildId{}}; }
  static constexpr Target to_child(ChildId c) { return Target{false, c}; }
  bool operator==(const Target&) const = default;
};

/// Time in seconds, passed in by the adapter (steady clock or simulated clock).
using Seconds = double;

}  // namespace treefarm::core

template <>
struct std::hash<treefarm::core::TaskId> {
  std::size_t operator()(const treefarm::core::TaskId& id) const noexcept {
    return std::hash<std::uint64_t>{}(id.value);
  }
};
template <>
struct std::hash<treefarm::core::ChildId> {
  std::size_t operator()(const treefarm::core::ChildId& id) const noexcept {
    return std::hash<std::uint32_t>{}(id.value);
  }
};
