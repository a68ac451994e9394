#include "runtime/model/Experiment.hpp"
#include "runtime/core/LinkFit.hpp"
#include "runtime/model/ExperimentFile.hpp"
#include "runtime/model/ExperimentText.hpp"

#include <algorithm>
#include <regex>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <toml++/toml.h>

#include "runtime/core/Policy.hpp"
#include "runtime/model/BagKeys.hpp"
#include "runtime/model/FaultTable.hpp"
#include "runtime/model/TomlReader.hpp"
#include "runtime/model/WireFit.hpp"
#include "runtime/model/Units.hpp"

static_assert(treefarm::model::one_port_small_transfer == treefarm::core::one_port_small_transfer,
              "the link fit's small-transfer bound is the one-port window's");

namespace treefarm::model {

namespace {

std::string format_error(const std::string& file, int line, const std::string& field,
                         const std::string& message) {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += "field '" + field + "': ";
  return out + message;
}

}  // namespace

FileError::FileError(std::string file, int line, std::string field, const std::string& message)
    : std::runtime_error(format_error(file, line, field, message)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)) {}

const char* to_string(EventKind kind) {
  static constexpr std::array<const char*, 3> names{"cpu_quota", "speed", "bandwidth"};  // by EventKind
  return names.at(static_cast<std::size_t>(kind));
}

std::optional<std::size_t> Experiment::node_index(const std::string& name) const {
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].name == name) return i;
  return std::nullopt;
}

std::optional<std::size_t> Experiment::parent_index(std::size_t i) const {
  if (i >= nodes.size() || !nodes[i].parent) return std::nullopt;
  return node_index(*nodes[i].parent);
}

std::vector<std::size_t> Experiment::children(std::size_t i) const {
  std::vector<std::size_t> out;
  if (i >= nodes.size()) return out;
  for (std::size_t j = 0; j < nodes.size(); ++j)
    if (nodes[j].parent && *nodes[j].parent == nodes[i].name) out.push_back(j);
  return out;
}

std::size_t Experiment::depth(std::size_t i) const {
  std::size_t d = 0;
  // Bounded walk: a hand-built Experiment may hold a cycle.
  for (auto p = parent_index(i); p && d <= nodes.size(); p = parent_index(*p)) ++d;
  return d;
}

std::uint64_t Experiment::total_tasks() const {
  std::uint64_t total = 0;
  for (const auto& app : apps) total += app.tasks;
  return total;
}

namespace {

using Table = toml::table;
using Reader = TomlReader;

constexpr std::int64_t max_cores = 1 << 16;
constexpr std::int64_t max_matrix_order = 16384;
constexpr std::int64_t max_tasks = 1'000'000'000;
constexpr std::int64_t max_buffer = 1'000'000;
constexpr std::uint64_t max_task_bytes = 1ull << 40;    // 1 TiB per task payload
constexpr std::uint64_t max_output_limit = 2ull << 30;  // bytes: the wire's payload limit (net::max_payload_bytes)
constexpr std::uint64_t max_task_memory = 1ull << 50;   // 1 PiB
constexpr double max_weight = 1e9;

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;  // names become directories
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
  });
}

bool valid_cpuset(std::string_view s) {
  // Comma-separated items, each "N" or "N-M" with N <= M.
  if (s.empty()) return false;
  std::size_t pos = 0;
  while (true) {
    auto read_number = [&](long& out) {
      const std::size_t start = pos;
      out = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 6)
        out = out * 10 + (s[pos++] - '0');
      return pos > start;
    };
    long lo = 0, hi = 0;
    if (!read_number(lo)) return false;
    hi = lo;
    if (pos < s.size() && s[pos] == '-') {
      ++pos;
      if (!read_number(hi) || hi < lo) return false;
    }
    if (pos == s.size()) return true;
    if (s[pos] != ',') return false;
    ++pos;
  }
}

std::string index_prefix(std::string_view what, std::size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "].";
}

std::string name_of(const Reader& r, const Table& t, const std::string& prefix,
                    std::string_view what) {
  r.require_present(t, "name", prefix, what);
  std::string name = *r.string_of(t, "name", prefix);
  r.require(valid_name(name), t, "name", prefix,
            "invalid name '" + name +
                "': expected 1 to 64 characters among letters, digits, '_', '-', '.' (not '.' or '..')");
  return name;
}

struct NodeEntry {
  NodeSpec spec;
  int name_line = 0;
  int parent_line = 0;
};

NodeEntry read_node(const Reader& r, const Table& t, std::size_t index) {
  const std::string prefix = index_prefix("node", index);
  r.check_keys(t, prefix,
               {"name", "parent", "cores", "listen", "speed", "bandwidth", "latency",
                "cpu_quota", "cpuset", "memory", "disk"},
               "[[node]]");
  NodeEntry entry;
  NodeSpec& n = entry.spec;
  n.line = line_of(t);
  n.name = name_of(r, t, prefix, "the node's unique name");
  entry.name_line = line_of(*t.get("name"));
  n.parent = r.string_of(t, "parent", prefix);
  if (n.parent) entry.parent_line = line_of(*t.get("parent"));
  n.cores = static_cast<std::uint32_t>(r.integer_of(t, "cores", prefix, 0, max_cores).value_or(1));
  n.listen = r.string_of(t, "listen", prefix).value_or("");
  if (!n.listen.empty())
    r.require(n.listen.find("://") != std::string::npos, t, "listen", prefix,
              "expected a ZeroMQ endpoint such as 'tcp://10.0.0.1:5555', got '" + n.listen + "'");
  n.speed = r.quantity_of(t, "speed", prefix, parse_speed, "flop/s or a speed like '2Gf'");
  if (n.speed) r.require(*n.speed > 0, t, "speed", prefix, "must be > 0 flop/s");
  n.bandwidth = r.quantity_of(t, "bandwidth", prefix, parse_bandwidth,
                              "bytes/s or a bandwidth like '125MBps'");
  if (n.bandwidth) r.require(*n.bandwidth > 0, t, "bandwidth", prefix, "must be > 0 bytes/s");
  n.latency = r.quantity_of(t, "latency", prefix, parse_time, "seconds or a time like '50us'")
                  .value_or(0.0);
  if (!n.parent) {
    for (std::string_view key : {"bandwidth", "latency"})
      if (t.contains(key))
        r.fail(line_of(*t.get(key)), prefix + std::string(key),
               "'" + n.name + "' has no parent (it is the master), so it has no link to describe");
  }
  n.cpu_quota = r.number_of(t, "cpu_quota", prefix);
  if (n.cpu_quota)
    r.require(*n.cpu_quota > 0 && *n.cpu_quota <= max_cores, t, "cpu_quota", prefix,
              "must be > 0 (a fraction of a core, e.g. 0.5)");
  n.cpuset = r.string_of(t, "cpuset", prefix).value_or("");
  if (t.contains("cpuset"))
    r.require(valid_cpuset(n.cpuset), t, "cpuset", prefix,
              "expected a core list like '0-1' or '0,2,4', got '" + n.cpuset + "'");
  // Resources for applications' requirements (papers/lee2010 slide 19; 0 = unknown).
  n.memory = r.bytes_of(t, "memory", prefix, max_task_memory).value_or(0);
  n.disk = r.bytes_of(t, "disk", prefix, max_task_memory).value_or(0);
  return entry;
}

/// The keys of a `kernel = "command"` application (docs/command-tasks.md).
void read_command(const Reader& r, const Table& t, const std::string& prefix, const std::string& file, AppSpec& a,
                  const ParseOptions& options) {
  r.require_present(t, "argv", prefix, "the program and its arguments, e.g. [\"gzip\", \"-9\", \"-c\", \"{input}\"]");
  const toml::node* argv = t.get("argv");
  const auto* array = argv->as_array();
  if (!array) r.wrong_type(*argv, prefix + "argv", "an array of strings");
  // The wire's limits (runtime/net/Messages.hpp): the Welcome carries argv to every node.
  r.require(array->size() <= net::max_argv, t, "argv", prefix,
            std::to_string(array->size()) + " elements; at most " + std::to_string(net::max_argv));
  for (std::size_t i = 0; i < array->size(); ++i) {
    const std::string field = prefix + "argv[" + std::to_string(i) + "]";
    const auto* s = array->get(i)->as_string();
    if (!s) r.wrong_type(*array->get(i), field, "a string");
    if (s->get().size() > net::max_text_bytes)
      r.fail(line_of(*array->get(i)), field,
             "too long for the wire: " + std::to_string(s->get().size()) + " bytes; an argument is at most " + std::to_string(net::max_text_bytes) +
                 " bytes (put long text in an input_file)");
    a.argv.push_back(s->get());
  }
  r.require(!a.argv.empty() && !a.argv[0].empty(), t, "argv", prefix, "must name a program (a non-empty first element)");
  if (read_bag(r, t, prefix, file, a, options)) {
    // one task per file, line or number (runtime/model/BagKeys.cpp)
  } else if (const auto input = r.string_of(t, "input_file", prefix)) {
    r.require(!t.contains("bytes"), t, "bytes", prefix, "give either 'bytes' (generated input) or 'input_file', not both");
    std::filesystem::path p(*input);
    if (options.confine_inputs) {
      bool inside = !p.empty() && p.is_relative();
      for (const auto& part : p) inside = inside && part != "..";
      r.require(inside, t, "input_file", prefix,
                "'" + *input + "': a served master reads only the files sent with the submission: give a path "
                "relative to the experiment's folder, inside it (no absolute path, no '..')");
    }
    if (p.is_relative()) p = std::filesystem::path(file).parent_path() / p;
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    r.require(!ec, t, "input_file", prefix, "cannot read '" + p.string() + "': " + ec.message());
    r.require(size <= max_task_bytes, t, "input_file", prefix, "too large: " + std::to_string(size) + " bytes");
    a.input_file = p.string();
    a.bytes = size;
  } else {
    r.require_present(t, "bytes", prefix, "bytes of generated input per task, or give 'input_file'");
    a.bytes = *r.bytes_of(t, "bytes", prefix, max_task_bytes);
  }
  if (const auto timeout = r.number_of(t, "timeout", prefix)) {
    r.require(*timeout >= 0, t, "timeout", prefix, "must be >= 0 seconds (0: no limit)");
    a.timeout = *timeout;
  }
  if (const auto digest = r.string_of(t, "expect_digest", prefix)) {
    const bool hex = digest->size() == 64 && std::all_of(digest->begin(), digest->end(), [](char c) {
                       return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                     });
    r.require(hex, t, "expect_digest", prefix, "expected a SHA-256 as 64 lowercase hex digits (what sha256sum prints)");
    a.expect_digest = *digest;
  }
  if (const toml::node* spot = t.get("spot_check")) {
    const auto* b = spot->as_boolean();
    if (!b) r.wrong_type(*spot, prefix + "spot_check", "true or false");
    a.spot_check = b->get();
  }
  if (const auto name = r.string_of(t, "output_file", prefix)) {
    // A file name under OUT/outputs/APP/ on the master; {index} keeps the tasks' files apart.
    r.require(name->find('/') == std::string::npos && *name != "." && *name != "..", t, "output_file", prefix,
              "a file name, not a path (it is written under OUT/outputs/" + a.name + "/)");
    r.require(name->size() <= 200, t, "output_file", prefix, "at most 200 characters");
    a.output_file = *name;
    a.send_output = true;
  }
  check_output_name(r, t, prefix, a);  // one of the task's placeholders; distinct names
  a.max_retries = static_cast<std::uint32_t>(r.integer_of(t, "max_retries", prefix, 0, 100).value_or(0));
  if (t.contains("max_output_bytes")) {
    r.require(!a.output_file.empty(), t, "max_output_bytes", prefix, "only with 'output_file' (outputs sent back)");
    a.max_output_bytes = *r.bytes_of(t, "max_output_bytes", prefix, max_output_limit);
    r.require(a.max_output_bytes > 0, t, "max_output_bytes", prefix, "must be > 0 bytes");
  }
}

AppSpec read_app(const Reader& r, const Table& t, std::size_t index, const std::string& file, const ParseOptions& options) {
  const std::string prefix = index_prefix("app", index);
  r.check_keys(t, prefix,
               {"name", "kernel", "n", "bytes", "flops", "weight", "tasks", "cores_per_task",
                "memory_per_task", "disk_per_task", "min_speed", "kind", "argv", "input_file", "timeout", "expect_digest", "spot_check", "output_file",
                "max_output_bytes", "origin", "inputs", "lines", "csv", "array", "max_retries"},
               "[[app]]");
  AppSpec a;
  a.line = line_of(t);
  a.name = name_of(r, t, prefix, "the application's unique name");

  // `kind` is another name for `kernel` (users say "application kind command").
  if (t.contains("kind") && t.contains("kernel"))
    r.fail(line_of(*t.get("kind")), prefix + "kind", "give 'kernel' or its other name 'kind', not both");
  const std::string_view kernel_key = t.contains("kind") ? "kind" : "kernel";
  if (const auto kernel = r.string_of(t, kernel_key, prefix)) {
    const auto k = kernel_from_string(*kernel);
    r.require(k.has_value(), t, kernel_key, prefix,
              "unknown kernel '" + *kernel + "'; expected one of: matmul, matadd, noop, abstract, command");
    a.kernel = *k;
  } else if (t.contains("bytes") && t.contains("flops")) {
    a.kernel = Kernel::abstract;
  } else {
    r.fail(a.line, prefix + "kernel",
           "missing required key 'kernel' (matmul, matadd, noop, or abstract; it may be left "
           "out only when both 'bytes' and 'flops' are given)");
  }

  // Which size keys each kernel takes; any other is an error, not silently ignored.
  const bool wants_n = a.kernel == Kernel::matmul || a.kernel == Kernel::matadd;
  const bool wants_bytes = a.kernel == Kernel::noop || a.kernel == Kernel::abstract;
  const bool wants_flops = a.kernel == Kernel::abstract;
  const std::string kernel_name(to_string(a.kernel));
  const bool command = a.kernel == Kernel::command;
  if (command) read_command(r, t, prefix, file, a, options);
  for (auto [key, wanted] : {std::pair<std::string_view, bool>{"n", wants_n},
                             {"bytes", wants_bytes},
                             {"flops", wants_flops},
                             {"argv", command},
                             {"input_file", command},
                             {"timeout", command},
                             {"expect_digest", command},
                             {"spot_check", command},
                             {"output_file", command},
                             {"max_output_bytes", command},
                             {"inputs", command},
                             {"lines", command},
                             {"csv", command},
                             {"array", command},
                             {"max_retries", command}}) {
    if (command && key != "n" && key != "flops") continue;  // read_command checked them
    if (wanted)
      r.require_present(t, key, prefix, "required by kernel " + kernel_name);
    else if (t.contains(key))
      r.fail(line_of(*t.get(key)), prefix + std::string(key),
             "not used by kernel " + kernel_name + "; remove it");
  }
  if (wants_n) a.n = static_cast<std::uint32_t>(*r.integer_of(t, "n", prefix, 1, max_matrix_order));
  if (wants_bytes) a.bytes = *r.bytes_of(t, "bytes", prefix, max_task_bytes);
  if (wants_flops) {
    a.flops = *r.quantity_of(t, "flops", prefix, parse_flops, "flop or an amount like '2Gf'");
    r.require(a.flops > 0, t, "flops", prefix, "must be > 0 flop (use kernel noop for no work)");
  }

  if (const auto w = r.number_of(t, "weight", prefix)) {
    r.require(*w > 0 && *w <= max_weight, t, "weight", prefix,
              "must be > 0 and <= 1e9, got " + std::to_string(*w));
    a.weight = *w;
  }
  if (!a.bag) {  // a bag of files, lines or numbers has counted its tasks
    r.require_present(t, "tasks", prefix, "number of tasks in the bag");
    a.tasks = static_cast<std::uint64_t>(*r.integer_of(t, "tasks", prefix, 1, max_tasks));
  }
  a.cores_per_task =
      static_cast<std::uint32_t>(r.integer_of(t, "cores_per_task", prefix, 1, max_cores).value_or(1));
  a.memory_per_task = r.bytes_of(t, "memory_per_task", prefix, max_task_memory).value_or(0);
  a.disk_per_task = r.bytes_of(t, "disk_per_task", prefix, max_task_memory).value_or(0);
  a.min_speed = r.quantity_of(t, "min_speed", prefix, parse_speed, "flop/s or a speed like '2Gf'").value_or(0.0);
  r.require(a.min_speed >= 0, t, "min_speed", prefix, "must be >= 0 flop/s (0: any speed)");
  a.origin = r.string_of(t, "origin", prefix).value_or("");  // checked against the nodes below
  return a;
}

RunSpec read_run(const Reader& r, const Table& t) {
  const std::string prefix = "run.";
  r.check_keys(t, prefix,
               {"buffer", "policy", "epsilon", "seed", "comm_model", "max_out_bandwidth", "migration", "balance"}, "[run]");
  RunSpec run;
  run.buffer = static_cast<std::uint32_t>(
      r.integer_of(t, "buffer", prefix, 1, max_buffer).value_or(run.buffer));
  if (auto policy = r.string_of(t, "policy", prefix)) {
    if (!core::is_policy_name(*policy)) {
      std::string known;
      for (const auto& name : core::policy_names()) known += (known.empty() ? "" : ", ") + name;
      r.fail(line_of(*t.get("policy")), prefix + "policy",
             "unknown policy '" + *policy + "'; expected one of: " + known);
    }
    run.policy = std::move(*policy);
  }
  if (const auto e = r.number_of(t, "epsilon", prefix)) {
    r.require(*e >= 0 && *e < 0.5, t, "epsilon", prefix,
              "must satisfy 0 <= epsilon < 0.5, got " + std::to_string(*e));
    run.epsilon = *e;
  }
  run.seed = static_cast<std::uint64_t>(
      r.integer_of(t, "seed", prefix, 0, std::numeric_limits<std::int64_t>::max())
          .value_or(static_cast<std::int64_t>(run.seed)));
  if (const auto model = r.string_of(t, "comm_model", prefix)) {
    if (*model == "one-port")
      run.comm_model = CommModel::one_port;
    else if (*model == "multi-port")
      run.comm_model = CommModel::multi_port;
    else
      r.require(false, t, "comm_model", prefix,
                "unknown communication model '" + *model + "'; expected one-port or multi-port");
  }
  run.max_out_bandwidth = r.quantity_of(t, "max_out_bandwidth", prefix, parse_bandwidth,
                                        "bytes/s or a bandwidth like '1Gbps'");
  if (run.max_out_bandwidth)
    r.require(*run.max_out_bandwidth > 0, t, "max_out_bandwidth", prefix, "must be > 0 bytes/s");
  if (const auto mode = r.string_of(t, "migration", prefix)) {
    const auto m = core::migration_from_string(*mode);
    r.require(m.has_value(), t, "migration", prefix, "unknown migration mode '" + *mode + "'; expected off, pull or push");
    run.migration = *m;
  }
  if (const auto mode = r.string_of(t, "balance", prefix)) {
    const auto b = core::balance_from_string(*mode);
    r.require(b.has_value(), t, "balance", prefix, "unknown queue balancing '" + *mode + "'; expected off, tll or mll");
    run.balance = *b;
    r.require(run.balance == core::BalanceMode::off || run.migration != core::MigrationMode::off, t, "balance", prefix,
              "queue balancing moves tasks by migration: set migration = \"pull\" or \"push\" too");
  }
  return run;
}

/// One `[[event]]`: `at`, `node` and exactly one of cpu_quota, speed, bandwidth. The node
/// is checked against the tree by check_events once the tree is read.
EventSpec read_event(const Reader& r, const Table& t, std::size_t index) {
  const std::string prefix = index_prefix("event", index);
  r.check_keys(t, prefix, {"at", "node", "cpu_quota", "speed", "bandwidth"}, "[[event]]");
  EventSpec e;
  e.line = line_of(t);
  r.require_present(t, "at", prefix, "seconds from the start of the run");
  e.at = *r.quantity_of(t, "at", prefix, parse_time, "seconds or a time like '30s'");
  r.require(std::isfinite(e.at) && e.at >= 0, t, "at", prefix, "must be >= 0 seconds");
  r.require_present(t, "node", prefix, "the name of the node that changes");
  e.node = *r.string_of(t, "node", prefix);
  r.require_one_of(t, prefix, {"cpu_quota", "speed", "bandwidth"},
                   "missing the change: give one of cpu_quota, speed, bandwidth",
                   "give only one of cpu_quota, speed, bandwidth per [[event]] (one event per change)");
  if (t.contains("cpu_quota")) {
    e.kind = EventKind::cpu_quota;
    e.value = *r.number_of(t, "cpu_quota", prefix);
    r.require(e.value > 0 && e.value <= max_cores, t, "cpu_quota", prefix,
              "must be > 0 (a fraction of a core, e.g. 0.25)");
  } else if (t.contains("speed")) {
    e.kind = EventKind::speed;
    e.value = *r.quantity_of(t, "speed", prefix, parse_speed, "flop/s or a speed like '2Gf'");
    r.require(e.value > 0, t, "speed", prefix, "must be > 0 flop/s");
  } else {
    e.kind = EventKind::bandwidth;
    e.value = *r.quantity_of(t, "bandwidth", prefix, parse_bandwidth, "bytes/s or a bandwidth like '125MBps'");
    r.require(e.value > 0, t, "bandwidth", prefix, "must be > 0 bytes/s");
  }
  return e;
}

void check_events(const Reader& r, const std::vector<const Table*>& tables, const Experiment& exp) {
  for (std::size_t i = 0; i < exp.events.size(); ++i) {
    const EventSpec& e = exp.events[i];
    const std::string prefix = index_prefix("event", i);
    const auto node = exp.node_index(e.node);
    r.require(node.has_value(), *tables[i], "node", prefix, "no [[node]] is called '" + e.node + "'");
    if (e.kind == EventKind::bandwidth)
      r.require(exp.nodes[*node].parent.has_value(), *tables[i], "bandwidth", prefix,
                "'" + e.node + "' is the master: it has no link from a parent to change");
  }
}

/// `[policy.NAME]` tables: numeric options of a known policy, each checked by creating
/// the policy with them (an unknown key or a value out of range names the field).
std::map<std::string, std::map<std::string, double>> read_policy_options(const Reader& r, const Table& t) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& [name, node] : t) {
    const std::string policy(name.str());
    const std::string prefix = "policy." + policy + ".";
    if (!core::is_policy_name(policy)) {
      std::string known;
      for (const auto& n : core::policy_names()) known += (known.empty() ? "" : ", ") + n;
      r.fail(line_of(node), "policy." + policy, "unknown policy '" + policy + "'; expected one of: " + known);
    }
    const auto* table = node.as_table();
    if (!table) r.wrong_type(node, "policy." + policy, "a table ([policy." + policy + "])");
    const auto keys = core::policy_option_keys(policy);
    for (auto&& [key, value] : *table)
      if (std::find(keys.begin(), keys.end(), key.str()) == keys.end()) {
        std::string known;
        for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
        r.fail(static_cast<int>(key.source().begin.line), prefix + std::string(key.str()),
               "unknown key '" + std::string(key.str()) + "' in [policy." + policy + "]; expected one of: " +
                   (known.empty() ? "nothing (this policy takes no options)" : known));
      }
    auto& options = out[policy];
    for (const auto& key : keys)
      if (const auto v = r.number_of(*table, key, prefix)) options[key] = *v;
    try {
      (void)core::make_policy(policy, options);
    } catch (const std::invalid_argument& e) {
      r.fail(line_of(node), "policy." + policy, e.what());
    }

  }
  return out;
}

/// Checks the tree (unique names, one master, known parents, no cycle) and returns the
/// nodes breadth-first from the master, siblings in file order.
std::vector<NodeSpec> build_tree(const Reader& r, std::vector<NodeEntry> entries, int file_line) {
  if (entries.empty()) r.fail(file_line, "node", "no [[node]] entry: the tree needs a master");
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto [it, inserted] = by_name.emplace(entries[i].spec.name, i);
    if (!inserted)
      r.fail(entries[i].name_line, index_prefix("node", i) + "name",
             "duplicate node name '" + entries[i].spec.name + "' (first defined at line " +
                 std::to_string(entries[it->second].name_line) + ")");
  }
  std::optional<std::size_t> master;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].spec.parent) continue;
    if (master)
      r.fail(entries[i].spec.line, index_prefix("node", i) + "parent",
             "node '" + entries[i].spec.name + "' has no parent, but '" +
                 entries[*master].spec.name + "' (line " +
                 std::to_string(entries[*master].spec.line) +
                 ") is already the master; exactly one node may have no 'parent'");
    master = i;
  }
  if (!master)
    r.fail(entries[0].spec.line, "node[0].parent",
           "every node has a parent: exactly one node (the master) must have no 'parent'");

  std::vector<std::vector<std::size_t>> children(entries.size());
  std::vector<std::size_t> parent_of(entries.size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& parent = entries[i].spec.parent;
    if (!parent) continue;
    const auto it = by_name.find(*parent);
    if (it == by_name.end())
      r.fail(entries[i].parent_line, index_prefix("node", i) + "parent",
             "unknown parent '" + *parent + "': no [[node]] has that name");
    parent_of[i] = it->second;
    children[it->second].push_back(i);
  }

  std::vector<std::size_t> order{*master};
  for (std::size_t k = 0; k < order.size(); ++k)
    for (std::size_t c : children[order[k]]) order.push_back(c);
  if (order.size() != entries.size()) {
    std::vector<bool> reached(entries.size(), false);
    for (std::size_t i : order) reached[i] = true;
    std::size_t first = 0;
    while (reached[first]) ++first;
    // Unreachable nodes all lead into a cycle of parents; show it.
    std::vector<std::size_t> path;
    std::vector<bool> seen(entries.size(), false);
    std::size_t u = first;
    while (!seen[u]) {
      seen[u] = true;
      path.push_back(u);
      u = parent_of[u];
    }
    std::string cycle;
    bool in_cycle = false;
    for (std::size_t v : path) {
      if (v == u) in_cycle = true;
      if (in_cycle) cycle += entries[v].spec.name + " -> ";
    }
    cycle += entries[u].spec.name;
    r.fail(entries[first].parent_line, index_prefix("node", first) + "parent",
           "node '" + entries[first].spec.name + "' is not reachable from the master '" +
               entries[*master].spec.name + "': its parents form a cycle (" + cycle + ")");
  }

  std::vector<NodeSpec> nodes;
  nodes.reserve(entries.size());
  for (std::size_t i : order) nodes.push_back(std::move(entries[i].spec));
  return nodes;
}

Experiment parse(const std::string& text, const std::string& path, bool nodes_required, const ParseOptions& options) {
  const toml::table root = parse_toml(text, path);
  const Reader r(path);
  r.check_keys(root, "", {"node", "app", "run", "policy", "event", "fault"}, "the top level");

  std::vector<NodeEntry> entries;
  const auto node_tables = r.tables_of(root, "node");
  for (std::size_t i = 0; i < node_tables.size(); ++i)
    entries.push_back(read_node(r, *node_tables[i], i));

  Experiment exp;
  const auto app_tables = r.tables_of(root, "app");
  std::map<std::string, std::size_t> app_by_name;
  std::size_t welcome_bytes = 0;  // the applications' share of the Welcome (runtime/model/WireFit.hpp)
  for (std::size_t i = 0; i < app_tables.size(); ++i) {
    AppSpec app = read_app(r, *app_tables[i], i, path, options);
    welcome_bytes += welcome_bytes_of(app);
    if (welcome_bytes > welcome_app_budget)
      r.fail(app.line, index_prefix("app", i) + (app.kernel == Kernel::command ? "argv" : "name"),
             "the applications up to this one take " + std::to_string(welcome_bytes) +
                 " bytes of the message that tells every node about them; at most " +
                 std::to_string(welcome_app_budget) + " bytes (shorter argv, fewer applications)");
    const auto [it, inserted] = app_by_name.emplace(app.name, i);
    if (!inserted)
      r.fail(line_of(*app_tables[i]->get("name")), index_prefix("app", i) + "name",
             "duplicate application name '" + app.name + "' (first defined at line " +
                 std::to_string(exp.apps[it->second].line) + ")");
    exp.apps.push_back(std::move(app));
  }

  if (const toml::node* run = root.get("run")) {
    const auto* table = run->as_table();
    if (!table) r.wrong_type(*run, "run", "a table ([run])");
    exp.run = read_run(r, *table);
  }

  if (const toml::node* policies = root.get("policy")) {
    const auto* table = policies->as_table();
    if (!table) r.wrong_type(*policies, "policy", "a table ([policy.NAME])");
    exp.run.policy_options = read_policy_options(r, *table);
  }

  if (!entries.empty() || nodes_required) exp.nodes = build_tree(r, std::move(entries), 1);
  if (exp.apps.empty())
    throw FileError(path, 1, "app", "no [[app]] entry: an experiment needs at least one application");
  // bertin2008 §2.2: each application's master, a node of the tree.
  for (std::size_t i = 0; i < exp.apps.size(); ++i)
    if (!exp.apps[i].origin.empty() && !exp.nodes.empty() && !exp.node_index(exp.apps[i].origin))
      r.require(false, *app_tables[i], "origin", index_prefix("app", i),
                "unknown node '" + exp.apps[i].origin + "'; expected the name of a [[node]]");

  const auto event_tables = r.tables_of(root, "event");
  for (std::size_t i = 0; i < event_tables.size(); ++i) exp.events.push_back(read_event(r, *event_tables[i], i));
  check_events(r, event_tables, exp);
  std::stable_sort(exp.events.begin(), exp.events.end(),
                   [](const EventSpec& a, const EventSpec& b) { return a.at < b.at; });
  (void)read_faults(r, root, exp, path);  // checked here; `treefarm emulate` plays them (load_faults)
  return exp;
}

}  // namespace

Experiment parse_experiment(const std::string& text, const std::string& path, const ParseOptions& options) {
  return parse(text, path, true, options);
}

Experiment parse_experiment_nodes_optional(const std::string& text, const std::string& path) {
  return parse(text, path, false, ParseOptions{});
}

std::string read_input_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path, 0, "", std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FileError(path, 0, "", std::string("cannot read: ") + std::strerror(errno));
  return text.str();
}

void require_root_origins(const Experiment& experiment, const std::string& what) {
  for (std::size_t i = 0; i < experiment.apps.size(); ++i) {
    const auto& origin = experiment.apps[i].origin;
    if (origin.empty() || experiment.nodes.empty() || origin == experiment.nodes[0].name) continue;
    throw FileError(experiment.path, experiment.apps[i].line, "app[" + std::to_string(i) + "].origin",
                    what + " runs every application from the master '" + experiment.nodes[0].name +
                        "'; applications from several masters (origin = '" + origin +
                        "') work in `treefarm predict`, the price study, `treefarm simulate` (multi-port) and `treefarm run` (`treefarm-master --origin NODE`) only");
  }
}

bool has_node_tables(const std::string& text) {
  static const std::regex header(R"(^\s*\[\[\s*node\s*\]\])");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, header)) return true;
  return false;
}

Experiment load_experiment(const std::string& path, const ParseOptions& options) {
  Experiment exp = parse_experiment(read_input_file(path), path, options);
  exp.path = path;
  return exp;
}

Experiment load_experiment_nodes_optional(const std::string& path) {
  Experiment exp = parse_experiment_nodes_optional(read_input_file(path), path);
  exp.path = path;
  return exp;
}

}  // namespace treefarm::model
