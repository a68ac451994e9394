#pragma once
/// @file AtomicFile.hpp
/// Writing result files so that a crash, a full disk or a failed write never leaves a
/// truncated file under the final name.

#include <filesystem>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace treefarm::metrics {

/// Writes `content` to `path` atomically: to `path`.tmp in the same directory, every
/// write checked, fsync'd, renamed over `path`, then the directory fsync'd. On any error
/// the temporary file is removed, `path` keeps its old content (or stays absent), and
/// std::runtime_error names the path and the system error.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

/// The same for content produced in pieces: `produce` is called once with a sink that
/// writes each piece it is given (checked) to the temporary file.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::function<void(std::string_view)>& sink)>& produce);

/// For messages about a full disk: "it needed [more than] N bytes`what`, F bytes are free
/// on its file system" (F from statvfs of `path`'s directory; left out if that fails).
std::string space_note(const std::filesystem::path& path, std::uint64_t needed, bool at_least, const std::string& what);

/// Checks, before a run starts, that files can be created in `dir` (created if missing):
/// creates, writes, fsyncs and removes a probe file. @throws std::runtime_error naming
/// `dir` and the reason when it cannot.
void check_writable_directory(const std::filesystem::path& dir);

}  // namespace treefarm::metrics
