#include "tools/OriginLauncher.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "runtime/exec/Topology.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/process/ScratchDir.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/model/Origins.hpp"

namespace treefarm::tools {

namespace fs = std::filesystem;

metrics::RunResults merge_origin_results(const model::Experiment& ex, const std::vector<metrics::RunResults>& parts) {
  metrics::RunResults all = metrics::empty_results(ex);
  std::map<std::string, std::uint32_t> app_of;
  for (std::uint32_t k = 0; k < all.apps.size(); ++k) app_of[all.apps[k].name] = k;
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
    const auto p = ex.parent_index(i);
    all.nodes.push_back(metrics::NodeResult{ex.nodes[i].name, p ? ex.nodes[*p].name : "", ex.nodes[i].cores, 0});
  }
  for (const auto& part : parts) {
    if (all.started_utc.empty() || (!part.started_utc.empty() && part.started_utc < all.started_utc)) {
      all.started_utc = part.started_utc;
      all.treefarm_version = part.treefarm_version;
      all.host = part.host;
      all.settings = part.settings;
    }
    all.duplicates += part.duplicates;
    for (const auto& [node, n] : part.policy_fallbacks) all.policy_fallbacks[node] += n;
    const auto global = [&](std::uint32_t k) {
      const auto it = app_of.find(part.apps.at(k).name);
      if (it == app_of.end()) throw std::runtime_error("an origin's results name application '" + part.apps.at(k).name + "', which " + ex.path + " has not");
      return it->second;
    };
    for (std::uint32_t k = 0; k < part.apps.size(); ++k) {
      all.apps[global(k)].wrong += part.apps[k].wrong;
      all.apps[global(k)].failed += part.apps[k].failed;
    }
    part.for_each_task([&](const metrics::TaskView& t) {
      metrics::TaskRecord r;
      r.app = global(t.app);
      r.id = t.id;
      r.node = std::string(t.node);
      r.completed_at = t.completed_at;
      r.compute_seconds = t.compute_seconds;
      r.dispatched_at = t.dispatched_at;
      r.queued_seconds = t.queued_seconds;
      all.tasks.push_back(std::move(r));
    });
    for (auto f : part.failures) {
      f.app = global(f.app);
      all.failures.push_back(std::move(f));
    }
  }
  all.compute();
  return all;
}

int launch_origins(const model::Experiment& ex, const LaunchOptions& options, const std::atomic<bool>& interrupted) {
  if (options.wrap || options.listen || options.parent_endpoint)
    throw std::invalid_argument("applications from several masters (origin in [[app]]) run on loopback only (treefarm run)");
  fs::path out = options.out_dir;
  if (out.empty()) {  // kept: the results are there (their path printed at the end)
    process::ScratchDir made("run");
    made.keep();
    out = made.path();
  }
  fs::create_directories(out);
  for (const auto& node : ex.nodes)
    if (!node.listen.empty())
      throw model::FileError(ex.path, node.line, "node." + node.name + ".listen",
                             "with applications from several masters every node runs one process per origin: "
                             "a fixed `listen` endpoint cannot be bound by all of them; remove it");
  // Each node keeps its cores in every origin's tree.
  const auto physical_cpus = assign_cpus(ex, exec::discover_topology().cores);
  const auto origins = model::app_origins(ex);
  std::vector<int> codes(origins.size(), 0);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(origins.size());
  for (std::size_t o = 0; o < origins.size(); ++o) {
    threads.emplace_back([&, o] {
      try {
        const model::Experiment sub = model::rerooted(ex, origins[o]);
        LaunchOptions lo = options;
        lo.out_dir = (out / ("origin-" + origins[o])).string();
        lo.master_args.insert(lo.master_args.end(), {"--origin", origins[o], "--no-table"});
        lo.cpus = [&ex, sub, &physical_cpus, user = options.cpus](std::size_t i) {
          const std::size_t u = *ex.node_index(sub.nodes.at(i).name);
          return user ? user(u) : physical_cpus.at(u);
        };
        codes[o] = launch_tree(sub, lo, interrupted);
      } catch (const std::exception& e) {
        errors[o] = e.what();
        codes[o] = 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  int code = 0;
  std::vector<metrics::RunResults> parts;
  for (std::size_t o = 0; o < origins.size(); ++o) {
    if (!errors[o].empty()) std::fprintf(stderr, "treefarm run: origin '%s': %s\n", origins[o].c_str(), errors[o].c_str());
    if (codes[o] != 0 && code == 0) code = codes[o];
    const fs::path file = out / ("origin-" + origins[o]) / "results.json";
    if (!fs::exists(file)) continue;
    std::ifstream in(file);
    parts.push_back(metrics::results_from_json(nlohmann::json::parse(in)));
  }
  if (parts.size() != origins.size()) {
    std::fprintf(stderr, "treefarm run: %zu of %zu origins wrote no results.json; no merged results\n",
                 origins.size() - parts.size(), origins.size());
    return code != 0 ? code : 1;
  }
  auto all = merge_origin_results(ex, parts);
  all.experiment_text = model::read_input_file(ex.path);
  // The LP of the whole platform, each application routed from its origin (bertin2008
  // §2.2), when the experiment gives what it needs (speeds); else no prediction.
  try {
    const auto solution = lp::solve(lp::model_from_experiment(ex));
    all.predicted_fair_throughput = solution.fair_throughput;
    for (std::size_t k = 0; k < all.apps.size(); ++k) all.apps[k].predicted = solution.app_throughput.at(k);
  } catch (const std::exception&) {
  }
  std::string text;
  metrics::write_results_json([&](std::string_view piece) { text += piece; }, all);
  metrics::write_file_atomically(out / "results.json", text);
  metrics::print_table(std::cout, all);
  std::cout << "results: " << (out / "results.json").string() << " (per origin: " << (out / "origin-*").string() << ")\n";
  return code == 0 && !all.ok() ? 4 : code;
}

}  // namespace treefarm::tools
