#include "runtime/model/BagKeys.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include "runtime/model/BagSource.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::model {

namespace fs = std::filesystem;

namespace {

/// Room kept in a task's frame for its placeholders (tasks/TaskEnvelope.hpp).
constexpr std::uint64_t envelope_room = 64u << 10;
/// bytes: the largest input file a task may carry down the tree (one frame).
constexpr std::uint64_t max_input_file_bytes = net::max_payload_bytes - envelope_room;

/// A relative path that stays inside its folder (no absolute path, no "..").
bool confined(const std::string& path) {
  const fs::path p(path);
  bool inside = !p.empty() && p.is_relative();
  for (const auto& part : p) inside = inside && part != "..";
  return inside;
}

void require_confined(const TomlReader& r, const toml::table& t, const std::string& prefix, std::string_view key,
                      const std::string& path, const ParseOptions& options) {
  if (!options.confine_inputs) return;
  r.require(confined(path), t, key, prefix,
            "'" + path + "': a served master reads only the files sent with the submission: give a path relative "
            "to the experiment's folder, inside it (no absolute path, no '..')");
}

/// The files of `inputs`: a glob (sorted matches) or a list of paths.
std::vector<std::string> input_paths(const TomlReader& r, const toml::table& t, const std::string& prefix,
                                     const fs::path& folder, const ParseOptions& options) {
  const toml::node* node = t.get("inputs");
  std::vector<std::string> given;
  bool pattern = false;
  if (const auto* s = node->as_string()) {
    given.push_back(s->get());
    pattern = true;
  } else if (const auto* list = node->as_array()) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto* e = list->get(i)->as_string();
      if (!e) r.wrong_type(*list->get(i), prefix + "inputs[" + std::to_string(i) + "]", "a string (a file's path)");
      given.push_back(e->get());
    }
  } else {
    r.wrong_type(*node, prefix + "inputs", "a glob like \"data/*.txt\" or an array of paths");
  }
  std::vector<std::string> out;
  for (const auto& g : given) {
    r.require(!g.empty(), t, "inputs", prefix, "an empty path");
    require_confined(r, t, prefix, "inputs", g, options);
    const fs::path full = fs::path(g).is_relative() ? folder / g : fs::path(g);
    if (!pattern) {
      out.push_back(full.lexically_normal().string());
      continue;
    }
    glob_t found{};
    const int rc = ::glob(full.c_str(), 0, nullptr, &found);
    if (rc == 0)
      for (std::size_t i = 0; i < found.gl_pathc; ++i) out.emplace_back(found.gl_pathv[i]);
    ::globfree(&found);
    r.require(rc == 0 || rc == GLOB_NOMATCH, t, "inputs", prefix, "cannot read the folders of '" + g + "'");
    r.require(rc == 0, t, "inputs", prefix, "'" + g + "' matches no file (looked in " + folder.string() + ")");
  }
  return out;
}

}  // namespace

bool read_bag(const TomlReader& r, const toml::table& t, const std::string& prefix, const std::string& file, AppSpec& a,
              const ParseOptions& options) {
  const int given = (t.contains("inputs") ? 1 : 0) + (t.contains("lines") ? 1 : 0) + (t.contains("array") ? 1 : 0);
  if (t.contains("csv") && !t.contains("lines"))
    r.fail(line_of(*t.get("csv")), prefix + "csv", "only with 'lines' (a CSV file with a header line)");
  if (given == 0) return false;
  const std::string_view key = t.contains("inputs") ? "inputs" : t.contains("lines") ? "lines" : "array";
  r.require(given == 1, t, key, prefix, "give one of 'inputs', 'lines' or 'array', not several");
  for (std::string_view other : {"bytes", "input_file", "tasks"})
    if (t.contains(other))
      r.fail(line_of(*t.get(other)), prefix + std::string(other),
             "not with '" + std::string(key) + "': the bag has one task per " +
                 (key == "inputs" ? "file" : key == "lines" ? "line" : "number") + " and each task's input is its own");
  const fs::path folder = fs::path(file).parent_path();
  BagSource bag = BagSource::array({});
  if (key == "inputs") {
    auto paths = input_paths(r, t, prefix, folder, options);
    std::uint64_t total = 0;
    for (const auto& p : paths) {
      struct stat st{};
      r.require(::stat(p.c_str(), &st) == 0, t, "inputs", prefix, "cannot read '" + p + "'");
      r.require(S_ISREG(st.st_mode), t, "inputs", prefix, "'" + p + "' is not a regular file");
      const auto size = static_cast<std::uint64_t>(st.st_size);
      if (size > max_input_file_bytes)
        throw InputTooLarge(r.path(), line_of(*t.get("inputs")), prefix + "inputs",
                            "'" + p + "' has " + std::to_string(size) +
                                " bytes; a task's input travels in one frame of at most " +
                                std::to_string(max_input_file_bytes) + " bytes (not streamed: split the file)");
      total += size;
    }
    bag = BagSource::files(std::move(paths), total);
  } else if (key == "lines") {
    const auto name = r.string_of(t, "lines", prefix);
    require_confined(r, t, prefix, "lines", *name, options);
    bool csv = false;
    if (const toml::node* c = t.get("csv")) {
      const auto* b = c->as_boolean();
      if (!b) r.wrong_type(*c, prefix + "csv", "true or false");
      csv = b->get();
    }
    const fs::path full = fs::path(*name).is_relative() ? folder / *name : fs::path(*name);
    try {
      bag = BagSource::lines(full.string(), csv);
    } catch (const std::invalid_argument& e) {
      r.fail(line_of(*t.get("lines")), prefix + "lines", full.string() + ": " + e.what());
    }
  } else {
    const auto text = r.string_of(t, "array", prefix);
    try {
      bag = BagSource::array(parse_array(*text));
    } catch (const std::invalid_argument& e) {
      r.fail(line_of(*t.get("array")), prefix + "array", e.what());
    }
  }
  r.require(bag.count() > 0, t, key, prefix, "gives no task");
  r.require(bag.count() <= 1'000'000'000, t, key, prefix, std::to_string(bag.count()) + " tasks; at most 1000000000");
  a.tasks = bag.count();
  a.bytes = bag.total_bytes() / bag.count();  // the LP's b(k): the mean input size
  a.task_fields = true;
  a.bag = std::make_shared<const BagSource>(std::move(bag));
  return true;
}

void check_output_name(const TomlReader& r, const toml::table& t, const std::string& prefix, const AppSpec& a) {
  if (a.output_file.empty()) return;
  std::vector<std::string> known{"index"};
  if (a.bag && a.bag->form() == BagSource::Form::files) known.insert(known.end(), {"name", "stem"});
  if (a.bag && a.bag->form() == BagSource::Form::lines) {
    known.push_back("line");
    known.insert(known.end(), a.bag->header().begin(), a.bag->header().end());
  }
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "{" : ", {") + k + "}";
  const auto used = placeholders_in(a.output_file);
  for (const auto& u : used)
    r.require(std::find(known.begin(), known.end(), u) != known.end(), t, "output_file", prefix,
              "unknown placeholder {" + u + "}; this application's tasks have " + list);
  r.require(!used.empty(), t, "output_file", prefix, "must contain one of " + list + " (one file per task), e.g. \"{index}.gz\"");
  if (!a.bag || a.bag->form() != BagSource::Form::files) return;
  std::set<std::string> names;
  for (std::uint64_t i = 0; i < a.bag->count(); ++i) {
    const auto name = output_name(a.output_file, a.bag->fields(i));
    r.require(names.insert(name).second, t, "output_file", prefix,
              "two input files give the output name '" + name + "' (" + a.bag->paths()[i] +
                  " is one): use {name} or {index}");
  }
}

}  // namespace treefarm::model
