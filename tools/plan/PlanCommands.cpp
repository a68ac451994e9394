#include "runtime/node/ExitCode.hpp"
#include "tools/plan/PlanCommands.hpp"

#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "runtime/model/Units.hpp"
#include "runtime/plan/MachineGenerator.hpp"
#include "runtime/plan/Planner.hpp"
#include "tools/plan/PlanStudy.hpp"

namespace treefarm::tools {

struct PlanCommandState {
  CLI::App* plan = nullptr;
  CLI::App* gen = nullptr;
  CLI::App* study = nullptr;
  // plan
  std::string machines, apps, method = "rmshc", qos = "maximum", out;
  bool json = false;
  plan::PlanOptions options;
  // gen-machines
  plan::GenMachinesOptions gen_options;
  std::string cores, speed, lan_bandwidth, inter_bandwidth, gen_out;
  // experiment plan
  PlanStudyOptions study_options;
  bool quick = false;
};

namespace {

std::pair<std::string, std::string> split_pair(const std::string& text, const std::string& option) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) return {text, text};
  if (text.find(',', comma + 1) != std::string::npos)
    throw std::invalid_argument(option + ": expected MIN,MAX or one value, got '" + text + "'");
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
    throw std::invalid_argument(option + ": " + e.what());
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

std::string command_line(const PlanCommandState& s) {
  std::ostringstream c;
  c << "treefarm plan " << s.machines << " --apps " << s.apps << " --method " << s.method << " --qos " << s.qos;
  if (s.options.method == plan::Method::rmshc)
    c << " --seed " << s.options.rmshc.seed << " --starts " << s.options.rmshc.starts;
  return c.str();
}

}  // namespace

PlanCommands::PlanCommands(CLI::App& app, CLI::App& experiment) : state_(std::make_unique<PlanCommandState>()) {
  auto& s = *state_;
  s.plan = app.add_subcommand("plan", "Choose the tree (master and parents) for the machines of several LANs: "
                                      "QLSE, greedy, RMSHC or exhaustive; write the experiment file");
  s.plan->add_option("machines", s.machines, "MACHINES.toml (docs/machines-file.md)")->required()->check(CLI::ExistingFile);
  s.plan->add_option("--apps", s.apps, "APPS.toml: [[app]] tables and an optional [run], as in an experiment file")
      ->required()
      ->check(CLI::ExistingFile);
  s.plan->add_option("--method", s.method, "qlse | greedy | rmshc | exhaustive (<= 8 machines)")
      ->capture_default_str()
      ->check(CLI::IsMember({"qlse", "greedy", "rmshc", "exhaustive"}));
  s.plan->add_option("--qos", s.qos,
                     "maximum, a fair throughput R (tasks/s per unit of weight), or APP=RATE,... (tasks/s, every app)")
      ->capture_default_str();
  s.plan->add_option("--out", s.out, "Write the planned experiment file here");
  s.plan->add_flag("--json", s.json, "Print one JSON object (fair_throughput, seconds, qos, tree, ...)");
  s.plan->add_option("--seed", s.options.rmshc.seed, "rmshc: random seed")->capture_default_str();
  s.plan->add_option("--starts", s.options.rmshc.starts, "rmshc: start points (wang2006's x)")->capture_default_str();
  s.plan->add_option("--max-evaluations", s.options.rmshc.max_evaluations, "rmshc: budget in LP solves (0 = none)")
      ->capture_default_str();
  s.plan->add_option("--max-seconds", s.options.rmshc.max_seconds, "rmshc: budget in seconds (0 = none)")
      ->capture_default_str();
  s.plan->add_option("--neighbours", s.options.rmshc.max_neighbours,
                     "rmshc: neighbours evaluated per step (the whole neighbourhood if smaller)")
      ->capture_default_str();
  s.plan->add_option("--fan-out", s.options.qlse.fan_out, "qlse/greedy: children per task of the task tree")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  s.gen = app.add_subcommand("gen-machines", "Print a random multi-LAN MACHINES.toml (for planning studies)");
  s.gen->add_option("--machines", s.gen_options.machines, "Machines")->required()->check(CLI::PositiveNumber);
  s.gen->add_option("--lans", s.gen_options.lans, "LANs (each gets at least one machine)")->required()->check(CLI::PositiveNumber);
  s.gen->add_option("--seed", s.gen_options.seed, "Random seed")->required();
  s.gen->add_option("--cores", s.cores, "Cores per machine: MIN,MAX (uniform integers; default 1,8)");
  s.gen->add_option("--speed", s.speed, "flop/s per core: MIN,MAX, e.g. 1Gf,4Gf (uniform; default 1Gf,4Gf)");
  s.gen->add_option("--lan-bandwidth", s.lan_bandwidth,
                    "Inside a LAN: MIN,MAX, e.g. 100Mbps,1Gbps (log-uniform per LAN; the default)");
  s.gen->add_option("--inter-bandwidth", s.inter_bandwidth,
                    "Between two LANs: MIN,MAX, e.g. 1Mbps,100Mbps (log-uniform per pair; the default)");
  s.gen->add_option("--out", s.gen_out, "Write the file here instead of printing it");

  s.study = experiment.add_subcommand("plan", "Planning study on generated multi-LAN sets: each method against "
                                              "exhaustive and the best found, planning time, QoS failures");
  s.study->add_option("--out", s.study_options.out_dir, "Output directory (plan-study.md, plan-study.json)")
      ->capture_default_str();
  s.study->add_option("--small-sets", s.study_options.small_sets, "Sets per small size (exhaustive part)")
      ->capture_default_str();
  s.study->add_option("--small-sizes", s.study_options.small_sizes, "Machines of the small sets (<= 8)")
      ->delimiter(',');
  s.study->add_option("--large-sizes", s.study_options.large_sizes, "Machines of the large sets")->delimiter(',');
  s.study->add_option("--large-sets", s.study_options.large_sets, "Sets per large size")->capture_default_str();
  s.study->add_option("--qos-sets", s.study_options.qos_sets, "Sets of the QoS-failure part")->capture_default_str();
  s.study->add_option("--rmshc-seconds", s.study_options.rmshc_seconds, "RMSHC budget per plan, seconds")
      ->capture_default_str();
  s.study->add_option("--seed", s.study_options.seed, "First seed of the generated sets")->capture_default_str();
  s.study->add_flag("--quick", s.quick, "A small subset, for a smoke run");
}

PlanCommands::~PlanCommands() = default;

std::optional<int> PlanCommands::run(std::ostream& out, std::ostream& err) {
  auto& s = *state_;
  if ((s.plan && *s.plan) || (s.study && *s.study)) {
    // main() turns SIGINT/SIGTERM into a flag for the launchers; a search or a study has
    // nothing to clean up, so Ctrl-C ends it at once.
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  if (s.gen && *s.gen) {
    auto& g = s.gen_options;
    if (!s.cores.empty()) {
      double lo = 0, hi = 0;
      range(s.cores, "--cores", plain, lo, hi);
      if (lo < 1 || hi < lo || lo != static_cast<double>(static_cast<std::uint32_t>(lo)) ||
          hi != static_cast<double>(static_cast<std::uint32_t>(hi)))
        throw std::invalid_argument("--cores: expected whole numbers 1 <= MIN <= MAX");
      g.cores_min = static_cast<std::uint32_t>(lo);
      g.cores_max = static_cast<std::uint32_t>(hi);
    }
    range(s.speed, "--speed", model::parse_speed, g.speed_min, g.speed_max);
    range(s.lan_bandwidth, "--lan-bandwidth", model::parse_bandwidth, g.lan_bandwidth_min, g.lan_bandwidth_max);
    range(s.inter_bandwidth, "--inter-bandwidth", model::parse_bandwidth, g.inter_bandwidth_min, g.inter_bandwidth_max);
    const auto set = plan::generate_machines(g);
    const auto text = plan::to_toml(set, "Generated by: " + plan::gen_machines_command(g) +
                                             "\nFormat: docs/machines-file.md. Units: bytes/s, seconds, flop/s per core.");
    if (s.gen_out.empty()) out << text;
    else {
      std::ofstream f(s.gen_out);
      if (!(f << text)) throw std::runtime_error("cannot write " + s.gen_out);
      err << "wrote " << s.gen_out << " (" << set.machines.size() << " machines, " << set.lans.size() << " LANs)\n";
    }
    return 0;
  }
  if (s.plan && *s.plan) {
    const auto machines = plan::load_machines(s.machines);
    const auto apps = plan::load_apps(s.apps);
    s.options.method = *plan::method_from_string(s.method);
    s.options.qos = plan::parse_qos(s.qos, apps.apps);
    const auto result = plan::plan(machines, apps.apps, apps.run, s.options);
    if (s.json) out << plan::to_json(result, machines).dump(1) << "\n";
    else print_plan(out, result, machines);
    if (!s.out.empty() && result.found) {
      std::ofstream f(s.out);
      if (!(f << plan::experiment_toml(result, machines, apps.apps, apps.run, "Planned by: " + command_line(s))))
        throw std::runtime_error("cannot write " + s.out);
      if (!s.json) out << "wrote " << s.out << "\n";
    }
    if (!result.found || !result.qos_satisfied) {
      err << "treefarm plan: the QoS is not met" << (result.found ? "" : " (no tree written)") << "\n";
      return node::exit_wrong_results;
    }
    return 0;
  }
  if (s.study && *s.study) {
    auto o = s.study_options;
    if (s.quick) {
      o.small_sizes = {4, 5};
      o.small_sets = 3;
      o.large_sizes = {16, 64};
      o.large_sets = 1;
      o.qos_sets = 2;
      o.rmshc_seconds = 2;
    }
    std::ostringstream c;
    c << "treefarm experiment plan --out " << o.out_dir << " --seed " << o.seed << " --rmshc-seconds " << o.rmshc_seconds;
    if (s.quick) c << " --quick";
    else {
      c << " --small-sets " << o.small_sets << " --large-sets " << o.large_sets << " --qos-sets " << o.qos_sets
        << " --small-sizes ";
      for (std::size_t i = 0; i < o.small_sizes.size(); ++i) c << (i ? "," : "") << o.small_sizes[i];
      c << " --large-sizes ";
      for (std::size_t i = 0; i < o.large_sizes.size(); ++i) c << (i ? "," : "") << o.large_sizes[i];
    }
    o.command = c.str();
    return plan_study(o, out);
  }
  return std::nullopt;
}

}  // namespace treefarm::tools
