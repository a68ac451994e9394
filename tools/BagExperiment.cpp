#include "tools/BagExperiment.hpp"

#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

namespace treefarm::tools {

bool has_bag_options(const BagSpec& spec) {
  return !spec.each_line.empty() || !spec.inputs.empty() || !spec.array.empty() || !spec.argv.empty();
}

std::string bag_experiment_text(const BagSpec& spec, unsigned local_cores) {
  const int given = (spec.each_line.empty() ? 0 : 1) + (spec.inputs.empty() ? 0 : 1) + (spec.array.empty() ? 0 : 1);
  if (given != 1)
    throw std::invalid_argument("give one of --each-line FILE, --inputs GLOB or --array RANGE (a task per line, file or number)");
  if (spec.argv.empty() || spec.argv[0].empty())
    throw std::invalid_argument("no program: give it after '--', e.g. -- gzip -9 -c {input}");
  if (spec.csv && spec.each_line.empty()) throw std::invalid_argument("--csv goes with --each-line FILE");
  toml::table app;
  app.insert("name", spec.name);
  app.insert("kind", "command");
  toml::array argv;
  for (const auto& a : spec.argv) argv.push_back(a);
  app.insert("argv", argv);
  if (!spec.each_line.empty()) {
    app.insert("lines", spec.each_line);
    if (spec.csv) app.insert("csv", true);
  }
  if (!spec.inputs.empty()) app.insert("inputs", spec.inputs);
  if (!spec.array.empty()) app.insert("array", spec.array);
  if (spec.cores != 1) app.insert("cores_per_task", static_cast<std::int64_t>(spec.cores));
  if (!spec.output_file.empty()) app.insert("output_file", spec.output_file);
  if (spec.max_retries > 0) app.insert("max_retries", static_cast<std::int64_t>(spec.max_retries));
  if (spec.timeout > 0) app.insert("timeout", spec.timeout);
  toml::table doc;
  if (local_cores > 0) {
    toml::table node;
    node.insert("name", "local");
    node.insert("cores", static_cast<std::int64_t>(local_cores));
    doc.insert("node", toml::array{node});
  }
  doc.insert("app", toml::array{app});
  std::ostringstream out;
  out << "# Built by treefarm from its command line (docs/command-tasks.md, \"Without a file\").\n"
      << toml::toml_formatter(doc) << "\n";
  return out.str();
}

}  // namespace treefarm::tools
