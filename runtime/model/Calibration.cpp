#include "runtime/model/Calibration.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runtime/model/Experiment.hpp"

namespace treefarm::model {
namespace {

using Json = nlohmann::json;

constexpr std::string_view format_name = "treefarm-calibration";
constexpr int format_version = 1;

/// Validates the parsed document; errors carry the field path, line 0 (nlohmann keeps
/// no positions once parsed).
class Checker {
 public:
  explicit Checker(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw FileError(path_, 0, field, message);
  }

  void check_keys(const Json& object, const std::string& prefix,
                  std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : object.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(prefix + key, "unknown key '" + key + "'; expected one of: " + list);
    }
  }

  const Json& member(const Json& object, const std::string& key, const std::string& prefix) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(prefix + key, "missing required key '" + key + "'");
    return *it;
  }

  double positive(const Json& value, const std::string& field, std::string_view unit) const {
    if (!value.is_number()) fail(field, std::string("expected a number (") + std::string(unit) +
                                            "), got " + value.type_name());
    const double v = value.get<double>();
    if (!std::isfinite(v) || v <= 0)
      fail(field, "must be a finite number > 0 (" + std::string(unit) + "), got " + value.dump());
    return v;
  }

 private:
  const std::string& path_;
};

int line_at(const std::string& text, std::size_t byte) {
  // nlohmann's byte is the 1-based position of the last character read.
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(end), '\n'));
}

}  // namespace

Calibration parse_calibration(const std::string& text, const std::string& path) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ..."
    std::string message = e.what();
    if (const auto colon = message.find(": "); colon != std::string::npos)
      message = message.substr(colon + 2);
    throw FileError(path, line_at(text, e.byte), "", "JSON syntax error: " + message);
  }
  const Checker c(path);
  if (!doc.is_object()) c.fail("", std::string("expected a JSON object, got ") + doc.type_name());
  c.check_keys(doc, "", {"format", "version", "experiment", "measured_at", "nodes"});

  const Json& format = c.member(doc, "format", "");
  if (!format.is_string() || format.get<std::string>() != format_name)
    c.fail("format", "expected \"" + std::string(format_name) + "\", got " + format.dump());
  const Json& version = c.member(doc, "version", "");
  if (!version.is_number_integer() || version.get<std::int64_t>() != format_version)
    c.fail("version", "expected " + std::to_string(format_version) + " (the only version this "
                          "build reads), got " + version.dump());

  Calibration cal;
  if (const auto it = doc.find("experiment"); it != doc.end()) {
    if (!it->is_string()) c.fail("experiment", std::string("expected a string, got ") + it->type_name());
    cal.experiment = it->get<std::string>();
  }
  if (const auto it = doc.find("measured_at"); it != doc.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
      c.fail("measured_at", "expected seconds since the Unix epoch (a number >= 0), got " +
                                it->dump());
    cal.measured_at = it->get<double>();
  }

  const Json& nodes = c.member(doc, "nodes", "");
  if (!nodes.is_array()) c.fail("nodes", std::string("expected an array, got ") + nodes.type_name());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string prefix = "nodes[" + std::to_string(i) + "].";
    const Json& node = nodes[i];
    if (!node.is_object())
      c.fail("nodes[" + std::to_string(i) + "]", std::string("expected an object, got ") + node.type_name());
    c.check_keys(node, prefix, {"name", "cores", "link_bandwidth", "out_bandwidth", "task_seconds"});
    const Json& name = c.member(node, "name", prefix);
    if (!name.is_string() || name.get<std::string>().empty())
      c.fail(prefix + "name", "expected a non-empty string, got " + name.dump());
    NodeCalibration nc;
    const Json& cores = c.member(node, "cores", prefix);
    if (!cores.is_number_integer() || cores.get<std::int64_t>() < 0 ||
        cores.get<std::int64_t>() > (1 << 16))
      c.fail(prefix + "cores", "expected an integer between 0 and 65536, got " + cores.dump());
    nc.cores = static_cast<std::uint32_t>(cores.get<std::int64_t>());
    if (const auto it = node.find("link_bandwidth"); it != node.end() && !it->is_null())
      nc.link_bandwidth = c.positive(*it, prefix + "link_bandwidth", "bytes/s");
    if (const auto it = node.find("out_bandwidth"); it != node.end() && !it->is_null())
      nc.out_bandwidth = c.positive(*it, prefix + "out_bandwidth", "bytes/s");
    if (const auto it = node.find("task_seconds"); it != node.end()) {
      if (!it->is_object())
        c.fail(prefix + "task_seconds",
               std::string("expected an object {app name: seconds}, got ") + it->type_name());
      for (const auto& [app, seconds] : it->items())
        nc.task_seconds[app] = c.positive(seconds, prefix + "task_seconds." + app, "seconds");
    }
    if (!cal.nodes.emplace(name.get<std::string>(), std::move(nc)).second)
      c.fail(prefix + "name", "duplicate node name '" + name.get<std::string>() + "'");
  }
  return cal;
}

Calibration load_calibration(const std::string& path) {
  return parse_calibration(read_input_file(path), path);
}

std::string to_json(const Calibration& calibration) {
  Json nodes = Json::array();
  for (const auto& [name, nc] : calibration.nodes) {
    Json node = {{"name", name}, {"cores", nc.cores}};
    if (nc.link_bandwidth) node["link_bandwidth"] = *nc.link_bandwidth;
    if (nc.out_bandwidth) node["out_bandwidth"] = *nc.out_bandwidth;
    node["task_seconds"] = Json::object();
    for (const auto& [app, seconds] : nc.task_seconds) node["task_seconds"][app] = seconds;
    nodes.push_back(std::move(node));
  }
  const Json doc = {{"format", format_name},
                    {"version", format_version},
                    {"experiment", calibration.experiment},
                    {"measured_at", calibration.measured_at},
                    {"nodes", std::move(nodes)}};
  return doc.dump(2) + "\n";
}

void save_calibration(const Calibration& calibration, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
    out << to_json(calibration);
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": cannot write: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place: " + reason);
  }
}

}  // namespace treefarm::model
