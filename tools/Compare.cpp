#include "tools/Compare.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string_view>

#include "runtime/cli/CliSupport.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "runtime/core/Policy.hpp"
#include "runtime/node/ExitCode.hpp"
#include "tools/HostCalibration.hpp"
#include "tools/Process.hpp"
#include "tools/plot/Gnuplot.hpp"

namespace treefarm::tools {

namespace fs = std::filesystem;

namespace {
struct Spread {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

// Mean, sample standard deviation (0 for one value), min and max.
Spread spread(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

// Mean and spread of a number field over the runs (null if some run lacks it).
std::optional<Spread> field_spread(const std::vector<nlohmann::json>& docs, const std::function<const nlohmann::json*(const nlohmann::json&)>& at) {
  std::vector<double> v;
  for (const auto& d : docs) {
    const auto* x = at(d);
    if (!x || !x->is_number()) return std::nullopt;
    v.push_back(x->get<double>());
  }
  return spread(v);
}
}  // namespace

nlohmann::json compare_json(const std::vector<std::pair<std::string, std::vector<nlohmann::json>>>& runs) {
  std::vector<std::pair<std::string, nlohmann::json>> firsts;
  for (const auto& [name, docs] : runs)
    if (!docs.empty()) firsts.emplace_back(name, docs.front());
  auto out = compare_json(firsts);
  std::size_t i = 0;
  for (const auto& [name, docs] : runs) {
    if (docs.empty()) continue;
    auto& p = out["policies"][i++];
    auto member = [](const char* key) {
      return [key](const nlohmann::json& d) -> const nlohmann::json* { return d.contains(key) ? &d.at(key) : nullptr; };
    };
    p["runs"] = docs.size();
    bool ok = true;
    p["repeats"] = nlohmann::json::array();
    for (const auto& d : docs) {
      ok = ok && d.value("ok", false);
      p["repeats"].push_back({{"fair_throughput", d.value("fair_throughput", 0.0)},
                              {"fair_ratio", d.contains("fair_ratio") ? d["fair_ratio"] : nlohmann::json(nullptr)},
                              {"duration", d.value("duration", 0.0)},
                              {"ok", d.value("ok", false)}});
    }
    p["ok"] = ok;
    for (const char* key : {"fair_throughput", "fair_ratio", "duration"}) {
      const auto sp = field_spread(docs, member(key));
      if (!sp) continue;
      p[key] = sp->mean;
      if (std::string_view(key) == "duration") continue;
      p[std::string(key) + "_stddev"] = sp->stddev;
      p[std::string(key) + "_min"] = sp->min;
      p[std::string(key) + "_max"] = sp->max;
    }
    for (std::size_t k = 0; k < p["apps"].size(); ++k) {
      auto& a = p["apps"][k];
      auto app_field = [k](const char* key) {
        return [k, key](const nlohmann::json& d) -> const nlohmann::json* {
          if (!d.contains("apps") || k >= d["apps"].size() || !d["apps"][k].contains(key)) return nullptr;
          return &d["apps"][k][key];
        };
      };
      for (const char* key : {"throughput", "ratio"})
        if (const auto sp = field_spread(docs, app_field(key))) {
          a[key] = sp->mean;
          a[std::string(key) + "_stddev"] = sp->stddev;
        }
      std::uint64_t fewest = a.value("completed", std::uint64_t{0}), wrong = 0;
      for (const auto& d : docs) {
        const auto* c = app_field("completed")(d);
        const auto* w = app_field("wrong")(d);
        if (c && c->is_number()) fewest = std::min(fewest, c->get<std::uint64_t>());
        if (w && w->is_number()) wrong += w->get<std::uint64_t>();
      }
      a["completed"] = fewest;
      a["wrong"] = wrong;
    }
  }
  return out;
}

nlohmann::json compare_json(const std::vector<std::pair<std::string, nlohmann::json>>& results) {
  nlohmann::json out;
  out["policies"] = nlohmann::json::array();
  for (const auto& [name, r] : results) {
    nlohmann::json p;
    p["name"] = name;
    p["ok"] = r.value("ok", false);
    p["fair_throughput"] = r.value("fair_throughput", 0.0);
    p["duration"] = r.value("duration", 0.0);
    if (r.contains("predicted_fair_throughput")) {
      p["predicted_fair_throughput"] = r["predicted_fair_throughput"];
      p["fair_ratio"] = r.value("fair_ratio", 0.0);
    } else {
      p["predicted_fair_throughput"] = nullptr;
      p["fair_ratio"] = nullptr;
    }
    p["apps"] = nlohmann::json::array();
    for (const auto& a : r.at("apps")) {
      nlohmann::json ja{{"name", a.at("name")}, {"throughput", a.at("throughput")}, {"completed", a.at("completed")},
                        {"wrong", a.at("wrong")}};
      ja["predicted"] = a.contains("predicted") ? a["predicted"] : nlohmann::json(nullptr);
      ja["ratio"] = a.contains("ratio") ? a["ratio"] : nlohmann::json(nullptr);
      p["apps"].push_back(ja);
    }
    out["policies"].push_back(p);
  }
  return out;
}

void print_compare_table(std::ostream& out, const nlohmann::json& compare) {
  char line[320];
  bool repeated = false;
  for (const auto& p : compare.at("policies")) repeated = repeated || p.value("runs", 1u) > 1;
  // With repeats: the mean of the runs, ± the sample standard deviation, and [min, max].
  auto sd = [&](const nlohmann::json& j, const char* key) -> std::string {
    if (!repeated || !j.contains(key) || !j.at(key).is_number()) return "";
    char b[48];
    std::snprintf(b, sizeof b, " ±%.4f", j.at(key).get<double>());
    return b;
  };
  if (repeated)
    std::snprintf(line, sizeof line, "%-14s %4s %4s %26s %24s %16s %16s\n", "policy", "ok", "runs", "fair tasks/s (mean ±sd)",
                  "[min, max]", "LP optimum", "ratio (±sd)");
  else
    std::snprintf(line, sizeof line, "%-14s %4s %16s %16s %8s\n", "policy", "ok", "fair tasks/s", "LP optimum", "ratio");
  out << line;
  for (const auto& p : compare.at("policies")) {
    const bool predicted = !p.at("predicted_fair_throughput").is_null();
    const std::string lp = predicted ? std::to_string(p.at("predicted_fair_throughput").get<double>()) : "-";
    const std::string ratio = predicted ? std::to_string(p.at("fair_ratio").get<double>()).substr(0, 5) : "-";
    if (repeated) {
      char fair[64], range[64];
      std::snprintf(fair, sizeof fair, "%.4f%s", p.at("fair_throughput").get<double>(), sd(p, "fair_throughput_stddev").c_str());
      std::snprintf(range, sizeof range, "[%.4f, %.4f]", p.value("fair_throughput_min", 0.0), p.value("fair_throughput_max", 0.0));
      std::snprintf(line, sizeof line, "%-14s %4s %4u %26s %24s %16s %16s\n", p.at("name").get<std::string>().c_str(),
                    p.at("ok").get<bool>() ? "yes" : "NO", p.value("runs", 1u), fair, range, lp.c_str(),
                    (ratio + (predicted ? sd(p, "fair_ratio_stddev") : "")).c_str());
    } else {
      std::snprintf(line, sizeof line, "%-14s %4s %16.4f %16s %8s\n", p.at("name").get<std::string>().c_str(),
                    p.at("ok").get<bool>() ? "yes" : "NO", p.at("fair_throughput").get<double>(), lp.c_str(), ratio.c_str());
    }
    out << line;
    for (const auto& a : p.at("apps")) {
      const bool ap = !a.at("predicted").is_null() && a.contains("ratio") && a.at("ratio").is_number();
      const std::string alp = ap ? std::to_string(a.at("predicted").get<double>()) : "-";
      const std::string ar = ap ? std::to_string(a.at("ratio").get<double>()).substr(0, 5) : "-";
      if (repeated) {
        char thr[64];
        std::snprintf(thr, sizeof thr, "%.4f%s", a.at("throughput").get<double>(), sd(a, "throughput_stddev").c_str());
        std::snprintf(line, sizeof line, "  %-12s %4s %4s %26s %24s %16s %16s\n", a.at("name").get<std::string>().c_str(), "",
                      "", thr, "", alp.c_str(), (ar + (ap ? sd(a, "ratio_stddev") : "")).c_str());
      } else {
        std::snprintf(line, sizeof line, "  %-12s %4s %16.4f %16s %8s\n", a.at("name").get<std::string>().c_str(), "",
                      a.at("throughput").get<double>(), alp.c_str(), ar.c_str());
      }
      out << line;
    }
  }
}

namespace {
void run_gnuplot(const fs::path& script) {
  if (const auto why_not = plot::run_gnuplot(script); !why_not.empty()) std::fprintf(stderr, "treefarm: %s\n", why_not.c_str());
}
}  // namespace

bool plot_compare(const std::string& dir, const nlohmann::json& compare,
                  const std::vector<std::pair<std::string, nlohmann::json>>& results, std::ostream& out) {
  if (!plot::gnuplot_available()) {
    out << "(gnuplot not found: no plots)\n";
    return false;
  }
  const fs::path d = dir;
  {
    // Left: the fair ratio measured / LP per policy, the y-axis always including 1.0 (the
    // optimum, drawn dashed), each bar labelled with its absolute fair throughput.
    // Right: per policy, one bar per application: measured tasks/s (absolute).
    // With repeats (some policy ran more than once): bars are means, error bars ± one
    // sample standard deviation (compare.dat's 4th column, compare-apps.dat's NAME_sd).
    bool repeated = false;
    for (const auto& p : compare.at("policies")) repeated = repeated || p.value("runs", 1u) > 1;
    double top = 1.0;
    std::ofstream data(d / "compare.dat");
    for (const auto& p : compare.at("policies")) {
      const double ratio = p.at("fair_ratio").is_null() ? 0.0 : p.at("fair_ratio").get<double>();
      const double ratio_sd = p.contains("fair_ratio_stddev") ? p["fair_ratio_stddev"].get<double>() : 0.0;
      top = std::max(top, ratio + ratio_sd);
      data << p.at("name").get<std::string>() << " " << ratio << " " << p.at("fair_throughput").get<double>();
      if (repeated) data << " " << ratio_sd;
      data << "\n";
    }
    std::vector<std::string> apps;
    if (!compare.at("policies").empty())
      for (const auto& a : compare.at("policies")[0].at("apps")) apps.push_back(a.at("name").get<std::string>());
    std::ofstream app_data(d / "compare-apps.dat");
    app_data << "policy";
    for (const auto& a : apps) app_data << " " << a << (repeated ? " " + a + "_sd" : "");
    app_data << "\n";
    for (const auto& p : compare.at("policies")) {
      app_data << p.at("name").get<std::string>();
      for (const auto& a : p.at("apps")) {
        app_data << " " << a.at("throughput").get<double>();
        if (repeated) app_data << " " << a.value("throughput_stddev", 0.0);
      }
      app_data << "\n";
    }
    std::ofstream gp(d / "compare.gp");
    gp << "set terminal pngcairo dashed size 1200,500\nset output '" << (d / "compare.png").string() << "'\n"
       << "set multiplot layout 1,2\n"
       << "set title 'Fair throughput: measured / LP optimum (labels: measured tasks/s)'\n"
       << "set style data histograms\n"
       << (repeated ? "set style histogram errorbars gap 1 lw 1\n" : "set style histogram clustered gap 1\n")
       << "set style fill solid 0.6\n"
       << "set yrange [0:" << top * 1.15 << "]\nset ylabel 'measured / LP'\nset grid ytics\nset key top right\n"
       << "plot '" << (d / "compare.dat").string() << "' using " << (repeated ? "2:4" : "2") << ":xtic(1) title '"
       << (repeated ? "measured / LP (mean, ±1 sd)" : "measured / LP") << "', "
       << "'' using 0:2:(sprintf('%.1f/s', $3)) with labels offset 0,0.7 notitle, "
       << "1 with lines dt 2 lw 2 lc rgb 'black' title 'LP optimum = 1'\n"
       << "set title 'Measured throughput per application" << (repeated ? " (mean, ±1 sd)" : "") << "'\nset yrange [0:*]\n"
       << "set ylabel 'tasks/s'\n";
    if (repeated)
      gp << "plot for [i=1:" << apps.size() << "] '" << (d / "compare-apps.dat").string()
         << "' using (column(2*i)):(column(2*i+1)):xtic(1) title columnheader(2*i)\n";
    else
      gp << "plot for [i=2:" << apps.size() + 1 << "] '" << (d / "compare-apps.dat").string()
         << "' using i:xtic(1) title columnheader(i)\n";
    gp << "unset multiplot\n";
  }
  run_gnuplot(d / "compare.gp");
  for (const auto& [name, r] : results) {
    const fs::path pd = d / name;
    std::map<std::string, std::vector<double>> times;
    for (const auto& t : r.at("tasks")) times[t.at("app").get<std::string>()].push_back(t.at("completed_at").get<double>());
    std::ofstream gp(pd / "cumulative.gp");
    // pngcairo draws the dashes of the LP lines (the libgd png terminal does not).
    gp << "set terminal pngcairo dashed size 900,550\nset output '" << (pd / "cumulative.png").string() << "'\n"
       << "set title 'Completed tasks over time, " << name << " (dashed: LP slope)'\n"
       << "set xlabel 'seconds'\nset ylabel 'completed tasks'\nset key left top\nset grid\nplot ";
    bool first = true;
    int color = 1;
    for (const auto& a : r.at("apps")) {
      const auto app = a.at("name").get<std::string>();
      auto& ts = times[app];
      std::sort(ts.begin(), ts.end());
      const auto file = pd / ("cumulative-" + app + ".dat");
      std::ofstream data(file);
      for (std::size_t i = 0; i < ts.size(); ++i) data << ts[i] << " " << i + 1 << "\n";
      gp << (first ? "" : ", ") << "'" << file.string() << "' using 1:2 with lines lw 2 lc " << color << " title '" << app
         << "'";
      if (a.contains("predicted"))
        gp << ", " << a["predicted"].get<double>() << "*x with lines dt 2 lc " << color << " title '" << app << " LP'";
      first = false;
      ++color;
    }
    gp << "\n";
    gp.close();
    run_gnuplot(pd / "cumulative.gp");
  }
  return true;
}

std::vector<double> link_bytes_per_second(const model::Experiment& ex, const nlohmann::json& results) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) index[ex.nodes[i].name] = i;
  std::map<std::string, double> app_bytes;
  for (const auto& a : ex.apps) app_bytes[a.name] = static_cast<double>(a.input_bytes());
  std::vector<double> bytes(ex.nodes.size(), 0.0);
  for (const auto& t : results.at("tasks")) {
    auto it = index.find(t.at("node").get<std::string>());
    if (it == index.end()) continue;
    const double b = app_bytes[t.at("app").get<std::string>()];
    for (auto i = std::optional<std::size_t>(it->second); i && *i != 0; i = ex.parent_index(*i)) bytes[*i] += b;
  }
  const double duration = results.value("duration", 0.0);
  for (auto& b : bytes) b = duration > 0 ? b / duration : 0.0;
  return bytes;
}

void print_link_usage(std::ostream& out, const model::Experiment& ex, const std::string& compare_dir,
                      const std::function<double(std::size_t)>& rate) {
  out << "\nlink usage (bytes/s carried over the run / shaped rate):\n";
  // The policies of this comparison, in the order they ran (compare.json); a directory
  // left by an earlier comparison in the same DIR is not one of them.
  std::vector<std::string> names;
  if (std::ifstream cj(fs::path(compare_dir) / "compare.json"); cj) {
    const auto compare = nlohmann::json::parse(cj);  // named: a range-for over a temporary's member dangles
    for (const auto& p : compare.at("policies")) names.push_back(p.at("name").get<std::string>());
  } else {
    for (const auto& entry : fs::directory_iterator(compare_dir))
      if (entry.is_directory() && entry.path().filename() != "calibration") names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
  }
  for (const auto& name : names) {
    auto file = fs::path(compare_dir) / name / "results.json";
    if (!fs::exists(file)) file = fs::path(compare_dir) / name / "run-1" / "results.json";  // --repeat: the first run
    if (!fs::exists(file)) continue;
    std::ifstream f(file);
    const auto usage = link_bytes_per_second(ex, nlohmann::json::parse(f));
    out << "  " << name << ":";
    for (std::size_t i = 1; i < ex.nodes.size(); ++i) {
      char buf[128];
      const double r = rate(i);
      if (r > 0) std::snprintf(buf, sizeof buf, "  %s %.3g/%.3g (%.0f%%)", ex.nodes[i].name.c_str(), usage[i], r, 100 * usage[i] / r);
      else std::snprintf(buf, sizeof buf, "  %s %.3g", ex.nodes[i].name.c_str(), usage[i]);
      out << buf;
    }
    out << "\n";
  }
}

int compare_policies(const model::Experiment& ex, const CompareOptions& options, const TreeRunner& runner,
                     std::ostream& out) {
  std::vector<std::string> policies = options.policies.empty() ? core::policy_names() : options.policies;
  for (const auto& p : policies) (void)core::make_policy(p);  // unknown names fail before any run
  const fs::path dir = options.out_dir.empty() ? fs::path("out") / ("compare-" + fs::path(ex.path).stem().string())
                                               : fs::path(options.out_dir);
  cli_support::prepare_out_folder("--out", dir);  // before anything runs
  std::string calibration = options.calibration;
  // Calibrate only for a policy that follows the LP (lp): the others run without one.
  const bool needed = std::any_of(policies.begin(), policies.end(), [](const std::string& p) { return core::policy_needs_calibration(p); });
  if (calibration.empty() && !options.no_calibrate && !needed)
    out << "compare: no calibration (no chosen policy needs one; --calibration FILE adds the LP prediction)\n";
  if (calibration.empty() && !options.no_calibrate && needed) {
    calibration = fs::absolute(dir / "calibration.json").string();
    out << "compare: calibrating in place -> " << calibration << std::endl;  // before the tree's own output
    auto lo = options.launch;
    lo.out_dir = (dir / "calibration").string();
    lo.master_args.insert(lo.master_args.end(), {"--calibrate-out", calibration});
    const int rc = runner(lo);
    if (rc == node::exit_interrupted) throw cli_support::Interrupted("interrupted while calibrating; no compare.json written");
    if (rc != 0) {
      out << "compare: calibration failed (exit code " << rc << ")\n";
      return rc;
    }
    // A tree started on this machine shares its CPUs (not an emulated LAN: its own hooks).
    if (!options.served && !lo.wrap && !lo.cpus && fs::exists(calibration))
      calibrate_local_host(ex, calibration, lo.encrypt, out, lo.bin_dir);
    // An emulated LAN: every node a machine of its own, with the CPU its quota gives it.
    if (lo.wrap && fs::exists(calibration)) calibrate_emulated_hosts(ex, calibration, options.launch, out);
  }
  if (options.repeat < 1) throw std::invalid_argument("compare: --repeat must be >= 1");
  std::vector<std::pair<std::string, nlohmann::json>> results;           // the first run of each policy
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> runs;  // every run
  int worst = 0;
  for (const auto& policy : policies) {
    if (core::policy_needs_calibration(policy) && calibration.empty()) {
      out << "compare: skipping policy " << policy << " (it needs a calibration)\n";
      continue;
    }
    std::vector<nlohmann::json> docs;
    for (unsigned r = 1; r <= options.repeat; ++r) {
      const fs::path run_dir = options.repeat == 1 ? dir / policy : dir / policy / ("run-" + std::to_string(r));
      out << "compare: running policy " << policy;
      if (options.repeat > 1) out << " (run " << r << " of " << options.repeat << ")";
      out << ":" << std::endl;  // flushed: the run's own table follows, printed by its master
      auto lo = options.launch;
      lo.policy = policy;
      lo.calibration = calibration;
      lo.out_dir = run_dir.string();
      const int rc = runner(lo);
      if (rc == node::exit_interrupted)
        throw cli_support::Interrupted("interrupted while running policy " + policy + "; no compare.json written");
      const auto file = run_dir / "results.json";
      if (!fs::exists(file)) {
        out << "compare: policy " << policy << " produced no results (exit code " << rc << ")\n";
        if (worst == 0) worst = rc != 0 ? rc : 1;
        continue;
      }
      std::ifstream f(file);
      docs.push_back(nlohmann::json::parse(f));
      if (rc != 0 && worst == 0) worst = rc;
    }
    if (docs.empty()) continue;
    fs::create_directories(dir / policy);
    results.emplace_back(policy, docs.front());
    runs.emplace_back(policy, std::move(docs));
  }
  if (runs.empty()) {  // nothing to tabulate or plot: each failure was printed above
    out << "compare: no policy produced results\n";
    return worst != 0 ? worst : 1;
  }
  const auto cmp = compare_json(runs);
  auto doc = cmp;
  doc["experiment"] = ex.path;
  doc["calibration"] = calibration;
  doc["repeat"] = options.repeat;
  std::ofstream(dir / "compare.json") << doc.dump(1) << "\n";
  out << "\n";
  print_compare_table(out, cmp);
  plot_compare(dir.string(), cmp, results, out);
  if (options.after) options.after(dir.string(), out);
  out << "\nwrote " << (dir / "compare.json").string() << " and " << (dir / "compare.png").string() << "\n";
  return worst;
}

}  // namespace treefarm::tools
