#include "runtime/model/FaultTable.hpp"

#include <algorithm>
#include <cmath>

namespace treefarm::model {

namespace {
FaultSpec read_fault(const TomlReader& r, const toml::table& t, std::size_t index, const std::string& path) {
  const std::string prefix = "fault[" + std::to_string(index) + "].";
  r.check_keys(t, prefix, {"at", "duration", "node", "loss", "down", "partition"}, "[[fault]]");
  FaultSpec f;
  f.line = line_of(t);
  f.where = path + ":" + std::to_string(f.line) + ": [[fault]]";
  r.require_present(t, "at", prefix, "seconds from the start of the run");
  f.at = *r.quantity_of(t, "at", prefix, parse_time, "seconds or a time like '30s'");
  r.require(std::isfinite(f.at), t, "at", prefix, "must be >= 0 seconds");
  r.require_present(t, "duration", prefix, "seconds the fault lasts");
  f.duration = *r.quantity_of(t, "duration", prefix, parse_time, "seconds or a time like '20s'");
  r.require(std::isfinite(f.duration) && f.duration > 0, t, "duration", prefix, "must be > 0 seconds");
  r.require_present(t, "node", prefix, "the node whose link to its parent fails");
  f.node = *r.string_of(t, "node", prefix);
  r.require_one_of(t, prefix, {"loss", "down", "partition"},
                   "missing the fault: give one of loss = P, down = true, partition = true",
                   "give only one of loss, down, partition per [[fault]]");
  if (t.contains("loss")) {
    f.kind = FaultKind::loss;
    f.loss = *r.number_of(t, "loss", prefix);
    r.require(f.loss > 0 && f.loss <= 1, t, "loss", prefix, "must be a probability in (0, 1], e.g. 0.05");
  } else {
    const std::string key = t.contains("down") ? "down" : "partition";
    f.kind = key == "down" ? FaultKind::down : FaultKind::partition;
    const auto* flag = t.get(key)->as_boolean();
    if (!flag) r.wrong_type(*t.get(key), prefix + key, "true");
    r.require(flag->get(), t, key, prefix, "must be true (leave the [[fault]] out for no fault)");
  }
  return f;
}
}  // namespace

std::vector<FaultSpec> read_faults(const TomlReader& r, const toml::table& root, const Experiment& experiment,
                                   const std::string& path) {
  const auto tables = r.tables_of(root, "fault");
  std::vector<FaultSpec> faults;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    FaultSpec f = read_fault(r, *tables[i], i, path);
    if (const auto problem = check_fault(f, faults, experiment))
      r.require(false, *tables[i], problem->key, "fault[" + std::to_string(i) + "].", problem->message);
    faults.push_back(std::move(f));
  }
  std::stable_sort(faults.begin(), faults.end(), [](const FaultSpec& a, const FaultSpec& b) { return a.at < b.at; });
  return faults;
}

std::vector<FaultSpec> load_faults(const std::string& path, const Experiment& experiment) {
  const toml::table root = parse_toml(read_input_file(path), path);
  return read_faults(TomlReader(path), root, experiment, path);
}

}  // namespace treefarm::model
