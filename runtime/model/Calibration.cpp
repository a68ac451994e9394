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

  /// Each element of the array `field` (an object with only `allowed` keys and a
  /// non-empty string "name"), handed to `each(element, prefix, name)` where prefix is
  /// "field[i]." for the element's own fields.
  template <class Each>
  void named_objects(const Json& array, const std::string& field, std::initializer_list<std::string_view> allowed,
                     Each each) const {
    if (!array.is_array()) fail(field, std::string("expected an array, got ") + array.type_name());
    for (std::size_t i = 0; i < array.size(); ++i) {
      const std::string element = field + "[" + std::to_string(i) + "]";
      const Json& object = array[i];
      if (!object.is_object()) fail(element, std::string("expected an object, got ") + object.type_name());
      const std::string prefix = element + ".";
      check_keys(object, prefix, allowed);
      const Json& name = member(object, "name", prefix);
      if (!name.is_string() || name.get<std::string>().empty())
        fail(prefix + "name", "expected a non-empty string, got " + name.dump());
      each(object, prefix, name.get<std::string>());
    }
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
  c.check_keys(doc, "", {"format", "version", "experiment", "measured_at", "nodes", "apps", "hosts"});

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

  c.named_objects(c.member(doc, "nodes", ""), "nodes",
                  {"name", "parent", "cores", "link_bandwidth", "out_bandwidth", "task_seconds", "host", "cpus", "cpu_share",
                   "link_bandwidth_min", "link_bandwidth_max", "link_round_trip", "output_bytes"},
                  [&](const Json& node, const std::string& prefix, const std::string& name) {
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
    if (const auto it = node.find("link_bandwidth_min"); it != node.end() && !it->is_null())
      nc.link_bandwidth_min = c.positive(*it, prefix + "link_bandwidth_min", "bytes/s");
    if (const auto it = node.find("link_bandwidth_max"); it != node.end() && !it->is_null())
      nc.link_bandwidth_max = c.positive(*it, prefix + "link_bandwidth_max", "bytes/s");
    if (nc.link_bandwidth_min && nc.link_bandwidth_max && *nc.link_bandwidth_min > *nc.link_bandwidth_max)
      c.fail(prefix + "link_bandwidth_min", "is larger than link_bandwidth_max");
    if (const auto it = node.find("link_round_trip"); it != node.end() && !it->is_null()) {
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
        c.fail(prefix + "link_round_trip", "expected seconds (a number >= 0), got " + it->dump());
      nc.link_round_trip = it->get<double>();
    }
    if (const auto it = node.find("task_seconds"); it != node.end()) {
      if (!it->is_object())
        c.fail(prefix + "task_seconds",
               std::string("expected an object {app name: seconds}, got ") + it->type_name());
      for (const auto& [app, seconds] : it->items())
        nc.task_seconds[app] = c.positive(seconds, prefix + "task_seconds." + app, "seconds");
    }
    if (const auto it = node.find("output_bytes"); it != node.end()) {
      if (!it->is_object())
        c.fail(prefix + "output_bytes", std::string("expected an object {app name: bytes}, got ") + it->type_name());
      for (const auto& [app, bytes] : it->items()) {
        if (!bytes.is_number() || !std::isfinite(bytes.get<double>()) || bytes.get<double>() < 0)
          c.fail(prefix + "output_bytes." + app, "expected bytes (a number >= 0), got " + bytes.dump());
        nc.output_bytes[app] = bytes.get<double>();
      }
    }
    if (const auto it = node.find("host"); it != node.end()) {
      if (!it->is_string()) c.fail(prefix + "host", std::string("expected a string, got ") + it->type_name());
      nc.host = it->get<std::string>();
    }
    if (const auto it = node.find("parent"); it != node.end()) {
      if (!it->is_string()) c.fail(prefix + "parent", std::string("expected a node name, got ") + it->type_name());
      nc.parent = it->get<std::string>();
      if (nc.parent == name) c.fail(prefix + "parent", "node '" + name + "' is its own parent");
    }
    if (const auto it = node.find("cpus"); it != node.end()) {
      if (!it->is_array()) c.fail(prefix + "cpus", std::string("expected an array of CPU numbers, got ") + it->type_name());
      for (const auto& cpu : *it) {
        if (!cpu.is_number_integer() || cpu.get<std::int64_t>() < 0 || cpu.get<std::int64_t>() > (1 << 16))
          c.fail(prefix + "cpus", "expected CPU numbers between 0 and 65536, got " + cpu.dump());
        nc.cpus.push_back(static_cast<int>(cpu.get<std::int64_t>()));
      }
    }
    if (const auto it = node.find("cpu_share"); it != node.end()) {
      nc.cpu_share = c.positive(*it, prefix + "cpu_share", "fraction of its CPUs' time");
      if (nc.cpu_share > 1.0) c.fail(prefix + "cpu_share", "must be in (0, 1], got " + it->dump());
    }
    if (!cal.nodes.emplace(name, std::move(nc)).second) c.fail(prefix + "name", "duplicate node name '" + name + "'");
  });
  if (const auto it = doc.find("hosts"); it != doc.end()) {
    c.named_objects(*it, "hosts", {"name", "cores", "comm_cpu_seconds_per_byte", "comm_cpu_spread",
                                   "input_cpu_seconds_per_byte", "receive_cpu_seconds_per_byte", "task_cpu_seconds",
                                   "task_cpu_spread", "task_cpu_dip", "busy_share", "shared_inputs"},
                    [&](const Json& h, const std::string& prefix, const std::string& name) {
      HostCalibration hc;
      hc.cores = c.positive(c.member(h, "cores", prefix), prefix + "cores", "CPUs");
      auto non_negative = [&](const char* key) {
        const auto m = h.find(key);
        if (m == h.end()) return 0.0;
        if (!m->is_number() || !std::isfinite(m->get<double>()) || m->get<double>() < 0)
          c.fail(prefix + key, "expected a finite number >= 0, got " + m->dump());
        return m->get<double>();
      };
      hc.comm_cpu_seconds_per_byte = non_negative("comm_cpu_seconds_per_byte");
      hc.comm_cpu_spread = non_negative("comm_cpu_spread");
      hc.input_cpu_seconds_per_byte = non_negative("input_cpu_seconds_per_byte");
      hc.receive_cpu_seconds_per_byte = non_negative("receive_cpu_seconds_per_byte");
      // {"APP": seconds}: positive (task_cpu_seconds) or >= 0 (task_cpu_spread).
      auto per_app = [&](const char* key, bool positive, std::map<std::string, double>& out) {
        const auto m = h.find(key);
        if (m == h.end()) return;
        if (!m->is_object()) c.fail(prefix + key, "expected an object {\"APP\": number}, got " + m->dump());
        for (const auto& [app, v] : m->items()) {
          if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || (positive && v.get<double>() == 0))
            c.fail(prefix + key + "." + app,
                   std::string("expected a finite number ") + (positive ? "> 0" : ">= 0") + ", got " + v.dump());
          out[app] = v.get<double>();
        }
      };
      per_app("task_cpu_seconds", true, hc.task_cpu_seconds);
      per_app("task_cpu_spread", false, hc.task_cpu_spread);
      per_app("task_cpu_dip", false, hc.task_cpu_dip);
      for (const auto& [app, dip] : hc.task_cpu_dip)
        if (dip >= 1) c.fail(prefix + "task_cpu_dip." + app, "expected a fraction in [0, 1), got " + std::to_string(dip));
      if (const auto m = h.find("busy_share"); m != h.end()) {
        if (!m->is_number() || !std::isfinite(m->get<double>()) || !(m->get<double>() > 0) || m->get<double>() > 1)
          c.fail(prefix + "busy_share", "expected a fraction in (0, 1], got " + m->dump());
        hc.busy_share = m->get<double>();
      }
      if (const auto m = h.find("shared_inputs"); m != h.end()) {
        if (!m->is_boolean()) c.fail(prefix + "shared_inputs", "expected true or false, got " + m->dump());
        hc.shared_inputs = m->get<bool>();
      }
      if (!cal.hosts.emplace(name, hc).second) c.fail(prefix + "name", "duplicate host name '" + name + "'");
    });
    for (const auto& [node, nc] : cal.nodes)
      if (!nc.host.empty() && !cal.hosts.count(nc.host))
        c.fail("nodes", "node '" + node + "': host '" + nc.host + "' is not listed in hosts");
  }
  if (const auto it = doc.find("apps"); it != doc.end()) {
    c.named_objects(*it, "apps", {"name", "kernel", "n", "bytes", "cores_per_task"},
                    [&](const Json& a, const std::string& prefix, const std::string& name) {
      AppSignature sig;
      const Json& kernel = c.member(a, "kernel", prefix);
      if (!kernel.is_string() || !kernel_from_string(kernel.get<std::string>()))
        c.fail(prefix + "kernel", "expected matmul, matadd, noop or abstract, got " + kernel.dump());
      sig.kernel = kernel.get<std::string>();
      auto count = [&](const char* key, std::uint64_t max) -> std::uint64_t {
        const Json& v = c.member(a, key, prefix);
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || static_cast<std::uint64_t>(v.get<std::int64_t>()) > max)
          c.fail(prefix + key, "expected an integer between 0 and " + std::to_string(max) + ", got " + v.dump());
        return static_cast<std::uint64_t>(v.get<std::int64_t>());
      };
      sig.n = static_cast<std::uint32_t>(count("n", 0xffffffffu));
      sig.bytes = count("bytes", std::uint64_t{1} << 62);
      sig.cores_per_task = static_cast<std::uint32_t>(count("cores_per_task", 1u << 16));
      if (!cal.apps.emplace(name, sig).second) c.fail(prefix + "name", "duplicate application name '" + name + "'");
    });
  }
  return cal;
}

AppSignature signature_of(const AppSpec& app) {
  return AppSignature{std::string(to_string(app.kernel)), app.n, app.input_bytes(), app.cores_per_task};
}

std::map<std::string, AppSignature> app_signatures(const Experiment& experiment) {
  std::map<std::string, AppSignature> out;
  for (const auto& app : experiment.apps) out.emplace(app.name, signature_of(app));
  return out;
}

std::vector<std::string> calibration_differences(const Calibration& calibration, const Experiment& experiment) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const auto& node : experiment.nodes) {
    names.insert(node.name);
    const auto it = calibration.nodes.find(node.name);
    if (it == calibration.nodes.end()) {
      out.push_back("node '" + node.name + "' is in the experiment, not in the calibration");
      continue;
    }
    // The link measured is the one from the node's parent then (files that record it).
    const std::string parent = node.parent.value_or("");
    if (!it->second.parent.empty() && it->second.parent != parent)
      out.push_back("node '" + node.name + "': its parent is " + (parent.empty() ? "none" : "'" + parent + "'") +
                    " in the experiment, '" + it->second.parent + "' in the calibration");
  }
  for (const auto& [name, nc] : calibration.nodes)
    if (!names.count(name)) out.push_back("node '" + name + "' is in the calibration, not in the experiment");

  std::set<std::string> apps, measured, output_measured;
  for (const auto& [node, nc] : calibration.nodes) {
    for (const auto& [app, seconds] : nc.task_seconds) measured.insert(app);
    for (const auto& [app, bytes] : nc.output_bytes) output_measured.insert(app);
  }
  for (const auto& app : experiment.apps) {
    apps.insert(app.name);
    // Outputs: the LP charges the outputs' bytes on the way up; a calibration made before
    // the application sent them has no size for them.
    if (app.send_output && measured.count(app.name) && !output_measured.count(app.name))
      out.push_back("application '" + app.name +
                    "' sends its outputs back (output_file), the calibration has no output size for it");
    const auto it = calibration.apps.find(app.name);
    if (it == calibration.apps.end()) {
      if (!calibration.apps.empty())
        out.push_back("application '" + app.name + "' is in the experiment, not in the calibration");
      else if (!measured.count(app.name) && app.kernel != Kernel::abstract)
        out.push_back("application '" + app.name + "' is in the experiment, measured on no node of the calibration");
      continue;
    }
    const AppSignature want = signature_of(app);
    const AppSignature& got = it->second;
    const std::string prefix = "application '" + app.name + "': ";
    if (want.kernel != got.kernel)
      out.push_back(prefix + "kernel is " + want.kernel + " in the experiment, " + got.kernel + " in the calibration");
    if (want.n != got.n)
      out.push_back(prefix + "n is " + std::to_string(want.n) + " in the experiment, " + std::to_string(got.n) +
                    " in the calibration");
    else if (want.bytes != got.bytes)
      out.push_back(prefix + "bytes per task are " + std::to_string(want.bytes) + " in the experiment, " +
                    std::to_string(got.bytes) + " in the calibration");
    if (want.cores_per_task != got.cores_per_task)
      out.push_back(prefix + "cores_per_task is " + std::to_string(want.cores_per_task) + " in the experiment, " +
                    std::to_string(got.cores_per_task) + " in the calibration");
  }
  for (const auto& [name, sig] : calibration.apps)
    if (!apps.count(name)) out.push_back("application '" + name + "' is in the calibration, not in the experiment");
  if (calibration.apps.empty())
    for (const auto& name : measured)
      if (!apps.count(name)) out.push_back("application '" + name + "' is in the calibration, not in the experiment");
  return out;
}

void check_calibration_matches(const Calibration& calibration, const Experiment& experiment,
                               const std::string& source) {
  const auto diffs = calibration_differences(calibration, experiment);
  if (diffs.empty()) return;
  std::string what = source + ": this calibration (measured for '" + calibration.experiment +
                     "') does not match the experiment '" + experiment.path + "'; recalibrate (`treefarm calibrate " +
                     experiment.path + "` or `treefarm run --calibrate`). Differences:";
  for (const auto& d : diffs) what += "\n  " + d;
  throw CalibrationMismatch(what);
}

Calibration load_calibration(const std::string& path) {
  return parse_calibration(read_input_file(path), path);
}

Calibration load_calibration_for(const std::string& path, const Experiment& experiment) {
  Calibration cal = load_calibration(path);
  check_calibration_matches(cal, experiment, path);
  return cal;
}

std::string to_json(const Calibration& calibration) {
  Json nodes = Json::array();
  for (const auto& [name, nc] : calibration.nodes) {
    Json node = {{"name", name}, {"cores", nc.cores}};
    if (!nc.parent.empty()) node["parent"] = nc.parent;
    if (nc.link_bandwidth) node["link_bandwidth"] = *nc.link_bandwidth;
    if (nc.out_bandwidth) node["out_bandwidth"] = *nc.out_bandwidth;
    if (nc.link_bandwidth_min) node["link_bandwidth_min"] = *nc.link_bandwidth_min;
    if (nc.link_bandwidth_max) node["link_bandwidth_max"] = *nc.link_bandwidth_max;
    if (nc.link_round_trip) node["link_round_trip"] = *nc.link_round_trip;
    if (!nc.host.empty()) node["host"] = nc.host;
    if (!nc.cpus.empty()) node["cpus"] = nc.cpus;
    if (nc.cpu_share != 1.0) node["cpu_share"] = nc.cpu_share;
    node["task_seconds"] = Json::object();
    for (const auto& [app, seconds] : nc.task_seconds) node["task_seconds"][app] = seconds;
    if (!nc.output_bytes.empty()) node["output_bytes"] = nc.output_bytes;
    nodes.push_back(std::move(node));
  }
  Json doc = {{"format", format_name},
              {"version", format_version},
              {"experiment", calibration.experiment},
              {"measured_at", calibration.measured_at},
              {"nodes", std::move(nodes)}};
  if (!calibration.hosts.empty()) {
    Json hosts = Json::array();
    for (const auto& [name, h] : calibration.hosts) {
      hosts.push_back({{"name", name}, {"cores", h.cores}, {"comm_cpu_seconds_per_byte", h.comm_cpu_seconds_per_byte},
                       {"comm_cpu_spread", h.comm_cpu_spread}});
      if (h.input_cpu_seconds_per_byte > 0) hosts.back()["input_cpu_seconds_per_byte"] = h.input_cpu_seconds_per_byte;
      if (h.receive_cpu_seconds_per_byte > 0) hosts.back()["receive_cpu_seconds_per_byte"] = h.receive_cpu_seconds_per_byte;
      if (!h.task_cpu_seconds.empty()) {
        hosts.back()["task_cpu_seconds"] = Json::object();
        for (const auto& [app, seconds] : h.task_cpu_seconds) hosts.back()["task_cpu_seconds"][app] = seconds;
        hosts.back()["task_cpu_spread"] = Json::object();
        for (const auto& [app, spread] : h.task_cpu_spread) hosts.back()["task_cpu_spread"][app] = spread;
        for (const auto& [app, dip] : h.task_cpu_dip)
          if (dip > 0) hosts.back()["task_cpu_dip"][app] = dip;
      }
      if (h.busy_share < 1) hosts.back()["busy_share"] = h.busy_share;
      if (h.shared_inputs) hosts.back()["shared_inputs"] = true;
    }
    doc["hosts"] = std::move(hosts);
  }
  if (!calibration.apps.empty()) {
    Json apps = Json::array();
    for (const auto& [name, sig] : calibration.apps)
      apps.push_back({{"name", name}, {"kernel", sig.kernel}, {"n", sig.n}, {"bytes", sig.bytes},
                      {"cores_per_task", sig.cores_per_task}});
    doc["apps"] = std::move(apps);
  }
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
