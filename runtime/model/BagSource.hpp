#pragma once
/// @file BagSource.hpp
/// Where the tasks of a command application come from when each task has its own input
/// (docs/command-tasks.md, "One task per file, per line, per number"): a task per file
/// (`inputs`), per line of a file (`lines`, optionally CSV with a header), or per number
/// of a range list (`array`). Only names, line offsets and ranges are held; a file's bytes
/// and a line's text are read when the task is sent (read_input, fields), so a bag of a
/// million files or lines does not sit in memory.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace treefarm::model {

class BagSource;

/// One placeholder of a task's argument template and its value ("stem" → "a").
using TaskField = std::pair<std::string, std::string>;

/// A number range of an `array`: first, first + step, ..., up to last.
struct ArrayRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::uint64_t step = 1;
  std::uint64_t count() const { return (last - first) / step + 1; }
};

/// `text` with every "{KEY}" of `fields` replaced by its value; other braces stay as they are.
std::string expand_placeholders(const std::string& text, const std::vector<TaskField>& fields);

/// The names "{KEY}" in `text` (KEY letters, digits, '_' or '-').
std::vector<std::string> placeholders_in(const std::string& text);

/// `output_file` with the placeholders of a task replaced, made a safe file name ('/' and
/// NUL become '_', and so does a leading '.'; an empty name becomes "_").
std::string output_name(const std::string& pattern, const std::vector<TaskField>& fields);

/// What the model takes of a bag (predict, the master's log): "a task per file (300
/// files, 1234567 bytes in all): each task's input taken as their mean, 4115 bytes".
std::string describe_for_model(const BagSource& bag, std::uint64_t mean_bytes);

/// Parses an `array` value: "1-1000", "1-1000:10", "1,5,9-12" (numbers >= 0, each range
/// first <= last, step >= 1). Throws std::invalid_argument saying what is wrong.
std::vector<ArrayRange> parse_array(const std::string& text);

/// Splits one CSV record (RFC 4180: fields separated by commas, a field in double quotes
/// may hold commas and doubled quotes ""). Throws std::invalid_argument for an unclosed
/// quote or text after a closing quote.
std::vector<std::string> split_csv(const std::string& line);

class BagSource {
 public:
  enum class Form { files, lines, array };

  /// One task per file of `paths` (as found: absolute or relative to the working folder),
  /// `shown` the names the user gave them (in errors and {input_name}); sizes in bytes.
  static BagSource files(std::vector<std::string> paths, std::uint64_t total_bytes);
  /// One task per non-empty line of `path`; with `csv`, the first line is a header whose
  /// names become placeholders. Reads the file once to find the lines (not kept). Throws
  /// std::invalid_argument ("line N: ...") for a bad CSV record.
  static BagSource lines(const std::string& path, bool csv);
  /// One task per number of `ranges`.
  static BagSource array(std::vector<ArrayRange> ranges);

  Form form() const { return form_; }
  std::uint64_t count() const { return count_; }
  /// bytes of all tasks' inputs together (files: their sizes; lines: each line and its
  /// newline; array: 0).
  std::uint64_t total_bytes() const { return total_bytes_; }
  /// Whether a `lines` bag is a CSV file with a header line.
  bool csv() const { return csv_; }
  /// The numbers of an `array` bag, as given.
  const std::vector<ArrayRange>& ranges() const { return ranges_; }
  /// The CSV header's names (lines with csv only).
  const std::vector<std::string>& header() const { return header_; }
  /// The file of a `lines` bag.
  const std::string& lines_file() const { return lines_file_; }
  /// The files of an `inputs` bag.
  const std::vector<std::string>& paths() const { return paths_; }

  /// The placeholders of task `index` (< count()): files {name} {stem}; lines {line} (and
  /// each CSV column by its header name); array {index} (the number). Reads the line of a
  /// `lines` bag. Throws std::runtime_error if the file cannot be read.
  std::vector<TaskField> fields(std::uint64_t index) const;
  /// The input of task `index`: a file's bytes (at most `limit` bytes, else an error naming
  /// the file), a line and its newline, nothing for an array. Throws std::runtime_error
  /// naming the file when it cannot be read or is over the limit.
  void read_input(std::uint64_t index, std::vector<std::byte>& out, std::uint64_t limit) const;
  /// The number of array task `index`.
  std::uint64_t number(std::uint64_t index) const;
  /// The line of task `index` (without its newline).
  std::string line(std::uint64_t index) const;

 private:
  Form form_ = Form::array;
  std::uint64_t count_ = 0;
  std::uint64_t total_bytes_ = 0;
  std::vector<std::string> paths_;
  std::string lines_file_;
  bool csv_ = false;
  std::vector<std::string> header_;
  std::vector<std::uint64_t> line_starts_;  ///< offset of each task's line in lines_file_
  std::vector<std::uint32_t> line_lengths_; ///< its length without the newline (bytes)
  std::vector<ArrayRange> ranges_;
  std::vector<std::uint64_t> range_starts_; ///< task index of each range's first number
};

}  // namespace treefarm::model
