// treefarm hwdetect (docs/commands.md).
#include <iostream>
#include <memory>

#include "tools/cli/Command.hpp"
#include "runtime/exec/Topology.hpp"

namespace treefarm::cli {

void add_hwdetect_command(CLI::App& app, Commands& out) {
  auto json = std::make_shared<bool>(false);
  auto* hw = app.add_subcommand("hwdetect", "Print the cores, caches and memory a worker here would use");
  hw->add_flag("--json", *json, "JSON output");
  out.push_back({hw, [json] {
                   const auto topo = exec::discover_topology();
                   if (*json) std::cout << exec::to_json(topo).dump(1) << "\n";
                   else std::cout << exec::to_text(topo);
                   return 0;
                 }});
}

}  // namespace treefarm::cli
