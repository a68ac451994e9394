#include "tools/deploy/HostsFile.hpp"

#include <limits>
#include <map>
#include <toml++/toml.h>

namespace treefarm::deploy {

namespace {
int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

std::string get_string(const toml::table& t, const std::string& key, const std::string& path, const std::string& where,
                       std::string fallback) {
  const auto* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_string()) throw model::FileError(path, line_of(*n), where + key, "expected a string");
  return n->as_string()->get();
}

std::uint16_t get_port(const toml::table& t, const std::string& key, const std::string& path, const std::string& where,
                       std::uint16_t fallback) {
  const auto* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_integer()) throw model::FileError(path, line_of(*n), where + key, "expected an integer port");
  const auto v = n->as_integer()->get();
  if (v < 1 || v > 65535) throw model::FileError(path, line_of(*n), where + key, "port " + std::to_string(v) + " is not in 1-65535");
  return static_cast<std::uint16_t>(v);
}

std::vector<std::string> get_strings(const toml::table& t, const std::string& key, const std::string& path,
                                     const std::string& where, std::vector<std::string> fallback) {
  const auto* n = t.get(key);
  if (!n) return fallback;
  const auto* arr = n->as_array();
  if (!arr) throw model::FileError(path, line_of(*n), where + key, "expected an array of strings");
  std::vector<std::string> out;
  for (const auto& e : *arr) {
    if (!e.is_string()) throw model::FileError(path, line_of(e), where + key, "expected an array of strings");
    out.push_back(e.as_string()->get());
  }
  return out;
}

void check_keys(const toml::table& t, const std::vector<std::string>& allowed, const std::string& path, const std::string& where) {
  for (const auto& [k, v] : t) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == k.str();
    if (!ok) throw model::FileError(path, line_of(v), where + std::string(k.str()), "unknown key");
  }
}

// Fills the keys shared by [defaults] and [[host]]; `base` supplies the defaults.
Host read_common(const toml::table& t, const Host& base, const std::string& path, const std::string& where) {
  Host h = base;
  h.user = get_string(t, "user", path, where, base.user);
  h.port = get_port(t, "port", path, where, base.port);
  h.ssh_options = get_strings(t, "ssh_options", path, where, base.ssh_options);
  h.bin_dir = get_string(t, "bin_dir", path, where, base.bin_dir);
  h.work_dir = get_string(t, "work_dir", path, where, base.work_dir);
  h.port_base = get_port(t, "port_base", path, where, base.port_base);
  if (h.bin_dir.empty() || h.bin_dir[0] != '/') throw model::FileError(path, line_of(t), where + "bin_dir", "must be an absolute path");
  if (h.work_dir.empty() || h.work_dir[0] != '/') throw model::FileError(path, line_of(t), where + "work_dir", "must be an absolute path");
  return h;
}
}  // namespace

HostsFile parse_hosts(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw model::FileError(path, static_cast<int>(e.source().begin.line), "", std::string(e.description()));
  }
  check_keys(root, {"defaults", "host"}, path, "");
  Host defaults;
  if (const auto* d = root.get("defaults")) {
    if (!d->is_table()) throw model::FileError(path, line_of(*d), "defaults", "expected a table [defaults]");
    check_keys(*d->as_table(), {"user", "port", "ssh_options", "bin_dir", "work_dir", "port_base"}, path, "defaults.");
    defaults = read_common(*d->as_table(), defaults, path, "defaults.");
  }
  const auto* hosts = root.get("host");
  if (!hosts || !hosts->is_array_of_tables() || hosts->as_array()->empty())
    throw model::FileError(path, hosts ? line_of(*hosts) : 1, "host", "no [[host]] entry: a hosts file needs at least one host");
  HostsFile out{path, {}};
  std::map<std::string, int> seen;
  std::size_t i = 0;
  for (const auto& e : *hosts->as_array()) {
    const auto& t = *e.as_table();
    const std::string where = "host[" + std::to_string(i++) + "].";
    check_keys(t, {"name", "address", "user", "port", "ssh_options", "bin_dir", "work_dir", "port_base", "nodes"}, path, where);
    Host h = read_common(t, defaults, path, where);
    h.line = line_of(t);
    h.address = get_string(t, "address", path, where, "");
    if (h.address.empty()) throw model::FileError(path, h.line, where + "address", "required: the host's name or IP address");
    if (h.address.find_first_of(" \t'\"\\$`;&|<>") != std::string::npos || h.address[0] == '-')
      throw model::FileError(path, h.line, where + "address", "'" + h.address + "' is not a host name or address");
    h.name = get_string(t, "name", path, where, h.address);
    h.nodes = get_strings(t, "nodes", path, where, {});
    if (!seen.emplace(h.name, h.line).second)
      throw model::FileError(path, h.line, where + "name", "host '" + h.name + "' is also defined on line " + std::to_string(seen[h.name]));
    out.hosts.push_back(std::move(h));
  }
  return out;
}

HostsFile load_hosts(const std::string& path) { return parse_hosts(model::read_input_file(path), path); }

Placement place_nodes(const model::Experiment& ex, const HostsFile& hf) {
  constexpr auto none = std::numeric_limits<std::size_t>::max();
  Placement p;
  p.host_of.assign(ex.nodes.size(), none);
  for (std::size_t h = 0; h < hf.hosts.size(); ++h) {
    const auto& host = hf.hosts[h];
    for (const auto& name : host.nodes) {
      const auto i = ex.node_index(name);
      if (!i) throw model::FileError(hf.path, host.line, "host[" + std::to_string(h) + "].nodes",
                                     "node '" + name + "' is not in the experiment " + ex.path);
      if (p.host_of[*i] != none)
        throw model::FileError(hf.path, host.line, "host[" + std::to_string(h) + "].nodes",
                               "node '" + name + "' is already placed on host '" + hf.hosts[p.host_of[*i]].name + "'");
      p.host_of[*i] = h;
    }
  }
  std::vector<std::size_t> pool;
  for (std::size_t h = 0; h < hf.hosts.size(); ++h)
    if (hf.hosts[h].nodes.empty()) pool.push_back(h);
  if (pool.empty())
    for (std::size_t h = 0; h < hf.hosts.size(); ++h) pool.push_back(h);
  std::size_t cursor = 0;
  for (auto& h : p.host_of)
    if (h == none) h = pool[cursor++ % pool.size()];
  std::vector<std::uint16_t> next_port(hf.hosts.size());
  for (std::size_t h = 0; h < hf.hosts.size(); ++h) next_port[h] = hf.hosts[h].port_base;
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) p.port_of.push_back(next_port[p.host_of[i]]++);
  return p;
}

}  // namespace treefarm::deploy
