#pragma once
/// @file TaskMap.hpp
/// The node driver's containers of per-task state on the hot path: Abseil's
/// open-addressing tables (Debian libabsl-dev; the scheduler core, which links no
/// third-party library, pools its tables' nodes instead, NodeScheduler.hpp). A std::unordered_map allocates a node per insertion and frees it
/// per erasure — several per task over a node's maps ("no allocation per task
/// on the hot path"); these tables store entries in one array, which only grows (an
/// allocation per doubling, none per task in the steady state). Unlike std::unordered_map,
/// an insertion may move entries: no pointer or reference into one is kept across one.

#include <cstddef>
#include <cstdint>

#include <absl/container/flat_hash_map.h>

#include "runtime/core/Ids.hpp"

namespace treefarm::node {

/// The hash of the per-task open-addressing maps (absl::flat_hash_map<TaskId, …, TaskIdHash>,
/// no allocation per task): splitmix64's finaliser, so that consecutive ids spread over the table (the
/// std::hash of an integer is the integer), and the same on every run (Abseil's own hash is
/// seeded per process, which would make a map's iteration order, and anything a run
/// derives from it, differ from one run to the next).
/// Also for any 64-bit id (a task id on the wire, a job number).
struct TaskIdHash {
  std::size_t operator()(const core::TaskId& id) const noexcept { return (*this)(id.value); }
  std::size_t operator()(std::uint64_t x) const noexcept {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<std::size_t>(x ^ (x >> 31));
  }
};

/// Per-task values keyed by TaskId.
template <typename V>
using TaskMap = absl::flat_hash_map<core::TaskId, V, TaskIdHash>;

/// Values keyed by a 64-bit id: a task id as it travels on the wire, a job number.
template <typename V>
using IdMap = absl::flat_hash_map<std::uint64_t, V, TaskIdHash>;


}  // namespace treefarm::node
