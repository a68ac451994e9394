#include "lab/planning/PlanStudy.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/plan/MachineGenerator.hpp"
#include "runtime/plan/Planner.hpp"

namespace treefarm::lab::planning {

namespace {

using plan::Method;

/// The study's applications: a low-CCR matmul and a high-CCR matadd, weight 1 each.
std::vector<model::AppSpec> study_apps() {
  model::AppSpec mm;
  mm.name = "mm";
  mm.kernel = model::Kernel::matmul;
  mm.n = 2048;  // 64 MiB in, 17.2 Gflop
  mm.tasks = 1000;
  model::AppSpec add = mm;
  add.name = "add";
  add.kernel = model::Kernel::matadd;
  add.n = 512;  // 4 MiB in, 0.26 Mflop
  return {mm, add};
}

struct Stats {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  double mean() const {
    double s = 0;
    for (double v : values) s += v;
    return values.empty() ? 0 : s / static_cast<double>(values.size());
  }
  double min() const { return values.empty() ? 0 : *std::min_element(values.begin(), values.end()); }
  double max() const { return values.empty() ? 0 : *std::max_element(values.begin(), values.end()); }
};

std::string fmt(double v, int precision = 3) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(precision) << v;
  return o.str();
}

plan::PlanOptions options_for(Method m, const PlanStudyOptions& o, std::uint64_t seed) {
  plan::PlanOptions p;
  p.method = m;
  p.rmshc.seed = seed;
  p.rmshc.max_seconds = o.rmshc_seconds;
  return p;
}

double gateway_throughput(const plan::MachineSet& set, const std::vector<model::AppSpec>& apps) {
  plan::TreeEvaluator ev(set, apps, {});
  return ev.fair_throughput(plan::lan_gateway_tree(set));
}

double star_throughput(const plan::MachineSet& set, const std::vector<model::AppSpec>& apps) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < set.machines.size(); ++i)
    if (set.machines[i].power() > set.machines[best].power()) best = i;
  plan::TreeEvaluator ev(set, apps, {});
  return ev.fair_throughput(plan::PlanTree::star(set.machines.size(), best));
}

/// Writes `text` to `path` through a temporary file and a rename, so that a reader (or a
/// run stopped part-way) sees either the previous whole file or the new one.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

int plan_study(const PlanStudyOptions& o, std::ostream& out) {
  std::filesystem::create_directories(o.out_dir);
  const auto apps = study_apps();
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json qos_json = nlohmann::json::array();
  std::ostringstream md;
  // Both files are rewritten after every set (`in_progress`: the part under way, appended
  // to the finished sections), so a stopped study keeps every set it finished.
  const auto save = [&](const std::string& in_progress, bool complete) {
    write_atomically(o.out_dir + "/plan-study.md", md.str() + in_progress);
    write_atomically(o.out_dir + "/plan-study.json",
                     nlohmann::json{{"command", o.command}, {"complete", complete}, {"rows", rows},
                                    {"qos_failures", qos_json}}.dump(1) + "\n");
  };
  md << "# Planning study\n\nCommand: `" << o.command << "`\n\n"
     << "Applications: mm (matmul n=2048: 64 MiB in, 17.2 Gflop) and add (matadd n=512: 4 MiB in, 0.26 Mflop), "
        "weight 1 each. Sets from `treefarm gen-machines` defaults (1-8 cores, 1-4 Gflop/s per core, LANs "
        "100 Mbit/s-1 Gbit/s, inter-LAN links 1-100 Mbit/s). Objective: LP max-min fair throughput, one-port.\n\n";

  // Part A: against the exhaustive optimum.
  md << "## Small sets: against the exhaustive optimum\n\n"
     << "| machines | LANs | sets | RMSHC = optimum | RMSHC / opt (mean, min) | QLSE / opt (mean, min) | "
        "greedy / opt (mean, min) | LAN-gateway tree / opt | star / opt | exhaustive s | RMSHC s | QLSE s |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::size_t hits_all = 0, cases_all = 0;
  Stats qlse_all;
  for (std::uint32_t n : o.small_sizes) {
    const std::uint32_t lans = n >= 6 ? 3 : 2;
    std::map<std::string, Stats> ratio, secs;
    std::size_t hits = 0;
    const auto small_row = [&] {
      const auto sets = ratio["rmshc"].values.size();
      auto pair = [&](const std::string& k) { return fmt(ratio[k].mean()) + ", " + fmt(ratio[k].min()); };
      std::ostringstream r;
      r << "| " << n << " | " << lans << " | " << sets << " | " << hits << "/" << sets << " ("
        << fmt(100.0 * static_cast<double>(hits) / static_cast<double>(std::max<std::size_t>(sets, 1)), 0) << "%) | "
        << pair("rmshc") << " | " << pair("qlse") << " | " << pair("greedy") << " | " << pair("gateway") << " | "
        << pair("star") << " | " << fmt(secs["exhaustive"].mean(), 2) << " | " << fmt(secs["rmshc"].mean(), 3) << " | "
        << fmt(secs["qlse"].mean(), 4) << " |\n";
      return r.str();
    };
    for (std::uint32_t i = 0; i < o.small_sets; ++i) {
      plan::GenMachinesOptions g;
      g.machines = n;
      g.lans = lans;
      g.seed = o.seed + 1000 * n + i;
      const auto set = plan::generate_machines(g);
      const auto opt = plan::plan(set, apps, {}, options_for(Method::exhaustive, o, g.seed));
      secs["exhaustive"].add(opt.seconds);
      nlohmann::json row{{"part", "small"}, {"machines", n}, {"lans", lans}, {"seed", g.seed},
                         {"exhaustive", opt.fair_throughput}, {"exhaustive_seconds", opt.seconds},
                         {"exhaustive_lp_solves", opt.evaluations},
                         {"exhaustive_pruned", opt.search ? opt.search->trees_pruned : 0}};
      for (Method m : {Method::rmshc, Method::qlse, Method::greedy}) {
        const auto r = plan::plan(set, apps, {}, options_for(m, o, g.seed));
        const double q = r.fair_throughput / opt.fair_throughput;
        ratio[std::string(plan::to_string(m))].add(q);
        secs[std::string(plan::to_string(m))].add(r.seconds);
        row[std::string(plan::to_string(m))] = {{"fair_throughput", r.fair_throughput}, {"ratio", q}, {"seconds", r.seconds},
                                                {"evaluations", r.evaluations}};
        if (m == Method::rmshc && q >= 1 - 1e-6) ++hits;
        if (m == Method::qlse) qlse_all.add(q);
      }
      ratio["gateway"].add(gateway_throughput(set, apps) / opt.fair_throughput);
      ratio["star"].add(star_throughput(set, apps) / opt.fair_throughput);
      row["gateway_ratio"] = ratio["gateway"].values.back();
      row["star_ratio"] = ratio["star"].values.back();
      rows.push_back(row);
      out << "small n=" << n << " set " << i << ": rmshc/opt " << fmt(ratio["rmshc"].values.back(), 4) << ", qlse/opt "
          << fmt(ratio["qlse"].values.back(), 4) << ", exhaustive " << fmt(opt.seconds, 1) << " s ("
          << opt.evaluations << " LP solves, " << (opt.search ? opt.search->trees_pruned : 0) << " trees pruned)\n";
      save(small_row() + "\n(stopped or under way: " + std::to_string(i + 1) + " of " + std::to_string(o.small_sets) +
               " sets of " + std::to_string(n) + " machines done)\n",
           false);
      out << std::flush;
    }
    hits_all += hits;
    cases_all += o.small_sets;
    md << small_row();
  }
  md << "\nOver all small sets: RMSHC found the exhaustive optimum in " << hits_all << " of " << cases_all << " ("
     << fmt(100.0 * static_cast<double>(hits_all) / static_cast<double>(std::max<std::size_t>(cases_all, 1)), 1)
     << "%); QLSE's tree reached " << fmt(qlse_all.mean()) << " of the optimum on average (min " << fmt(qlse_all.min())
     << ", max " << fmt(qlse_all.max()) << ").\n\n";

  // Part B: large sets, against the best found.
  md << "## Large sets: against the best tree found, planning time\n\n"
     << "| machines | LANs | sets | RMSHC / best | QLSE / best | greedy / best | LAN-gateway / best | RMSHC s | "
        "RMSHC LP solves | QLSE s | greedy s |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::uint32_t n : o.large_sizes) {
    const std::uint32_t lans = std::max<std::uint32_t>(2, n / 16);
    std::map<std::string, Stats> ratio, secs, evals;
    const auto large_row = [&] {
      std::ostringstream r;
      r << "| " << n << " | " << lans << " | " << ratio["rmshc"].values.size() << " | " << fmt(ratio["rmshc"].mean())
        << " | " << fmt(ratio["qlse"].mean()) << " | " << fmt(ratio["greedy"].mean()) << " | "
        << fmt(ratio["gateway"].mean()) << " | " << fmt(secs["rmshc"].mean(), 2) << " | " << fmt(evals["rmshc"].mean(), 0)
        << " | " << fmt(secs["qlse"].mean(), 3) << " | " << fmt(secs["greedy"].mean(), 3) << " |\n";
      return r.str();
    };
    for (std::uint32_t i = 0; i < o.large_sets; ++i) {
      plan::GenMachinesOptions g;
      g.machines = n;
      g.lans = lans;
      g.seed = o.seed + 100000 + 1000 * n + i;
      const auto set = plan::generate_machines(g);
      std::map<std::string, plan::PlanResult> res;
      for (Method m : {Method::rmshc, Method::qlse, Method::greedy})
        res[std::string(plan::to_string(m))] = plan::plan(set, apps, {}, options_for(m, o, g.seed));
      const double gw = gateway_throughput(set, apps);
      double best = gw;
      for (const auto& [k, r] : res) best = std::max(best, r.fair_throughput);
      nlohmann::json row{{"part", "large"}, {"machines", n}, {"lans", lans}, {"seed", g.seed}, {"best", best},
                         {"gateway", gw}};
      for (const auto& [k, r] : res) {
        ratio[k].add(r.fair_throughput / best);
        secs[k].add(r.seconds);
        evals[k].add(static_cast<double>(r.evaluations));
        row[k] = {{"fair_throughput", r.fair_throughput}, {"seconds", r.seconds}, {"evaluations", r.evaluations},
                  {"machines_used", r.tree.size()}};
      }
      ratio["gateway"].add(gw / best);
      rows.push_back(row);
      out << "large n=" << n << " set " << i << ": rmshc " << fmt(res["rmshc"].seconds, 1) << " s, qlse "
          << fmt(res["qlse"].seconds, 3) << " s\n";
      save(large_row() + "\n(stopped or under way: " + std::to_string(i + 1) + " of " + std::to_string(o.large_sets) +
               " sets of " + std::to_string(n) + " machines done)\n",
           false);
      out << std::flush;
    }
    md << large_row();
  }

  // Part C: QoS failures against the load (baraglia slide 13).
  const std::vector<double> loads{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
  std::map<std::string, std::vector<int>> failures;
  for (const char* k : {"qlse", "greedy", "rmshc", "gateway"}) failures[k].assign(loads.size(), 0);
  // The table over the first `done` sets (fills qos_json alike).
  const auto qos_table = [&](std::uint32_t done) {
    std::ostringstream t;
    t << "\n## QoS failures against the load\n\n" << done << " sets of " << o.qos_machines
      << " machines in 4 LANs. Load = requested fair throughput / the best fair throughput any method reaches on "
         "the set with QoS maximum (so RMSHC, usually that best, rarely falls below). Failure: no mapping, or the LP "
         "of the planned tree does not sustain the requested rates.\n\n| load | QLSE failures | greedy failures | "
         "RMSHC (max) below the request | LAN-gateway tree below |\n|---|---|---|---|---|\n";
    qos_json = nlohmann::json::array();
    for (std::size_t l = 0; l < loads.size(); ++l) {
      auto pct = [&](const char* k) { return 100.0 * failures[k][l] / std::max<std::uint32_t>(done, 1); };
      t << "| " << loads[l] << " | " << fmt(pct("qlse"), 0) << "% | " << fmt(pct("greedy"), 0) << "% | "
        << fmt(pct("rmshc"), 0) << "% | " << fmt(pct("gateway"), 0) << "% |\n";
      qos_json.push_back({{"load", loads[l]}, {"qlse", pct("qlse")}, {"greedy", pct("greedy")}, {"rmshc", pct("rmshc")},
                          {"gateway", pct("gateway")}, {"sets", done}});
    }
    if (done < o.qos_sets)
      t << "\n(stopped or under way: " << done << " of " << o.qos_sets << " QoS sets done)\n";
    return t.str();
  };
  for (std::uint32_t i = 0; i < o.qos_sets; ++i) {
    plan::GenMachinesOptions g;
    g.machines = o.qos_machines;
    g.lans = 4;
    g.seed = o.seed + 500000 + i;
    const auto set = plan::generate_machines(g);
    // Reference: the best fair throughput any method reaches on this set (QoS "maximum").
    const double rmshc_max = plan::plan(set, apps, {}, options_for(Method::rmshc, o, g.seed)).fair_throughput;
    const double gw = gateway_throughput(set, apps);
    double bound = std::max(rmshc_max, gw);
    for (Method m : {Method::qlse, Method::greedy})
      bound = std::max(bound, plan::plan(set, apps, {}, options_for(m, o, g.seed)).fair_throughput);
    for (std::size_t l = 0; l < loads.size(); ++l) {
      plan::PlanOptions p;
      p.qos.maximum = false;
      for (const auto& a : apps) p.qos.rates.push_back(loads[l] * bound * a.weight);
      for (Method m : {Method::qlse, Method::greedy}) {
        p.method = m;
        const auto r = plan::plan(set, apps, {}, p);
        if (!r.found || !r.qos_satisfied) ++failures[std::string(plan::to_string(m))][l];
      }
      if (rmshc_max < loads[l] * bound * (1 - 1e-6)) ++failures["rmshc"][l];
      if (gw < loads[l] * bound * (1 - 1e-6)) ++failures["gateway"][l];
    }
    out << "qos set " << i << " done\n";
    save(qos_table(i + 1), false);
    out << std::flush;
  }
  md << qos_table(o.qos_sets);
  out << "\n" << md.str();
  save("", true);
  return 0;
}

}  // namespace treefarm::lab::planning
