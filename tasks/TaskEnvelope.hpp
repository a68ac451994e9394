#pragma once
/// @file TaskEnvelope.hpp
/// The input of a task of a bag with its own inputs (docs/command-tasks.md, "One task per
/// file, per line, per number"): the task's placeholders ({name}, {stem}, {line}, CSV
/// columns, {index}) travel in front of its input bytes, in the payload the task already
/// carries down the tree, so no message of the wire changes:
///
///   "TFE1", u32 count, count × (u16 key bytes, key, u32 value bytes, value), input bytes
///
/// (little-endian). A key "!error" says the master could not read the task's input (the
/// worker then fails the task with that text instead of running it).

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/BagSource.hpp"

namespace treefarm::tasks {

/// A task's placeholders and its input, as read from its payload.
struct TaskEnvelope {
  std::vector<model::TaskField> fields;
  std::span<const std::byte> input;  ///< points into the payload it was read from
  /// The master's reason the input could not be read, or empty.
  std::string error() const;
};

/// Limits checked when an envelope is read (bytes, fields).
inline constexpr std::size_t max_envelope_fields = 1024;
inline constexpr std::size_t max_field_key_bytes = 256;
inline constexpr std::size_t max_field_value_bytes = 1u << 20;

/// Writes `fields` then `input` into `out` (replacing its content).
void write_envelope(const std::vector<model::TaskField>& fields, std::span<const std::byte> input, std::vector<std::byte>& out);

/// Reads an envelope. Throws std::invalid_argument saying what is wrong (no magic, a size
/// past the end or over the limits above).
TaskEnvelope read_envelope(std::span<const std::byte> payload);

}  // namespace treefarm::tasks
