#include "runtime/plan/MachineSet.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/TomlReader.hpp"
#include "runtime/model/Units.hpp"

namespace treefarm::plan {

double MachineSet::bandwidth(std::size_t i, std::size_t j) const {
  if (!pair_bandwidth.empty() && pair_bandwidth[i][j] > 0) return pair_bandwidth[i][j];
  const std::size_t a = machines[i].lan, b = machines[j].lan;
  return a == b ? lans[a].bandwidth : lan_bandwidth[a][b];
}

double MachineSet::latency(std::size_t i, std::size_t j) const {
  if (!pair_latency.empty() && pair_latency[i][j] >= 0) return pair_latency[i][j];
  const std::size_t a = machines[i].lan, b = machines[j].lan;
  return a == b ? lans[a].latency : lan_latency[a][b];
}

std::optional<std::size_t> MachineSet::machine_index(const std::string& name) const {
  for (std::size_t i = 0; i < machines.size(); ++i)
    if (machines[i].name == name) return i;
  return std::nullopt;
}

std::optional<std::size_t> MachineSet::lan_index(const std::string& name) const {
  for (std::size_t i = 0; i < lans.size(); ++i)
    if (lans[i].name == name) return i;
  return std::nullopt;
}

void validate(const MachineSet& set) {
  auto bad = [](const std::string& m) { throw std::invalid_argument("machine set: " + m); };
  if (set.lans.empty()) bad("no LAN");
  if (set.machines.empty()) bad("no machine");
  const std::size_t l = set.lans.size(), n = set.machines.size();
  for (const auto& lan : set.lans)
    if (!(lan.bandwidth > 0) || !std::isfinite(lan.bandwidth) || !(lan.latency >= 0))
      bad("LAN '" + lan.name + "': bandwidth must be > 0 bytes/s and latency >= 0 s");
  if (set.lan_bandwidth.size() != l || set.lan_latency.size() != l) bad("LAN matrices must be " + std::to_string(l) + "x" + std::to_string(l));
  for (std::size_t a = 0; a < l; ++a) {
    if (set.lan_bandwidth[a].size() != l || set.lan_latency[a].size() != l) bad("LAN matrices must be square");
    for (std::size_t b = 0; b < l; ++b) {
      if (a == b) continue;
      if (!(set.lan_bandwidth[a][b] > 0) || set.lan_bandwidth[a][b] != set.lan_bandwidth[b][a])
        bad("link " + set.lans[a].name + "-" + set.lans[b].name + ": bandwidth must be > 0 and symmetric");
      if (!(set.lan_latency[a][b] >= 0)) bad("link " + set.lans[a].name + "-" + set.lans[b].name + ": latency must be >= 0");
    }
  }
  std::vector<std::string> names;
  for (const auto& m : set.machines) {
    if (m.name.empty()) bad("a machine has no name");
    if (m.lan >= l) bad("machine '" + m.name + "': LAN index out of range");
    if (m.cores < 1) bad("machine '" + m.name + "': cores must be >= 1");
    if (!(m.speed > 0) || !std::isfinite(m.speed)) bad("machine '" + m.name + "': speed must be > 0 flop/s");
    names.push_back(m.name);
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) bad("two machines have the same name");
  if (!set.pair_bandwidth.empty() && (set.pair_bandwidth.size() != n || set.pair_latency.size() != n))
    bad("pair matrices must be " + std::to_string(n) + "x" + std::to_string(n));
}

namespace {

using model::FileError;

using model::line_of;

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(int line, const std::string& field, const std::string& message) const {
    throw FileError(path_, line, field, message);
  }
  void check_keys(const toml::table& t, const std::string& prefix, std::initializer_list<std::string_view> allowed) const {
    for (auto&& [key, value] : t) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(static_cast<int>(key.source().begin.line), prefix + std::string(key.str()),
           "unknown key '" + std::string(key.str()) + "'; expected one of: " + list);
    }
  }
  std::vector<const toml::table*> tables(const toml::table& root, std::string_view key) const {
    std::vector<const toml::table*> out;
    const toml::node* node = root.get(key);
    if (!node) return out;
    const auto* arr = node->as_array();
    if (!arr) fail(line_of(*node), std::string(key), "expected [[" + std::string(key) + "]] entries");
    for (const auto& e : *arr) {
      const auto* t = e.as_table();
      if (!t) fail(line_of(e), std::string(key), "expected a table");
      out.push_back(t);
    }
    return out;
  }
  std::string name(const toml::table& t, std::string_view key, const std::string& prefix) const {
    const toml::node* node = t.get(key);
    if (!node) fail(line_of(t), prefix + std::string(key), "missing required key '" + std::string(key) + "'");
    const auto* s = node->as_string();
    if (!s || s->get().empty()) fail(line_of(*node), prefix + std::string(key), "expected a non-empty string");
    return s->get();
  }
  /// A quantity: a TOML number in base units or a string with a unit.
  std::optional<double> quantity(const toml::table& t, std::string_view key, const std::string& prefix,
                                 const std::function<double(std::string_view)>& parse, std::string_view what,
                                 bool positive) const {
    const toml::node* node = t.get(key);
    if (!node) return std::nullopt;
    double v = 0;
    if (const auto* i = node->as_integer()) v = static_cast<double>(i->get());
    else if (const auto* f = node->as_floating_point()) v = f->get();
    else if (const auto* s = node->as_string()) {
      try {
        v = parse(s->get());
      } catch (const std::exception& e) {
        fail(line_of(*node), prefix + std::string(key), e.what());
      }
    } else {
      fail(line_of(*node), prefix + std::string(key), "expected a number or a string with a unit (" + std::string(what) + ")");
    }
    if (!std::isfinite(v) || v < 0 || (positive && v == 0))
      fail(line_of(*node), prefix + std::string(key), std::string(positive ? "must be > 0 " : "must be >= 0 ") + std::string(what));
    return v;
  }
  double required(const toml::table& t, std::string_view key, const std::string& prefix,
                  const std::function<double(std::string_view)>& parse, std::string_view what, bool positive) const {
    auto v = quantity(t, key, prefix, parse, what, positive);
    if (!v) fail(line_of(t), prefix + std::string(key), "missing required key '" + std::string(key) + "' (" + std::string(what) + ")");
    return *v;
  }
  std::pair<std::string, std::string> two_names(const toml::table& t, std::string_view key, const std::string& prefix) const {
    const toml::node* node = t.get(key);
    if (!node) fail(line_of(t), prefix + std::string(key), "missing required key '" + std::string(key) + "' (two names)");
    const auto* arr = node->as_array();
    if (!arr || arr->size() != 2 || !(*arr)[0].as_string() || !(*arr)[1].as_string())
      fail(line_of(*node), prefix + std::string(key), "expected an array of two names");
    return {(*arr)[0].as_string()->get(), (*arr)[1].as_string()->get()};
  }
  /// `key` = [a, b]: two different names that `index_of` knows (a [[link]]'s LANs, a
  /// [[pair]]'s machines; `what` is "LAN" or "machine"), as indices, with their names.
  struct Ends {
    std::size_t a, b;
    std::string name_a, name_b;
  };
  Ends two_ends(const toml::table& t, std::string_view key, const std::string& prefix, std::string_view what,
                const std::function<std::optional<std::size_t>(const std::string&)>& index_of) const {
    auto [na, nb] = two_names(t, key, prefix);
    const auto a = index_of(na), b = index_of(nb);
    const std::string field = prefix + std::string(key);
    if (!a || !b) fail(line_of(t), field, "unknown " + std::string(what) + " '" + (a ? nb : na) + "'");
    if (*a == *b) fail(line_of(t), field, "the two " + std::string(what) + "s must be different");
    return {*a, *b, std::move(na), std::move(nb)};
  }

 private:
  std::string path_;
};

std::string prefix_of(std::string_view what, std::size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "].";
}

double parse_memory(std::string_view s) { return static_cast<double>(model::parse_size(s)); }

}  // namespace

MachineSet parse_machines(const std::string& text, const std::string& path) {
  const toml::table root = model::parse_toml(text, path);
  Reader r(path);
  r.check_keys(root, "", {"network", "lan", "link", "machine", "pair"});
  MachineSet set;

  std::optional<double> inter_bw, inter_lat;
  int network_line = 1;
  if (const toml::node* net = root.get("network")) {
    const auto* t = net->as_table();
    if (!t) r.fail(line_of(*net), "network", "expected a [network] table");
    network_line = line_of(*t);
    r.check_keys(*t, "network.", {"inter_bandwidth", "inter_latency"});
    inter_bw = r.quantity(*t, "inter_bandwidth", "network.", model::parse_bandwidth, "bytes/s", true);
    inter_lat = r.quantity(*t, "inter_latency", "network.", model::parse_time, "seconds", false);
  }

  const auto lan_tables = r.tables(root, "lan");
  if (lan_tables.empty()) r.fail(1, "lan", "no [[lan]] entry: every machine belongs to a LAN");
  for (std::size_t i = 0; i < lan_tables.size(); ++i) {
    const auto& t = *lan_tables[i];
    const auto p = prefix_of("lan", i);
    r.check_keys(t, p, {"name", "bandwidth", "latency"});
    Lan lan;
    lan.name = r.name(t, "name", p);
    if (set.lan_index(lan.name)) r.fail(line_of(t), p + "name", "LAN '" + lan.name + "' is defined twice");
    lan.bandwidth = r.required(t, "bandwidth", p, model::parse_bandwidth, "bytes/s between two of its machines", true);
    lan.latency = r.quantity(t, "latency", p, model::parse_time, "seconds", false).value_or(0.0);
    set.lans.push_back(lan);
  }
  const std::size_t l = set.lans.size();
  set.lan_bandwidth.assign(l, std::vector<double>(l, inter_bw.value_or(0.0)));
  set.lan_latency.assign(l, std::vector<double>(l, inter_lat.value_or(0.0)));
  const auto link_tables = r.tables(root, "link");
  std::vector<std::vector<bool>> given(l, std::vector<bool>(l, false));
  for (std::size_t i = 0; i < link_tables.size(); ++i) {
    const auto& t = *link_tables[i];
    const auto p = prefix_of("link", i);
    r.check_keys(t, p, {"lans", "bandwidth", "latency"});
    const auto e = r.two_ends(t, "lans", p, "LAN", [&](const std::string& n) { return set.lan_index(n); });
    if (given[e.a][e.b]) r.fail(line_of(t), p + "lans", "link " + e.name_a + "-" + e.name_b + " is defined twice");
    given[e.a][e.b] = given[e.b][e.a] = true;
    const double bw = r.required(t, "bandwidth", p, model::parse_bandwidth, "bytes/s", true);
    const double lat = r.quantity(t, "latency", p, model::parse_time, "seconds", false).value_or(inter_lat.value_or(0.0));
    set.lan_bandwidth[e.a][e.b] = set.lan_bandwidth[e.b][e.a] = bw;
    set.lan_latency[e.a][e.b] = set.lan_latency[e.b][e.a] = lat;
  }
  for (std::size_t a = 0; a < l; ++a)
    for (std::size_t b = a + 1; b < l; ++b)
      if (!given[a][b] && !inter_bw)
        r.fail(network_line, "network.inter_bandwidth",
               "LANs '" + set.lans[a].name + "' and '" + set.lans[b].name +
                   "' have no [[link]] and [network] gives no default inter_bandwidth");

  const auto machine_tables = r.tables(root, "machine");
  if (machine_tables.empty()) r.fail(1, "machine", "no [[machine]] entry");
  for (std::size_t i = 0; i < machine_tables.size(); ++i) {
    const auto& t = *machine_tables[i];
    const auto p = prefix_of("machine", i);
    r.check_keys(t, p, {"name", "lan", "cores", "speed", "memory"});
    Machine m;
    m.line = line_of(t);
    m.name = r.name(t, "name", p);
    if (set.machine_index(m.name)) r.fail(m.line, p + "name", "machine '" + m.name + "' is defined twice");
    const auto lan_name = r.name(t, "lan", p);
    const auto lan = set.lan_index(lan_name);
    if (!lan) r.fail(line_of(*t.get("lan")), p + "lan", "unknown LAN '" + lan_name + "'");
    m.lan = *lan;
    if (const toml::node* c = t.get("cores")) {
      const auto* ci = c->as_integer();
      if (!ci || ci->get() < 1 || ci->get() > (1 << 16)) r.fail(line_of(*c), p + "cores", "expected an integer in [1, 65536]");
      m.cores = static_cast<std::uint32_t>(ci->get());
    }
    m.speed = r.required(t, "speed", p, model::parse_speed, "flop/s per core", true);
    m.memory = static_cast<std::uint64_t>(r.quantity(t, "memory", p, parse_memory, "bytes", false).value_or(0.0));
    set.machines.push_back(m);
  }

  const auto pair_tables = r.tables(root, "pair");
  if (!pair_tables.empty()) {
    const std::size_t n = set.machines.size();
    set.pair_bandwidth.assign(n, std::vector<double>(n, 0.0));
    set.pair_latency.assign(n, std::vector<double>(n, -1.0));
  }
  for (std::size_t i = 0; i < pair_tables.size(); ++i) {
    const auto& t = *pair_tables[i];
    const auto p = prefix_of("pair", i);
    r.check_keys(t, p, {"machines", "bandwidth", "latency"});
    const auto e = r.two_ends(t, "machines", p, "machine", [&](const std::string& n) { return set.machine_index(n); });
    const double bw = r.required(t, "bandwidth", p, model::parse_bandwidth, "bytes/s", true);
    set.pair_bandwidth[e.a][e.b] = set.pair_bandwidth[e.b][e.a] = bw;
    if (auto lat = r.quantity(t, "latency", p, model::parse_time, "seconds", false))
      set.pair_latency[e.a][e.b] = set.pair_latency[e.b][e.a] = *lat;
  }
  validate(set);
  return set;
}

MachineSet load_machines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw FileError(path, 0, "", "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_machines(ss.str(), path);
}

std::string to_toml(const MachineSet& set, const std::string& header) {
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<double>::max_digits10);
  std::istringstream h(header);
  for (std::string line; std::getline(h, line);) out << "# " << line << "\n";
  if (!header.empty()) out << "\n";
  const std::size_t l = set.lans.size();
  for (const auto& lan : set.lans)
    out << "[[lan]]\nname = \"" << lan.name << "\"\nbandwidth = " << lan.bandwidth << "   # bytes/s\nlatency = "
        << lan.latency << "   # s\n\n";
  for (std::size_t a = 0; a < l; ++a)
    for (std::size_t b = a + 1; b < l; ++b)
      out << "[[link]]\nlans = [\"" << set.lans[a].name << "\", \"" << set.lans[b].name << "\"]\nbandwidth = "
          << set.lan_bandwidth[a][b] << "\nlatency = " << set.lan_latency[a][b] << "\n\n";
  for (const auto& m : set.machines) {
    out << "[[machine]]\nname = \"" << m.name << "\"\nlan = \"" << set.lans[m.lan].name << "\"\ncores = " << m.cores
        << "\nspeed = " << m.speed << "   # flop/s per core\n";
    if (m.memory > 0) out << "memory = " << m.memory << "\n";
    out << "\n";
  }
  const std::size_t n = set.machines.size();
  if (!set.pair_bandwidth.empty())
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j)
        if (set.pair_bandwidth[i][j] > 0) {
          out << "[[pair]]\nmachines = [\"" << set.machines[i].name << "\", \"" << set.machines[j].name
              << "\"]\nbandwidth = " << set.pair_bandwidth[i][j] << "\n";
          if (set.pair_latency[i][j] >= 0) out << "latency = " << set.pair_latency[i][j] << "\n";
          out << "\n";
        }
  return out.str();
}

}  // namespace treefarm::plan
