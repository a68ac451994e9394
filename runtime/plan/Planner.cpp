#include "runtime/plan/Planner.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

#include "runtime/lp/ClpSolver.hpp"
#include "runtime/model/EnumNames.hpp"
#include "runtime/model/ExperimentFile.hpp"

namespace treefarm::plan {

namespace {

constexpr model::EnumNames<Method, 4> method_names = {{{Method::qlse, "qlse"},
                                                       {Method::greedy, "greedy"},
                                                       {Method::rmshc, "rmshc"},
                                                       {Method::exhaustive, "exhaustive"}}};

}  // namespace

std::string_view to_string(Method m) { return model::name_of(method_names, m); }

std::optional<Method> method_from_string(std::string_view name) { return model::value_of(method_names, name); }

namespace {

double parse_rate(std::string_view text, std::string_view what) {
  std::string s(text);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !(v > 0) || !std::isfinite(v))
    throw std::invalid_argument("--qos: " + std::string(what) + " '" + s + "' is not a number > 0 (tasks/s)");
  return v;
}

std::string trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Qos parse_qos(std::string_view text, const std::vector<model::AppSpec>& apps) {
  Qos q;
  const std::string t = trim(text);
  if (t.empty() || t == "maximum" || t == "max") return q;
  q.maximum = false;
  if (t.find('=') == std::string::npos) {
    const double r = parse_rate(t, "fair throughput");
    for (const auto& a : apps) q.rates.push_back(r * a.weight);
    return q;
  }
  q.rates.assign(apps.size(), -1.0);
  std::stringstream ss(t);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--qos: '" + item + "' is not APP=RATE");
    const std::string name = trim(std::string_view(item).substr(0, eq));
    std::size_t k = 0;
    while (k < apps.size() && apps[k].name != name) ++k;
    if (k == apps.size()) throw std::invalid_argument("--qos: no application called '" + name + "'");
    if (q.rates[k] >= 0) throw std::invalid_argument("--qos: application '" + name + "' is given twice");
    q.rates[k] = parse_rate(std::string_view(item).substr(eq + 1), "rate of " + name);
  }
  for (std::size_t k = 0; k < apps.size(); ++k)
    if (q.rates[k] < 0)
      throw std::invalid_argument("--qos: no rate for application '" + apps[k].name +
                                  "' (name every application, or give one fair throughput)");
  return q;
}

PlanResult plan(const MachineSet& machines, const std::vector<model::AppSpec>& apps, const model::RunSpec& run,
                const PlanOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  PlanResult r;
  r.method = o.method;
  r.qos = o.qos;
  if (!o.qos.maximum && o.qos.rates.size() != apps.size())
    throw std::invalid_argument("plan: one QoS rate per application expected");
  TreeEvaluator user(machines, apps, run);
  // With explicit rates, the searches maximise the common scale of the rates: the rates
  // become the weights of the max-min objective (fair throughput >= 1 = QoS met).
  auto weighted = apps;
  if (!o.qos.maximum)
    for (std::size_t k = 0; k < apps.size(); ++k) weighted[k].weight = o.qos.rates[k];

  if (o.method == Method::qlse || o.method == Method::greedy) {
    auto map = [&](const std::vector<double>& rates) {
      return o.method == Method::qlse ? qlse_map(machines, apps, rates, o.qlse) : greedy_map(machines, apps, rates, o.qlse);
    };
    Mapping m;
    if (o.qos.maximum) {
      // The largest scale λ of the rates λ·w(k) that the method can map (bisection).
      double power = 0, need = 0;
      for (const auto& x : machines.machines) power += x.power();
      for (const auto& a : apps) need += a.weight * a.task_flops();
      double lo = 0, hi = power / need;
      auto rates_at = [&](double lambda) {
        std::vector<double> rates;
        for (const auto& a : apps) rates.push_back(lambda * a.weight);
        return rates;
      };
      m = map(rates_at(0));
      for (std::size_t i = 0; i < o.bisection_steps; ++i) {
        const double mid = 0.5 * (lo + hi);
        auto candidate = map(rates_at(mid));
        if (candidate.found) {
          lo = mid;
          m = std::move(candidate);
        } else {
          hi = mid;
        }
      }
    } else {
      m = map(o.qos.rates);
    }
    r.found = m.found;
    r.tree = m.tree;
    r.mapping = std::move(m);
  } else {
    TreeEvaluator ev(machines, weighted, run);
    r.search = o.method == Method::rmshc ? rmshc(ev, lan_gateway_tree(machines), o.rmshc) : exhaustive(ev);
    r.found = true;
    r.tree = r.search->tree;
    r.evaluations = r.search->evaluations;
  }

  if (r.found) {
    r.model = user.model(r.tree, &r.order);
    lp::ClpSolver solver;
    r.solution = lp::solve(r.model, solver);
    r.fair_throughput = r.solution.fair_throughput;
    if (o.qos.maximum) {
      r.qos_scale = r.fair_throughput;
      r.qos_satisfied = true;
    } else {
      auto m = r.model;
      for (std::size_t k = 0; k < m.apps.size(); ++k) m.apps[k].weight = o.qos.rates[k];
      r.qos_scale = lp::solve(m, solver).fair_throughput;
      r.qos_satisfied = r.qos_scale >= 1.0 - 1e-6;
    }
    // Slides 14-15 on the LP's flows: bytes/s on each link, flop/s on each machine.
    double total = 0, inside = 0, ratio = 0;
    std::size_t computing = 0;
    for (std::size_t u = 0; u < r.order.size(); ++u) {
      const std::size_t machine = r.order[u];
      double flops = 0, bytes = 0;
      for (std::size_t k = 0; k < apps.size(); ++k) {
        flops += r.solution.alpha[u][k] * apps[k].task_flops();
        bytes += r.solution.sent[u][k] * static_cast<double>(apps[k].input_bytes());
      }
      if (flops > 0) {
        ratio += machines.machines[machine].power() / flops;
        ++computing;
      }
      const int p = r.tree.parent[machine];
      if (p < 0) continue;
      total += bytes;
      if (machines.machines[static_cast<std::size_t>(p)].lan == machines.machines[machine].lan) inside += bytes;
    }
    r.lan_hit_ratio = total > 0 ? inside / total : 1.0;
    r.computational_ratio = computing > 0 ? ratio / static_cast<double>(computing) : 0.0;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

nlohmann::json to_json(const PlanResult& r, const MachineSet& s) {
  nlohmann::json j;
  j["method"] = std::string(to_string(r.method));
  j["found"] = r.found;
  j["fair_throughput"] = r.fair_throughput;
  j["seconds"] = r.seconds;
  j["evaluations"] = r.evaluations;
  nlohmann::json q;
  if (r.qos.maximum) q["request"] = "maximum";
  else {
    q["request"] = nlohmann::json::object();
    for (std::size_t k = 0; k < r.qos.rates.size() && k < r.model.apps.size(); ++k) q["request"][r.model.apps[k].name] = r.qos.rates[k];
    if (r.model.apps.empty()) q["request"] = r.qos.rates;
  }
  q["satisfied"] = r.qos_satisfied;
  q["scale"] = r.qos_scale;
  j["qos"] = q;
  j["lan_hit_ratio"] = r.lan_hit_ratio;
  j["computational_ratio"] = r.computational_ratio;
  j["machines_used"] = r.found ? r.tree.size() : 0;
  j["apps"] = nlohmann::json::array();
  j["tree"] = nlohmann::json::array();
  if (r.found) {
    for (std::size_t k = 0; k < r.model.apps.size(); ++k)
      j["apps"].push_back({{"name", r.model.apps[k].name}, {"weight", r.model.apps[k].weight},
                           {"throughput", r.solution.app_throughput[k]}});
    for (std::size_t u = 0; u < r.order.size(); ++u) {
      const auto& m = s.machines[r.order[u]];
      const int p = r.tree.parent[r.order[u]];
      nlohmann::json node{{"machine", m.name}, {"lan", s.lans[m.lan].name}, {"cores", m.cores}, {"speed", m.speed},
                          {"cpu_utilisation", r.solution.cpu_utilisation[u]}};
      if (p >= 0) {
        node["parent"] = s.machines[static_cast<std::size_t>(p)].name;
        node["bandwidth"] = s.bandwidth(static_cast<std::size_t>(p), r.order[u]);
        node["link_utilisation"] = r.solution.link_utilisation[u];
      } else {
        node["parent"] = nullptr;
      }
      j["tree"].push_back(node);
    }
  }
  if (r.mapping) {
    const auto& m = *r.mapping;
    j["mapping"] = {{"found", m.found}, {"tasks", m.graph.parent.size()}, {"mcr", m.graph.mcr},
                    {"computational_request", m.graph.computational_request},
                    {"bandwidth_request", m.graph.bandwidth_request}, {"quartile", m.threshold},
                    {"lan_hit_ratio", m.lan_hit_ratio}, {"computational_ratio", m.computational_ratio}};
  }
  if (r.search) {
    const auto& x = *r.search;
    j["search"] = {{"evaluations", x.evaluations}, {"trees_seen", x.trees_seen}, {"trees_pruned", x.trees_pruned}, {"starts", x.starts},
                   {"local_optima", x.local_optima}, {"budget_exhausted", x.budget_exhausted}, {"seconds", x.seconds}};
  }
  return j;
}

namespace {
std::string si(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  std::ostringstream out;
  out << std::setprecision(3) << v << " " << prefixes[i] << unit;
  return out.str();
}
}  // namespace

void print_plan(std::ostream& out, const PlanResult& r, const MachineSet& s) {
  out << "method: " << to_string(r.method) << "   planning time: " << std::setprecision(3) << r.seconds << " s";
  if (r.evaluations) out << "   LP evaluations: " << r.evaluations;
  out << "\n";
  if (r.mapping)
    out << "task graph: " << r.mapping->graph.parent.size() << " tasks of " << si(r.mapping->graph.mcr, "flop/s")
        << " (QoS demand " << si(r.mapping->graph.computational_request, "flop/s") << ", "
        << si(r.mapping->graph.bandwidth_request, "B/s") << ")"
        << (r.mapping->threshold >= 0 ? ", mapped at bandwidth quartile " + std::to_string(r.mapping->threshold) : "")
        << "\n";
  if (!r.found) {
    out << "no tree: " << to_string(r.method) << " found no mapping that meets the QoS\n";
    return;
  }
  out << "tree (" << r.tree.size() << " of " << s.machines.size() << " machines):\n";
  const auto kids = r.tree.children();
  std::function<void(std::size_t, int)> show = [&](std::size_t i, int depth) {
    const auto& m = s.machines[i];
    out << std::string(static_cast<std::size_t>(2 + 2 * depth), ' ') << m.name << "  [" << s.lans[m.lan].name << ", "
        << m.cores << " x " << si(m.speed, "flop/s") << "]";
    const int p = r.tree.parent[i];
    if (p < 0) out << "  master";
    else out << "  link " << si(s.bandwidth(static_cast<std::size_t>(p), i), "B/s");
    out << "\n";
    for (std::size_t c : kids[i]) show(c, depth + 1);
  };
  show(r.tree.root(), 0);
  out << "predicted fair throughput: " << std::setprecision(6) << r.fair_throughput << " tasks/s per unit of weight\n";
  for (std::size_t k = 0; k < r.model.apps.size(); ++k)
    out << "  " << r.model.apps[k].name << ": " << r.solution.app_throughput[k] << " tasks/s\n";
  out << "QoS " << (r.qos.maximum ? std::string("maximum") : "requested") << ": "
      << (r.qos_satisfied ? "satisfied" : "FAILED") << " (scale " << r.qos_scale << ")\n";
  out << "LAN hit ratio: " << std::setprecision(3) << r.lan_hit_ratio
      << "   task-machine computational ratio: " << r.computational_ratio << "\n";
}

std::string experiment_toml(const PlanResult& r, const MachineSet& s, const std::vector<model::AppSpec>& apps,
                            const model::RunSpec& run, const std::string& header) {
  if (!r.found) throw std::invalid_argument("plan: no tree to write");
  model::Experiment ex;
  std::ostringstream about;
  about << std::setprecision(std::numeric_limits<double>::max_digits10) << header
        << "\nPredicted fair throughput: " << r.fair_throughput << " tasks/s per unit of weight (LP, one-port)"
        << "\nUnits: flop/s per core, bytes/s, seconds. LAN of each node:";
  for (std::size_t machine : r.order) {
    const auto& m = s.machines[machine];
    model::NodeSpec n;
    n.name = m.name;
    n.cores = m.cores;
    n.speed = m.speed;
    const int p = r.tree.parent[machine];
    if (p >= 0) {
      n.parent = s.machines[static_cast<std::size_t>(p)].name;
      n.bandwidth = s.bandwidth(static_cast<std::size_t>(p), machine);
      n.latency = s.latency(static_cast<std::size_t>(p), machine);
    }
    about << (ex.nodes.empty() ? " " : ", ") << m.name << " " << s.lans[m.lan].name;
    ex.nodes.push_back(std::move(n));
  }
  ex.apps = apps;
  ex.run = run;
  return model::write_experiment(ex, about.str());
}

model::Experiment parse_apps(const std::string& text, const std::string& path) {
  try {
    const auto root = toml::parse(text, std::string_view(path));
    if (const auto* node = root.get("node"))
      throw model::FileError(path, static_cast<int>(node->source().begin.line), "node",
                             "an APPS file holds [[app]] tables and an optional [run] table; the [[node]] entries "
                             "are what `treefarm plan` writes");
  } catch (const toml::parse_error& e) {
    throw model::FileError(path, static_cast<int>(e.source().begin.line), "", std::string(e.description()));
  }
  return model::parse_experiment_nodes_optional(text, path);
}

model::Experiment load_apps(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw model::FileError(path, 0, "", "cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_apps(ss.str(), path);
}

}  // namespace treefarm::plan
