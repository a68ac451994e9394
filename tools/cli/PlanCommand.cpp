// treefarm plan, treefarm gen-machines (runtime/plan, docs/planning.md, docs/machines-file.md).
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "runtime/model/Units.hpp"
#include "runtime/node/ExitCode.hpp"
#include "runtime/plan/MachineGenerator.hpp"
#include "runtime/plan/Planner.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/process/Interrupt.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {

struct PlanCli {
  std::string machines, apps, method = "rmshc", qos = "maximum", out;
  bool json = false;
  plan::PlanOptions options;
};

struct GenMachinesCli {
  plan::GenMachinesOptions gen_options;
  std::string cores, speed, lan_bandwidth, inter_bandwidth, gen_out;
};

std::pair<std::string, std::string> split_pair(const std::string& text, const std::string& option) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) return {text, text};
  if (text.find(',', comma + 1) != std::string::npos)
    throw cli_support::UsageError(option + ": expected MIN,MAX or one value, got '" + text + "'");
  return {text.substr(0, comma), text.substr(comma + 1)};
}

/// A quantity given as a plain number (base units) or with a unit.
double quantity(const std::string& text, const std::string& option, double (*parse)(std::string_view)) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  try {
    return parse(text);
  } catch (const std::exception& e) {
    throw cli_support::UsageError(option + ": " + e.what());
  }
}

void range(const std::string& text, const std::string& option, double (*parse)(std::string_view), double& lo,
           double& hi) {
  if (text.empty()) return;
  const auto [a, b] = split_pair(text, option);
  lo = quantity(a, option, parse);
  hi = quantity(b, option, parse);
}

double plain(std::string_view s) { return std::stod(std::string(s)); }

std::string command_line(const PlanCli& s) {
  std::ostringstream c;
  c << "treefarm plan " << s.machines << " --apps " << s.apps << " --method " << s.method << " --qos " << s.qos;
  if (s.options.method == plan::Method::rmshc)
    c << " --seed " << s.options.rmshc.seed << " --starts " << s.options.rmshc.starts;
  return c.str();
}

}  // namespace

void add_plan_command(CLI::App& app, Commands& commands) {
  auto state = std::make_shared<PlanCli>();
  auto& s = *state;
  auto* cmd = app.add_subcommand("plan", "Choose the tree (master and parents) for the machines of several LANs: "
                                      "QLSE, greedy, RMSHC or exhaustive; write the experiment file");
  cmd->add_option("machines", s.machines, "MACHINES.toml (docs/machines-file.md)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--apps", s.apps, "APPS.toml: [[app]] tables and an optional [run], as in an experiment file")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--method", s.method, "qlse | greedy | rmshc | exhaustive (<= 8 machines)")
      ->capture_default_str()
      ->check(CLI::IsMember({"qlse", "greedy", "rmshc", "exhaustive"}));
  cmd->add_option("--qos", s.qos,
                     "maximum, a fair throughput R (tasks/s per unit of weight), or APP=RATE,... (tasks/s, every app)")
      ->capture_default_str();
  cmd->add_option("--out", s.out, "Write the planned experiment file here");
  cmd->add_flag("--json", s.json, "Print one JSON object (fair_throughput, seconds, qos, tree, ...)");
  cmd->add_option("--seed", s.options.rmshc.seed, "rmshc: random seed")->capture_default_str();
  cmd->add_option("--starts", s.options.rmshc.starts, "rmshc: start points (wang2006's x)")->capture_default_str();
  cmd->add_option("--max-evaluations", s.options.rmshc.max_evaluations, "rmshc: budget in LP solves (0 = none)")
      ->capture_default_str();
  cmd->add_option("--max-seconds", s.options.rmshc.max_seconds, "rmshc: budget in seconds (0 = none)")
      ->capture_default_str()
      ->check(cli_support::non_negative_seconds());
  cmd->add_option("--neighbours", s.options.rmshc.max_neighbours,
                     "rmshc: neighbours evaluated per step (the whole neighbourhood if smaller)")
      ->capture_default_str();
  cmd->add_option("--fan-out", s.options.qlse.fan_out, "qlse/greedy: children per task of the task tree")
      ->capture_default_str()
      ->check(treefarm::cli_support::positive_number());

  commands.push_back({cmd, [state]() -> int {
    auto& p = *state;
    auto& out = std::cout;
    auto& err = std::cerr;
    // main() turns SIGINT/SIGTERM into a flag for the launchers; a search has nothing to
    // clean up and never polls it, so Ctrl-C ends it at once (--out is written atomically).
    process::exit_at_once_on_stop("treefarm", "the search stopped; no tree written");
    const auto machines = plan::load_machines(p.machines);
    const auto apps = plan::load_apps(p.apps);
    p.options.method = *plan::method_from_string(p.method);
    try {
      p.options.qos = plan::parse_qos(p.qos, apps.apps);
    } catch (const std::invalid_argument& e) {
      throw cli_support::UsageError(e.what());
    }
    const auto result = plan::plan(machines, apps.apps, apps.run, p.options);
    if (p.json) out << plan::to_json(result, machines).dump(1) << "\n";
    else print_plan(out, result, machines);
    if (!p.out.empty() && result.found) {
      metrics::write_file_atomically(p.out, plan::experiment_toml(result, machines, apps.apps, apps.run,
                                                                  "Planned by: " + command_line(p)));
      if (!p.json) out << "wrote " << p.out << "\n";
    }
    if (!result.found || !result.qos_satisfied) {
      err << "treefarm plan: the QoS is not met" << (result.found ? "" : " (no tree written)") << "\n";
      return node::exit_wrong_results;
    }
    return 0;
  }});
}

void add_gen_machines_command(CLI::App& app, Commands& commands) {
  auto state = std::make_shared<GenMachinesCli>();
  auto& s = *state;
  auto* cmd = app.add_subcommand("gen-machines", "Print a random multi-LAN MACHINES.toml (for planning studies)");
  cmd->add_option("--machines", s.gen_options.machines, "Machines")->required()->check(treefarm::cli_support::positive_number());
  cmd->add_option("--lans", s.gen_options.lans, "LANs (each gets at least one machine)")->required()->check(treefarm::cli_support::positive_number());
  cmd->add_option("--seed", s.gen_options.seed, "Random seed")->required();
  cmd->add_option("--cores", s.cores, "Cores per machine: MIN,MAX (uniform integers; default 1,8)");
  cmd->add_option("--speed", s.speed, "flop/s per core: MIN,MAX, e.g. 1Gf,4Gf (uniform; default 1Gf,4Gf)");
  cmd->add_option("--lan-bandwidth", s.lan_bandwidth,
                    "Inside a LAN: MIN,MAX, e.g. 100Mbps,1Gbps (log-uniform per LAN; the default)");
  cmd->add_option("--inter-bandwidth", s.inter_bandwidth,
                    "Between two LANs: MIN,MAX, e.g. 1Mbps,100Mbps (log-uniform per pair; the default)");
  cmd->add_option("--out", s.gen_out, "Write the file here instead of printing it");
  commands.push_back({cmd, [state] {
    auto& c = *state;
    auto& out = std::cout;
    auto& err = std::cerr;
    auto& g = c.gen_options;
    if (!c.cores.empty()) {
      double lo = 0, hi = 0;
      range(c.cores, "--cores", plain, lo, hi);
      if (lo < 1 || hi < lo || lo != static_cast<double>(static_cast<std::uint32_t>(lo)) ||
          hi != static_cast<double>(static_cast<std::uint32_t>(hi)))
        throw cli_support::UsageError("--cores: expected whole numbers 1 <= MIN <= MAX");
      g.cores_min = static_cast<std::uint32_t>(lo);
      g.cores_max = static_cast<std::uint32_t>(hi);
    }
    range(c.speed, "--speed", model::parse_speed, g.speed_min, g.speed_max);
    range(c.lan_bandwidth, "--lan-bandwidth", model::parse_bandwidth, g.lan_bandwidth_min, g.lan_bandwidth_max);
    range(c.inter_bandwidth, "--inter-bandwidth", model::parse_bandwidth, g.inter_bandwidth_min, g.inter_bandwidth_max);
    const auto set = plan::generate_machines(g);
    const auto text = plan::to_toml(set, "Generated by: " + plan::gen_machines_command(g) +
                                             "\nFormat: docs/machines-file.md. Units: bytes/s, seconds, flop/s per core.");
    if (c.gen_out.empty()) out << text;
    else {
      std::ofstream f(c.gen_out);
      if (!(f << text)) throw std::runtime_error("cannot write " + c.gen_out);
      err << "wrote " << c.gen_out << " (" << set.machines.size() << " machines, " << set.lans.size() << " LANs)\n";
    }
    return 0;
  }});
}

}  // namespace treefarm::cli
