#include "tools/Sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

#include "runtime/model/Calibration.hpp"
#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "runtime/cli/EarlyChecks.hpp"
#include "runtime/metrics/AtomicFile.hpp"
#include "runtime/node/ExitCode.hpp"
#include "tools/HostCalibration.hpp"
#include "tools/plot/Gnuplot.hpp"

namespace treefarm::tools {

namespace fs = std::filesystem;

std::string experiment_with_size(const std::string& toml_text, const std::string& path, const std::string& app,
                                 std::uint32_t n, std::optional<std::uint64_t> tasks) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(path + ": " + std::string(e.description()));
  }
  auto* apps = doc["app"].as_array();
  bool found = false;
  if (apps) {
    for (auto& node : *apps) {
      auto* t = node.as_table();
      if (!t) continue;
      if (tasks) t->insert_or_assign("tasks", static_cast<std::int64_t>(*tasks));
      const auto name = (*t)["name"].value<std::string>();
      if (!name || *name != app) continue;
      const auto kernel = (*t)["kernel"].value<std::string>();
      if (!kernel || (*kernel != "matmul" && *kernel != "matadd"))
        throw std::invalid_argument(path + ": application '" + app + "' has no matrix kernel (matmul, matadd): its size cannot vary");
      t->insert_or_assign("n", static_cast<std::int64_t>(n));
      found = true;
    }
  }
  if (!found) throw std::invalid_argument(path + ": no application named '" + app + "'");
  std::ostringstream out;
  out << "# " << path << " with application '" << app << "' at n = " << n << " (treefarm sweep)\n" << doc << "\n";
  return out.str();
}

std::string experiment_with_tasks(const std::string& toml_text, const std::string& path,
                                  const std::map<std::string, std::uint64_t>& tasks) {
  toml::table doc;
  try {
    doc = toml::parse(toml_text, path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(path + ": " + std::string(e.description()));
  }
  if (auto* apps = doc["app"].as_array())
    for (auto& node : *apps)
      if (auto* t = node.as_table())
        if (const auto it = tasks.find((*t)["name"].value<std::string>().value_or("")); it != tasks.end())
          t->insert_or_assign("tasks", static_cast<std::int64_t>(it->second));
  std::ostringstream out;
  out << doc << "\n";
  return out.str();
}

std::map<std::string, std::uint64_t> tasks_for_duration(const model::Experiment& ex, double fair_per_s, double seconds) {
  std::map<std::string, std::uint64_t> out;
  if (!(fair_per_s > 0) || !(seconds > 0)) return out;
  double lasts = 0;  // seconds: the application that ends last
  for (const auto& a : ex.apps)
    if (a.weight > 0) lasts = std::max(lasts, static_cast<double>(a.tasks) / (fair_per_s * a.weight));
  if (!(lasts > 0) || lasts >= seconds) return out;
  const double factor = seconds / lasts;
  for (const auto& a : ex.apps)
    out[a.name] = static_cast<std::uint64_t>(std::ceil(static_cast<double>(a.tasks) * factor));
  return out;
}

void print_sweep_table(std::ostream& out, const nlohmann::json& sweep) {
  char line[200];
  std::snprintf(line, sizeof line, "%8s %12s %14s %14s %8s  %s\n", "n", "CCR B/flop", "measured/s", "predicted/s",
                "ratio", "status");
  out << line;
  for (const auto& p : sweep.at("points")) {
    const double m = p.value("measured", 0.0), pr = p.value("predicted", 0.0);
    std::snprintf(line, sizeof line, "%8u %12.4g %14.4f %14.4f %8.3f  %s\n", p.at("n").get<unsigned>(),
                  p.at("ccr").get<double>(), m, pr, pr > 0 ? m / pr : 0.0,
                  p.at("exit_code").get<int>() == 0 ? "ok" : ("exit " + std::to_string(p.at("exit_code").get<int>())).c_str());
    out << line;
  }
  out << "fair throughput min_k rho_k/w_k (tasks/s per unit of weight), measured and predicted by the LP over "
         "each size's own calibration\n";
}

namespace {

bool plot_sweep(const fs::path& dir, const nlohmann::json& sweep, std::ostream& out) {
  if (!plot::gnuplot_available()) {
    out << "(gnuplot not found: no plot)\n";
    return false;
  }
  {
    std::ofstream dat(dir / "sweep.dat");
    dat << "# n ccr measured predicted ratio\n";
    for (const auto& p : sweep.at("points"))
      if (p.at("exit_code").get<int>() == 0 && p.value("predicted", 0.0) > 0)
        dat << p.at("n").get<unsigned>() << " " << p.at("ccr").get<double>() << " " << p.at("measured").get<double>()
            << " " << p.at("predicted").get<double>() << " " << p.at("ratio").get<double>() << "\n";
  }
  {
    std::ofstream gp(dir / "sweep.gp");
    gp << "set terminal pngcairo size 900,700\nset output " << plot::quote((dir / "sweep.png").string()) << "\n"
       << "set multiplot layout 2,1 title 'treefarm sweep: " << sweep.at("experiment").get<std::string>()
       << ", application " << sweep.at("app").get<std::string>() << "'\n"
       << "set logscale xy\nset grid\nset key top right\nset ylabel 'fair throughput (tasks/s per weight)'\n"
       << "set size 1,0.62\nset origin 0,0.38\nset format x ''\n"
       << "plot " << plot::quote((dir / "sweep.dat").string()) << " using 2:3 with linespoints pt 7 title 'measured', '' using 2:4 "
       << "with linespoints pt 6 dt 2 title 'predicted (LP)'\n"
       << "unset logscale y\nset size 1,0.38\nset origin 0,0\nset format x '%g'\n"
       << "set xlabel 'CCR b(k)/c(k) (bytes/flop)'\nset ylabel 'measured / predicted'\nset yrange [0.5:1.5]\n"
       << "plot " << plot::quote((dir / "sweep.dat").string()) << " using 2:5 with linespoints pt 7 notitle, 1 dt 2 lc 'black' notitle, "
       << "0.9 dt 3 lc 'gray' notitle, 1.1 dt 3 lc 'gray' notitle\nunset multiplot\n";
  }
  if (const auto why_not = plot::run_gnuplot(dir / "sweep.gp"); !why_not.empty()) {
    out << why_not << "\n";
    return false;
  }
  return true;
}

}  // namespace

int sweep(const std::string& experiment_path, const SweepOptions& options, const SweepRunner& runner,
          std::ostream& out) {
  if (options.sizes.empty()) throw std::invalid_argument("--n: give at least one matrix order");
  for (auto n : options.sizes)
    if (n == 0) throw std::invalid_argument("--n: matrix orders must be >= 1");
  const std::string text = model::read_input_file(experiment_path);
  const fs::path dir = options.out_dir.empty()
                           ? fs::path("out") / ("sweep-" + fs::path(experiment_path).stem().string())
                           : fs::path(options.out_dir);
  cli_support::prepare_out_folder("--out", dir);  // before the first calibration
  nlohmann::json doc{{"experiment", experiment_path}, {"app", options.app}, {"points", nlohmann::json::array()}};
  int worst = 0;
  for (const auto n : options.sizes) {
    const fs::path nd = fs::absolute(dir / ("n-" + std::to_string(n)));
    fs::create_directories(nd);
    const fs::path exp_file = nd / "experiment.toml";
    std::ofstream(exp_file) << experiment_with_size(text, experiment_path, options.app, n, options.tasks);
    const auto ex = model::load_experiment(exp_file.string());
    const model::AppSpec* app = nullptr;
    for (const auto& a : ex.apps)
      if (a.name == options.app) app = &a;
    nlohmann::json point{{"n", n}, {"ccr", app->ccr()}, {"bytes", app->input_bytes()}, {"flops", app->task_flops()}};
    out << "sweep: n = " << n << " (CCR " << app->ccr() << " bytes/flop): calibrating\n";
    const std::string cal = (nd / "calibration.json").string();
    auto lo = options.launch;
    lo.out_dir = (nd / "calibration").string();
    lo.master_args.insert(lo.master_args.end(), {"--calibrate-out", cal});
    int rc = runner(ex, lo);
    if (rc == 0) {
      if (options.host_record) calibrate_local_host(ex, cal, lo.encrypt, out, lo.bin_dir);
      else if (!options.runner_records_hosts) calibrate_emulated_hosts(ex, cal, options.launch, out);  // every node a host of its own
      // Long enough for the steady window to mean something (--min-seconds): the run's
      // length by the prediction from this calibration, its tasks scaled up if short.
      if (options.min_seconds > 0 && fs::exists(cal)) {
        const double fair = lp::solve(lp::model_from_calibration(ex, model::load_calibration(cal))).fair_throughput;
        const auto scaled = tasks_for_duration(ex, fair, options.min_seconds);
        if (!scaled.empty()) {
          const std::string sized = model::read_input_file(exp_file.string());
          std::ofstream(exp_file) << experiment_with_tasks(sized, exp_file.string(), scaled);
          out << "sweep: n = " << n << ": predicted " << fair << " tasks/s per unit of weight; tasks scaled for a run of ~"
              << options.min_seconds << " s (--min-seconds):";
          for (const auto& [name, t] : scaled) out << " " << name << " " << t;
          out << "\n";
          point["tasks"] = scaled;
        }
      }
      out << "sweep: n = " << n << ": running\n";
      auto ro = options.launch;
      ro.out_dir = nd.string();
      ro.calibration = cal;
      rc = runner(model::load_experiment(exp_file.string()), ro);  // with its tasks as scaled
    }
    point["exit_code"] = rc;
    if (fs::exists(nd / "results.json")) {
      std::ifstream f(nd / "results.json");
      const auto res = nlohmann::json::parse(f);
      point["measured"] = res.value("fair_throughput", 0.0);
      if (res.contains("predicted_fair_throughput")) {
        point["predicted"] = res.at("predicted_fair_throughput").get<double>();
        point["ratio"] = res.value("fair_ratio", 0.0);
      }
      point["apps"] = res.at("apps");
    }
    if (rc == node::exit_interrupted) {
      // The sizes done are kept, marked so (no table or plot of a partial sweep).
      doc["interrupted"] = true;
      metrics::write_file_atomically(dir / "sweep.json", doc.dump(1) + "\n");
      throw cli_support::Interrupted("interrupted at n = " + std::to_string(n) + "; " +
                                     std::to_string(doc["points"].size()) + " size(s) done are in " +
                                     (dir / "sweep.json").string() + " (\"interrupted\": true)");
    }
    if (rc != 0 && worst == 0) worst = rc;
    doc["points"].push_back(point);
    metrics::write_file_atomically(dir / "sweep.json", doc.dump(1) + "\n");  // after every size: a partial sweep is kept
  }
  print_sweep_table(out, doc);
  if (plot_sweep(dir, doc, out)) out << "plot: " << (dir / "sweep.png").string() << "\n";
  out << "sweep: " << (dir / "sweep.json").string() << "\n";
  return worst;
}

}  // namespace treefarm::tools
