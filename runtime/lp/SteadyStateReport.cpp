// to_json and print_report of SteadyState.hpp: how `treefarm predict` shows an optimum.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>

#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {
namespace {

std::string_view comm_name(model::CommModel c) {
  return c == model::CommModel::one_port ? "one-port" : "multi-port";
}

std::string_view objective_name(Objective o) {
  switch (o) {
    case Objective::max_min: return "max-min fair";
  }
  return "?";
}

std::string num(double x) {
  std::ostringstream out;
  out << std::setprecision(5) << x;
  return out.str();
}

std::string percent(double x) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << 100.0 * x << '%';
  return out.str();
}

/// Saturated resources of node u, as names.
std::vector<std::string> saturated_of(const Solution& s, std::size_t u) {
  std::vector<std::string> out;
  for (const auto& sat : s.saturated) {
    if (sat.node == u) out.emplace_back(to_string(sat.resource));
  }
  return out;
}

/// Prints rows of cells left-aligned in columns as wide as their widest cell.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()), 0);
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      line += r[c];
      if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
    }
    out << line << '\n';
  }
}

}  // namespace

nlohmann::json to_json(const PlatformModel& m, const Solution& s) {
  nlohmann::json j;
  j["comm_model"] = m.comm_model == model::CommModel::one_port ? "one_port" : "multi_port";
  j["fairness"] = "maxmin";
  j["objective"] = s.fair_throughput;  // min_k α(k)/w(k), tasks/s
  j["fair_throughput"] = s.fair_throughput;
  j["apps"] = nlohmann::json::array();
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    j["apps"].push_back({{"name", m.apps[k].name},
                         {"weight", m.apps[k].weight},
                         {"throughput", s.app_throughput[k]}});
    if (m.apps[k].result_bytes > 0.0) j["apps"].back()["result_bytes"] = m.apps[k].result_bytes;  // outputs
  }
  if (!m.hosts.empty()) {
    j["hosts"] = nlohmann::json::array();
    for (std::size_t h = 0; h < m.hosts.size(); ++h)
      j["hosts"].push_back({{"name", m.hosts[h].name},
                            {"cores", m.hosts[h].cores},
                            {"comm_cpu_seconds_per_byte", m.hosts[h].comm_cpu_seconds_per_byte},
                            {"input_cpu_seconds_per_byte", m.hosts[h].input_cpu_seconds_per_byte},
                            {"receive_cpu_seconds_per_byte", m.hosts[h].receive_cpu_seconds_per_byte},
                            {"cpu_utilisation", s.host_utilisation[h]}});
  }
  j["nodes"] = nlohmann::json::array();
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    nlohmann::json apps = nlohmann::json::object();
    nlohmann::json received = nlohmann::json::object();
    for (std::size_t k = 0; k < m.apps.size(); ++k) {
      apps[m.apps[k].name] = s.alpha[u][k];
      received[m.apps[k].name] = s.sent[u][k];
    }
    nlohmann::json node{{"name", m.nodes[u].name},
                        {"apps", apps},
                        {"received", received},
                        {"cpu_utilisation", s.cpu_utilisation[u]},
                        {"link_utilisation", s.link_utilisation[u]},
                        {"port_utilisation", s.port_utilisation[u]},
                        {"buffer_utilisation", u < s.buffer_utilisation.size() ? s.buffer_utilisation[u] : 0.0},
                        {"saturated", saturated_of(s, u)}};
    node["parent"] = m.nodes[u].parent < 0 ? nlohmann::json(nullptr)
                                           : nlohmann::json(m.nodes[m.nodes[u].parent].name);
    j["nodes"].push_back(std::move(node));
  }
  return j;
}

void print_report(std::ostream& out, const PlatformModel& m, const Solution& s) {
  out << "Steady-state LP (" << comm_name(m.comm_model) << ", " << objective_name(s.objective)
      << "): fair throughput " << num(s.fair_throughput) << " tasks/s per unit of weight\n";
  out << "LP: " << s.lp_variables << " variables, " << s.lp_rows << " rows; built in "
      << num(s.build_seconds) << " s, solved in " << num(s.solve_seconds) << " s\n\n";

  std::vector<std::vector<std::string>> apps{{"application", "weight", "tasks/s", "tasks/s/weight"}};
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    apps.push_back({m.apps[k].name, num(m.apps[k].weight), num(s.app_throughput[k]),
                    num(s.app_throughput[k] / m.apps[k].weight)});
  }
  print_table(out, apps);
  out << '\n';

  const bool one_port = m.comm_model == model::CommModel::one_port;
  std::vector<std::string> header{"node", "parent", "cores", "cpu", "link",
                                  one_port ? "port" : "out"};
  for (const auto& app : m.apps) header.push_back(app.name + " tasks/s");
  header.push_back("saturated");
  std::vector<std::vector<std::string>> nodes{header};
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    const auto& node = m.nodes[u];
    std::vector<std::string> r{node.name, node.parent < 0 ? "-" : m.nodes[node.parent].name,
                               std::to_string(node.cores), percent(s.cpu_utilisation[u]),
                               u == 0 || std::isinf(node.link_bandwidth) ? "-" : percent(s.link_utilisation[u]),
                               percent(s.port_utilisation[u])};
    for (std::size_t k = 0; k < m.apps.size(); ++k) r.push_back(num(s.alpha[u][k]));
    std::string sat;
    for (const auto& name : saturated_of(s, u)) sat += (sat.empty() ? "" : ",") + name;
    r.push_back(sat.empty() ? "-" : sat);
    nodes.push_back(std::move(r));
  }
  print_table(out, nodes);
  for (std::size_t h = 0; h < m.hosts.size(); ++h)
    out << "host " << m.hosts[h].name << ": " << num(m.hosts[h].cores) << " CPUs shared by its nodes' tasks and "
        << "transfers (" << num(m.hosts[h].comm_cpu_seconds_per_byte * 1e9) << " CPU-ns per byte moved, "
        << num(m.hosts[h].input_cpu_seconds_per_byte * 1e9) << " per input byte generated, "
        << num(m.hosts[h].receive_cpu_seconds_per_byte * 1e9) << " per input byte received), "
        << percent(s.host_utilisation[h]) << " busy\n";
  out << "\ncpu: busy fraction of the node's cores; link: of the link from its parent ('-': "
         "none or loopback); "
      << (one_port ? "port: of its one-port output (all sends to children)"
                   : "out: of its max_out_bandwidth (0% when unbounded)")
      << ". saturated: used at >= 99.9999% in the optimum"
      << (m.buffer > 0 ? " (buffer: the node's " + std::to_string(m.buffer) +
                             "-task buffer cannot cover its request round trip; docs/lp.md \"Latency\")"
                       : std::string())
      << ".\n";
}

}  // namespace treefarm::lp
