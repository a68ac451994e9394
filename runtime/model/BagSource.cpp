#include "runtime/model/BagSource.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace treefarm::model {

namespace {

std::uint64_t parse_number(const std::string& text, const std::string& what) {
  std::uint64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end)
    throw std::invalid_argument("'" + text + "' is not a " + what + " (expected digits)");
  return v;
}

/// A file descriptor closed when it goes.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string stem_of(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

bool key_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

}  // namespace

std::string expand_placeholders(const std::string& text, const std::vector<TaskField>& fields) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      const auto close = text.find('}', i + 1);
      if (close != std::string::npos) {
        const std::string_view key(text.data() + i + 1, close - i - 1);
        const auto it = std::find_if(fields.begin(), fields.end(), [&](const TaskField& f) { return f.first == key; });
        if (it != fields.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

std::vector<std::string> placeholders_in(const std::string& text) {
  std::vector<std::string> out;
  for (auto open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    const auto close = text.find('}', open + 1);
    if (close == std::string::npos) break;
    const std::string key = text.substr(open + 1, close - open - 1);
    if (!key.empty() && std::all_of(key.begin(), key.end(), key_char)) out.push_back(key);
  }
  return out;
}

std::string output_name(const std::string& pattern, const std::vector<TaskField>& fields) {
  std::string name = expand_placeholders(pattern, fields);
  for (auto& c : name)
    if (c == '/' || c == '\0') c = '_';
  if (name.empty()) name = "_";
  if (name[0] == '.') name[0] = '_';
  if (name.size() > 255) name.resize(255);
  return name;
}

std::string describe_for_model(const BagSource& bag, std::uint64_t mean_bytes) {
  const std::string n = std::to_string(bag.count());
  switch (bag.form()) {
    case BagSource::Form::files:
      return "a task per file (" + n + " files, " + std::to_string(bag.total_bytes()) +
             " bytes in all): the model takes their mean, " + std::to_string(mean_bytes) + " bytes, as each task's input";
    case BagSource::Form::lines:
      return "a task per line (" + n + " lines of " + bag.lines_file() + "): the model takes their mean, " +
             std::to_string(mean_bytes) + " bytes, as each task's input";
    case BagSource::Form::array: return "a task per number (" + n + " numbers): no input bytes";
  }
  return {};
}

std::vector<ArrayRange> parse_array(const std::string& text) {
  std::vector<ArrayRange> out;
  if (text.empty()) throw std::invalid_argument("empty; expected numbers and ranges like \"1-1000\", \"1-1000:10\" or \"1,5,9-12\"");
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    std::string part = text.substr(at, comma - at);
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    ArrayRange r;
    auto colon = part.find(':');
    std::string span = part.substr(0, colon);
    if (colon != std::string::npos) {
      r.step = parse_number(part.substr(colon + 1), "step");
      if (r.step == 0) throw std::invalid_argument("'" + part + "': the step must be at least 1");
    }
    const auto dash = span.find('-');
    r.first = parse_number(span.substr(0, dash), "number");
    r.last = dash == std::string::npos ? r.first : parse_number(span.substr(dash + 1), "number");
    if (r.last < r.first) throw std::invalid_argument("'" + part + "': the range ends before it starts");
    if (colon != std::string::npos && dash == std::string::npos)
      throw std::invalid_argument("'" + part + "': a step needs a range (\"1-100:10\")");
    r.last = r.first + (r.last - r.first) / r.step * r.step;  // the last number the step reaches
    out.push_back(r);
    at = comma + 1;
  }
  return out;
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::size_t i = 0;
  for (;;) {
    field.clear();
    if (i < line.size() && line[i] == '"') {  // a quoted field
      ++i;
      for (;;) {
        if (i >= line.size()) throw std::invalid_argument("a quoted field is not closed (a field cannot span lines)");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += line[i++];
      }
      if (i < line.size() && line[i] != ',')
        throw std::invalid_argument("text after a closing quote at byte " + std::to_string(i + 1));
    } else {
      while (i < line.size() && line[i] != ',') {
        if (line[i] == '"') throw std::invalid_argument("a quote inside an unquoted field at byte " + std::to_string(i + 1));
        field += line[i++];
      }
    }
    out.push_back(field);
    if (i >= line.size()) return out;
    ++i;  // the comma
  }
}

BagSource BagSource::files(std::vector<std::string> paths, std::uint64_t total_bytes) {
  BagSource s;
  s.form_ = Form::files;
  s.count_ = paths.size();
  s.total_bytes_ = total_bytes;
  s.paths_ = std::move(paths);
  return s;
}

BagSource BagSource::lines(const std::string& path, bool csv) {
  BagSource s;
  s.form_ = Form::lines;
  s.lines_file_ = path;
  s.csv_ = csv;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read '" + path + "': " + std::strerror(errno));
  std::string line;
  std::uint64_t offset = 0, number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::uint64_t start = offset;
    offset += line.size() + (in.eof() ? 0 : 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines make no task
    if (line.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::invalid_argument("line " + std::to_string(number) + ": longer than 4 GiB");
    if (csv) {
      try {
        auto fields = split_csv(line);
        if (s.header_.empty()) {
          for (const auto& name : fields) {
            const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
            });
            if (!plain)
              throw std::invalid_argument("header column '" + name +
                                          "': a column name is letters, digits, '_' or '-' (it becomes {" + name + "})");
            for (const char* builtin : {"index", "input", "output", "line", "name", "stem"})
              if (name == builtin) throw std::invalid_argument("header column '" + name + "' would hide the placeholder {" + name + "}");
            if (std::count(fields.begin(), fields.end(), name) > 1)
              throw std::invalid_argument("header column '" + name + "' appears twice");
          }
          s.header_ = std::move(fields);
          continue;
        }
        if (fields.size() != s.header_.size())
          throw std::invalid_argument(std::to_string(fields.size()) + " fields; the header has " +
                                      std::to_string(s.header_.size()));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("line " + std::to_string(number) + ": " + e.what());
      }
    }
    s.line_starts_.push_back(start);
    s.line_lengths_.push_back(static_cast<std::uint32_t>(line.size()));
    s.total_bytes_ += line.size() + 1;
  }
  s.count_ = s.line_starts_.size();
  return s;
}

BagSource BagSource::array(std::vector<ArrayRange> ranges) {
  BagSource s;
  s.form_ = Form::array;
  for (const auto& r : ranges) {
    s.range_starts_.push_back(s.count_);
    s.count_ += r.count();
  }
  s.ranges_ = std::move(ranges);
  return s;
}

std::uint64_t BagSource::number(std::uint64_t index) const {
  if (index >= count_ || form_ != Form::array) throw std::out_of_range("array task " + std::to_string(index));
  const auto it = std::upper_bound(range_starts_.begin(), range_starts_.end(), index);
  const auto k = static_cast<std::size_t>(it - range_starts_.begin()) - 1;
  return ranges_[k].first + (index - range_starts_[k]) * ranges_[k].step;
}

std::string BagSource::line(std::uint64_t index) const {
  if (index >= count_ || form_ != Form::lines) throw std::out_of_range("line task " + std::to_string(index));
  Fd f{::open(lines_file_.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw std::runtime_error("cannot read '" + lines_file_ + "': " + std::strerror(errno));
  std::string text(line_lengths_[index], '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::pread(f.fd, text.data() + got, text.size() - got, static_cast<off_t>(line_starts_[index] + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot read line " + std::to_string(index + 1) + " of '" + lines_file_ + "': changed since it was read");
    got += static_cast<std::size_t>(n);
  }
  return text;
}

std::vector<TaskField> BagSource::fields(std::uint64_t index) const {
  std::vector<TaskField> out;
  switch (form_) {
    case Form::files: {
      const std::string name = std::filesystem::path(paths_.at(index)).filename().string();
      out = {{"name", name}, {"stem", stem_of(name)}, {"index", std::to_string(index)}};
      break;
    }
    case Form::lines: {
      std::string text = line(index);
      out.emplace_back("index", std::to_string(index));
      if (csv_) {
        auto values = split_csv(text);
        for (std::size_t i = 0; i < header_.size() && i < values.size(); ++i) out.emplace_back(header_[i], values[i]);
      }
      out.emplace_back("line", std::move(text));
      break;
    }
    case Form::array: out.emplace_back("index", std::to_string(number(index))); break;
  }
  return out;
}

void BagSource::read_input(std::uint64_t index, std::vector<std::byte>& out, std::uint64_t limit) const {
  out.clear();
  if (form_ == Form::array) return;
  if (form_ == Form::lines) {
    const std::string text = line(index) + "\n";
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    out.assign(p, p + text.size());
    return;
  }
  const std::string& path = paths_.at(index);
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw std::runtime_error("cannot read input file '" + path + "': " + std::strerror(errno));
  struct stat st{};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) throw std::runtime_error("input file '" + path + "' is not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > limit)
    throw std::runtime_error("input file '" + path + "' has " + std::to_string(size) + " bytes, over the " +
                             std::to_string(limit) + " bytes a task's input may have");
  out.resize(size);
  std::size_t got = 0;
  while (got < out.size()) {
    const auto n = ::read(f.fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("cannot read input file '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
}

}  // namespace treefarm::model
