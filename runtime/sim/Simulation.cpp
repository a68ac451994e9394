#include "runtime/sim/Simulation.hpp"

#include "runtime/process/Interrupt.hpp"
#include "runtime/process/Spawn.hpp"
#include "runtime/sim/ChildProcess.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>

#include "runtime/lp/SteadyState.hpp"
#include "runtime/sim/NodeActor.hpp"
#include "runtime/sim/PlatformBuilder.hpp"
#include "runtime/sim/SimWorld.hpp"

namespace treefarm::sim {

namespace sg4 = simgrid::s4u;

namespace {

long max_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

// The LP's rates as each node of `tree` follows them: per node, the tree's applications
// computed there and sent to each of its children in the tree. A child there may be the
// node's physical parent (the application's origin is below): its rate is then the flow
// up the node's own link (lp::Solution::sent, bertin2008 §2.2).
std::vector<core::NodePlan> plans_from(const SimPlatform& p, const OriginTree& tree, const lp::Solution& s) {
  const auto pick = [&](const std::vector<double>& all) {
    std::vector<double> mine;
    for (std::size_t k : tree.apps) mine.push_back(all.at(k));
    return mine;
  };
  std::vector<core::NodePlan> plans(p.nodes.size());
  for (std::size_t u = 0; u < p.nodes.size(); ++u) {
    plans[u].local = pick(s.alpha.at(u));
    for (std::size_t v : tree.view.nodes[u].children) {
      const bool down = p.nodes[v].parent == static_cast<int>(u);
      plans[u].children[p.nodes[v].name] = pick(s.sent.at(down ? v : u));
    }
  }
  return plans;
}

metrics::RunResults empty_results(const SimPlatform& p) {
  metrics::RunResults r = metrics::empty_results(p.experiment);
  for (const auto& n : p.nodes)
    r.nodes.push_back(metrics::NodeResult{n.name, n.parent < 0 ? "" : p.nodes[static_cast<std::size_t>(n.parent)].name,
                                          n.cores, 0});
  return r;
}

void fill_prediction(const lp::Solution& s, metrics::RunResults& results) {
  if (results.prediction_source.rfind("estimates", 0) == 0) return;  // the run's own plan (plan_from_estimates)
  results.prediction_source = "platform";
  results.predicted_fair_throughput = s.fair_throughput;
  for (std::size_t k = 0; k < results.apps.size() && k < s.app_throughput.size(); ++k)
    results.apps[k].predicted = s.app_throughput[k];
}

// Calibrate as you go in a simulation: the model of the platform with each figure the
// nodes estimated in its place (a link the model leaves unbounded has nothing to estimate).
std::shared_ptr<lp::EstimatePlan> estimate_plan(const SimPlatform& p) {
  std::set<std::string> free_links;
  for (const auto& n : p.model.nodes)
    if (std::isinf(n.link_bandwidth)) free_links.insert(n.name);
  auto build = [&p](const lp::MeasuredSeconds& seconds, const lp::MeasuredBandwidth& bandwidth) {
    lp::PlatformModel m = p.model;
    for (auto& node : m.nodes) {
      if (const auto b = bandwidth.find(node.name); b != bandwidth.end() && std::isfinite(node.link_bandwidth))
        node.link_bandwidth = b->second;
      const auto it = seconds.find(node.name);
      if (it == seconds.end()) continue;
      for (std::size_t k = 0; k < m.apps.size() && k < node.task_seconds.size(); ++k)
        if (const auto s = it->second.find(m.apps[k].name); s != it->second.end()) node.task_seconds[k] = s->second;
    }
    return m;
  };
  const auto it = p.experiment.run.policy_options.find("lp");
  return std::make_shared<lp::EstimatePlan>(
      p.experiment, std::move(free_links), build,
      lp::EstimatePlanOptions::from_policy_options(it == p.experiment.run.policy_options.end()
                                                       ? std::map<std::string, double>{}
                                                       : it->second));
}

// Runs SimGrid in this process. `solution` (may be null) gives the "lp" policy its plan.
SimulationOutcome run_engine(const SimPlatform& p, const SimulationOptions& o, const lp::Solution* solution) {
  static bool used = false;
  if (used) throw std::logic_error("SimGrid's engine already ran in this process: use simulate() (forks)");
  used = true;
  if (p.nodes.empty()) throw std::invalid_argument("simulation: the platform has no node");
  const auto t0 = std::chrono::steady_clock::now();

  std::string arg0 = "treefarm-simulate", arg1 = "--log=root.thres:critical";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  int argc = 2;
  sg4::Engine engine(&argc, argv);
  engine.set_config("network/model:" + o.network_model);
  // Link values as given: no TCP window bound (rate <= gamma / (2 latency)) and no
  // cross-traffic of acknowledgements (docs/simulation.md).
  engine.set_config("network/TCP-gamma:1e300");
  engine.set_config("network/crosstraffic:0");
  engine.set_config("contexts/stack-size:" + std::to_string(o.stack_kib));

  // One tree of node drivers per origin (a single one when every application comes from
  // the root): applications from several masters, bertin2008 §2.2 (docs/simulation.md).
  // The trees share the hosts, so their executions share each host's cores and their
  // transfers each link's bandwidth in that direction; each tree's root records its
  // applications' results.
  const auto trees = origin_trees(p);
  const auto hosts = build_platform(p);
  std::vector<std::unique_ptr<SimWorld>> worlds;
  std::vector<sg4::ActorPtr> roots;
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const SimPlatform& view = trees[t].view;
    const std::string suffix = trees.size() == 1 ? "" : "@" + p.nodes[trees[t].origin].name;
    auto& world = *worlds.emplace_back(std::make_unique<SimWorld>());
    world.platform = &view;
    world.options = &o;
    const bool as_you_go = o.plan_from_estimates && trees.size() == 1 && p.experiment.run.policy == "lp";
    if (solution && !as_you_go) world.plans = plans_from(p, trees[t], *solution);
    if (solution && !as_you_go && trees.size() == 1 && lp::replans(p.experiment))
      world.live = std::make_shared<lp::LiveModel>(p.model, *solution);
    if (as_you_go) world.warmup = estimate_plan(p);
    world.hosts = hosts.hosts;
    world.exec_hosts = hosts.exec_hosts;
    world.down_links = hosts.down_links;
    for (const auto& n : view.nodes) {
      world.down.push_back(sg4::Mailbox::by_name("down-" + n.name + suffix));
      world.control.push_back(sg4::Mailbox::by_name("control-" + n.name + suffix));
      world.up.push_back(sg4::Mailbox::by_name("up-" + n.name + suffix));
    }
    world.abort = [&roots] {
      for (auto& r : roots)
        if (r && r != sg4::Actor::self()) r->kill();
    };
    std::vector<sg4::ActorPtr> actors;
    for (std::size_t u = 0; u < view.nodes.size(); ++u) {
      actors.push_back(sg4::Actor::create(view.nodes[u].name + suffix, world.hosts[u], [&world, u] { NodeActor(world, u)(); }));
      if (view.nodes[u].parent < 0) {
        world.root_actor = actors.back();
        roots.push_back(actors.back());
      }
    }
    // Every mailbox has its reader as permanent receiver: a message flows as soon as it is
    // put, as over a ZeroMQ socket, instead of waiting for the reader's next get. With one
    // get posted at a time, messages to one reader crossed the link one after the other,
    // each paying the whole latency: on a 1 s star the requests and results going up
    // capped the run at one task per second (docs/lp.md "Latency").
    for (std::size_t u = 0; u < view.nodes.size(); ++u) {
      world.down[u]->set_receiver(actors[u]);
      world.control[u]->set_receiver(actors[u]);
      if (view.nodes[u].parent >= 0) world.up[u]->set_receiver(actors[static_cast<std::size_t>(view.nodes[u].parent)]);
    }
  }
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  engine.run();

  SimulationOutcome out;
  out.simulated_seconds = sg4::Engine::get_clock();
  out.completed = true;
  metrics::RunResults results = empty_results(p);
  double start = worlds.front()->start;
  for (const auto& w : worlds) start = std::min(start, w->start);
  for (std::size_t t = 0; t < worlds.size(); ++t) {
    SimWorld& w = *worlds[t];
    out.completed = out.completed && w.completed;
    if (out.error.empty()) out.error = w.error;
    out.events += w.events;
    results.duplicates += w.results.duplicates;
    for (const auto& [node, n] : w.results.policy_fallbacks) results.policy_fallbacks[node] += n;
    for (const auto& r : w.results.replans) results.replans.push_back(r);  // one world: re-plans need one tree
    if (w.first_plan) {
      fill_prediction(w.first_plan->solution, results);
      char source[64];
      std::snprintf(source, sizeof source, "estimates at %.1f s", w.first_plan->at);
      results.prediction_source = source;
      results.plan = lp::to_json(w.first_plan->model, w.first_plan->solution);
    }
    for (auto& rec : w.results.tasks) {  // the tree's application index and clock to the run's
      rec.app = static_cast<decltype(rec.app)>(trees[t].apps.at(rec.app));
      rec.completed_at += w.start - start;
      results.tasks.push_back(std::move(rec));
    }
    w.root_actor = nullptr;
  }
  if (!out.completed && out.error.empty()) {
    out.error = "deadlock: no activity left at t=" + std::to_string(out.simulated_seconds) + " s with " +
                std::to_string(results.tasks.size()) + " of " + std::to_string(p.experiment.total_tasks()) +
                " tasks recorded";
  }
  if (worlds.size() == 1) out.policy_planned_fair_throughput = worlds.front()->policy_planned_fair_throughput;
  results.compute();
  out.results = std::move(results);
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.setup_seconds = setup;
  out.max_rss_kib = max_rss_kib();
  roots.clear();
  return out;
}

nlohmann::json outcome_to_json(const SimulationOutcome& o) {
  nlohmann::json j = {{"results", metrics::to_json(o.results)}, {"completed", o.completed}, {"error", o.error},
                      {"simulated_seconds", o.simulated_seconds}, {"wall_seconds", o.wall_seconds},
                      {"setup_seconds", o.setup_seconds},
                      {"max_rss_kib", o.max_rss_kib}, {"events", o.events}};
  if (o.policy_planned_fair_throughput) j["policy_planned_fair_throughput"] = *o.policy_planned_fair_throughput;
  return j;
}

SimulationOutcome outcome_from_json(const nlohmann::json& j) {
  SimulationOutcome o;
  o.results = metrics::results_from_json(j.at("results"));
  o.completed = j.at("completed").get<bool>();
  o.error = j.at("error").get<std::string>();
  o.simulated_seconds = j.at("simulated_seconds").get<double>();
  o.wall_seconds = j.at("wall_seconds").get<double>();
  o.setup_seconds = j.at("setup_seconds").get<double>();
  o.max_rss_kib = j.at("max_rss_kib").get<long>();
  o.events = j.at("events").get<std::uint64_t>();
  if (auto it = j.find("policy_planned_fair_throughput"); it != j.end()) o.policy_planned_fair_throughput = it->get<double>();
  return o;
}


// Applications from several masters run one tree of drivers per origin, each tree with
// its own port: the one-port model (one transfer at a time per node, whatever tree it
// belongs to) is not kept there, so it is refused, naming the application's `origin`.
void check_origins(const SimPlatform& p) {
  if (p.experiment.run.comm_model == model::CommModel::one_port)
    model::require_root_origins(p.experiment, "the SimGrid simulation with comm_model = \"one-port\"");
}

// Refuses, before any work, a platform with more actors than this machine's memory
// mappings allow (map_count_problem).
void check_map_count(const SimPlatform& p) {
  std::set<std::string> origins;
  for (const auto& app : p.experiment.apps) origins.insert(app.origin);
  long limit = 0;
  std::ifstream("/proc/sys/vm/max_map_count") >> limit;
  if (auto why = map_count_problem(p.nodes.size() * origins.size(), limit); !why.empty()) throw std::runtime_error(why);
}

}  // namespace

std::string map_count_problem(std::size_t actors, long limit) {
  const auto needed = 2 * actors + 1000;  // a stack and its guard page each, the process's own
  if (limit <= 0 || needed <= static_cast<std::size_t>(limit)) return "";
  return "simulating " + std::to_string(actors) + " actors (one per node and origin) needs about " + std::to_string(needed) +
         " memory mappings (SimGrid gives each actor's stack a mapping and a guard page), more than this machine's "
         "vm.max_map_count of " + std::to_string(limit) + ": raise it (sysctl -w vm.max_map_count=" +
         std::to_string(needed * 2) + ") or simulate fewer nodes";
}

double add_prediction(const SimPlatform& platform, metrics::RunResults& results) {
  const auto solution = lp::solve(platform.model);
  fill_prediction(solution, results);
  return solution.build_seconds + solution.solve_seconds;
}

SimulationOutcome simulate_in_this_process(const SimPlatform& platform, const SimulationOptions& options) {
  check_origins(platform);
  check_map_count(platform);
  const auto solution = lp::solve(platform.model);
  auto out = run_engine(platform, options, &solution);
  fill_prediction(solution, out.results);
  out.lp_seconds = solution.build_seconds + solution.solve_seconds;
  return out;
}

SimulationOutcome simulate(const SimPlatform& platform, const SimulationOptions& options) {
  check_origins(platform);
  check_map_count(platform);
  // The LP in the parent: its plan is inherited by the child (policy "lp") and its
  // optimum goes beside the measurements.
  const auto solution = lp::solve(platform.model);

  const ReportingChild child = fork_reporting_child(
      [&] { return outcome_to_json(run_engine(platform, options, &solution)).dump(); }, "simulation");
  // A stop request (Ctrl-C) ends the child at once: a simulation can take minutes.
  const std::string text = process::read_child_report(child.fd, child.pid, "interrupted while simulating; no results written");
  const int status = process::wait(child.pid);
  if (WIFSIGNALED(status))
    throw std::runtime_error("simulation process killed by signal " + std::to_string(WTERMSIG(status)) +
                             " (" + strsignal(WTERMSIG(status)) + "); SimGrid's message, if any, is above");
  if (text.empty()) throw std::runtime_error("simulation process exited without a result (status " + std::to_string(WEXITSTATUS(status)) + ")");
  const auto j = nlohmann::json::parse(text);
  if (j.contains("exception")) throw std::runtime_error("simulation: " + j["exception"].get<std::string>());
  auto out = outcome_from_json(j);
  fill_prediction(solution, out.results);
  out.lp_seconds = solution.build_seconds + solution.solve_seconds;
  return out;
}

}  // namespace treefarm::sim
