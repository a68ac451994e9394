#include "runtime/model/ExperimentFile.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

#include "runtime/core/Migration.hpp"
#include "runtime/model/BagSource.hpp"

namespace treefarm::model {

namespace {

/// A TOML basic string, escaped by toml++.
std::string quoted(const std::string& s) {
  std::ostringstream out;
  out << toml::value<std::string>(s);
  return out.str();
}

/// The shortest text that reads back as the same double, as a TOML float.
std::string number(double v, const char* key) {
  if (!std::isfinite(v)) throw std::invalid_argument(std::string("write_experiment: ") + key + " is not finite");
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  std::string text(buf, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

class Writer {
 public:
  void table(const std::string& header) { out_ << (first_ ? "" : "\n") << header << "\n", first_ = false; }
  void text(const char* key, const std::string& v) { out_ << key << " = " << quoted(v) << "\n"; }
  void integer(const char* key, std::uint64_t v) { out_ << key << " = " << v << "\n"; }
  void real(const char* key, double v) { out_ << key << " = " << number(v, key) << "\n"; }
  void boolean(const char* key, bool v) { out_ << key << " = " << (v ? "true" : "false") << "\n"; }
  void strings(const char* key, const std::vector<std::string>& v) {
    out_ << key << " = [";
    for (std::size_t i = 0; i < v.size(); ++i) out_ << (i ? ", " : "") << quoted(v[i]);
    out_ << "]\n";
  }
  void comment(const std::string& header) {
    std::istringstream lines(header);
    for (std::string line; std::getline(lines, line);) out_ << "# " << line << "\n";
    first_ = false;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  bool first_ = true;
};

void write_node(Writer& w, const NodeSpec& n) {
  w.table("[[node]]");
  w.text("name", n.name);
  if (n.parent) w.text("parent", *n.parent);
  w.integer("cores", n.cores);
  if (!n.listen.empty()) w.text("listen", n.listen);
  if (n.speed) w.real("speed", *n.speed);
  if (n.parent && n.bandwidth) w.real("bandwidth", *n.bandwidth);
  if (n.parent && n.latency != 0) w.real("latency", n.latency);
  if (n.cpu_quota) w.real("cpu_quota", *n.cpu_quota);
  if (!n.cpuset.empty()) w.text("cpuset", n.cpuset);
  if (n.memory) w.integer("memory", n.memory);
  if (n.disk) w.integer("disk", n.disk);
}

/// A bag's own inputs (docs/command-tasks.md): its files and its lines file as absolute
/// paths (read back alike from wherever the text is written), its numbers as ranges.
void write_bag(Writer& w, const BagSource& bag) {
  switch (bag.form()) {
    case BagSource::Form::files: {
      std::vector<std::string> paths;
      for (const auto& p : bag.paths()) paths.push_back(std::filesystem::absolute(p).lexically_normal().string());
      w.strings("inputs", paths);
      break;
    }
    case BagSource::Form::lines:
      w.text("lines", std::filesystem::absolute(bag.lines_file()).lexically_normal().string());
      if (bag.csv()) w.boolean("csv", true);
      break;
    case BagSource::Form::array: {
      std::string ranges;
      for (const auto& r : bag.ranges()) {
        if (!ranges.empty()) ranges += ",";
        ranges += std::to_string(r.first);
        if (r.last != r.first) ranges += "-" + std::to_string(r.last) + (r.step != 1 ? ":" + std::to_string(r.step) : "");
      }
      w.text("array", ranges);
      break;
    }
  }
}

void write_app(Writer& w, const AppSpec& a) {
  const AppSpec defaults;
  w.table("[[app]]");
  w.text("name", a.name);
  w.text("kernel", std::string(to_string(a.kernel)));
  switch (a.kernel) {
    case Kernel::matmul:
    case Kernel::matadd:
      w.integer("n", a.n);
      break;
    case Kernel::noop:
      w.integer("bytes", a.bytes);
      break;
    case Kernel::abstract:
      w.integer("bytes", a.bytes);
      w.real("flops", a.flops);
      break;
    case Kernel::command:
      w.strings("argv", a.argv);
      if (a.bag) write_bag(w, *a.bag);
      else if (a.input_file.empty()) w.integer("bytes", a.bytes);
      else w.text("input_file", a.input_file);
      if (a.timeout > 0) w.real("timeout", a.timeout);
      if (!a.expect_digest.empty()) w.text("expect_digest", a.expect_digest);
      if (a.spot_check) w.boolean("spot_check", true);
      if (!a.output_file.empty()) {
        w.text("output_file", a.output_file);
        if (a.max_output_bytes != defaults.max_output_bytes) w.integer("max_output_bytes", a.max_output_bytes);
      }
      break;
  }
  if (!a.bag) w.integer("tasks", a.tasks);  // a bag's tasks are its files, lines or numbers
  if (a.max_retries) w.integer("max_retries", a.max_retries);
  w.real("weight", a.weight);
  if (a.cores_per_task != defaults.cores_per_task) w.integer("cores_per_task", a.cores_per_task);
  if (a.memory_per_task) w.integer("memory_per_task", a.memory_per_task);
  if (a.disk_per_task) w.integer("disk_per_task", a.disk_per_task);
  if (a.min_speed > 0) w.real("min_speed", a.min_speed);
  if (!a.origin.empty()) w.text("origin", a.origin);
}

void write_run(Writer& w, const RunSpec& run) {
  w.table("[run]");
  w.integer("buffer", run.buffer);
  w.text("policy", run.policy);
  w.real("epsilon", run.epsilon);
  w.integer("seed", run.seed);
  w.text("comm_model", run.comm_model == CommModel::one_port ? "one-port" : "multi-port");
  if (run.max_out_bandwidth) w.real("max_out_bandwidth", *run.max_out_bandwidth);
  if (run.migration != core::MigrationMode::off) w.text("migration", std::string(core::to_string(run.migration)));
  if (run.balance != core::BalanceMode::off) w.text("balance", std::string(core::to_string(run.balance)));
  for (const auto& [policy, options] : run.policy_options) {
    w.table("[policy." + policy + "]");
    for (const auto& [key, value] : options) w.real(key.c_str(), value);
  }
}

void write_event(Writer& w, const EventSpec& e) {
  w.table("[[event]]");
  w.real("at", e.at);
  w.text("node", e.node);
  w.real(to_string(e.kind), e.value);
}

}  // namespace

std::string write_experiment(const Experiment& experiment, const std::string& header) {
  Writer w;
  if (!header.empty()) w.comment(header);
  for (const auto& n : experiment.nodes) write_node(w, n);
  for (const auto& a : experiment.apps) write_app(w, a);
  write_run(w, experiment.run);
  for (const auto& e : experiment.events) write_event(w, e);
  return w.str();
}

Experiment save_experiment(const Experiment& experiment, const std::string& path, const std::string& header) {
  {
    std::ofstream f(path, std::ios::trunc);
    if (!(f << write_experiment(experiment, header)) || !f.flush())
      throw std::runtime_error("cannot write the experiment file " + path);
  }
  return load_experiment(path);
}

void add_node(Experiment& experiment, const std::string& name, const std::string& parent, std::uint32_t cores) {
  NodeSpec n;
  n.name = name;
  if (!parent.empty()) n.parent = parent;
  n.cores = cores;
  experiment.nodes.push_back(std::move(n));
}

AppSpec noop_app(const std::string& name, std::uint64_t bytes, std::uint64_t tasks) {
  AppSpec a;
  a.name = name;
  a.kernel = Kernel::noop;
  a.bytes = bytes;
  a.tasks = tasks;
  return a;
}

}  // namespace treefarm::model
