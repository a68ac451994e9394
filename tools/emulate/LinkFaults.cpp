#include "tools/emulate/LinkFaults.hpp"

#include <cmath>
#include <sstream>

#include "tools/emulate/Program.hpp"

namespace treefarm::emulate {

namespace {
std::vector<std::string> in_netns(const std::string& netns, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"ip", "netns", "exec", netns});
  return argv;
}

void checked(const std::vector<std::string>& argv) {
  const auto r = run_program(argv);
  if (r.exit_code != 0) throw PlatformError(ProgramError(argv, r).what());
}

void require_link(const Platform& p, std::size_t node) {
  if (node >= p.size() || !p.parent(node))
    throw PlatformError("node " + std::to_string(node) + " has no link to a parent to fault");
}
}  // namespace

std::string fault_table(std::size_t id) { return "treefarm_fault_" + std::to_string(id); }

void apply_fault(const Platform& p, std::size_t node, const model::FaultSpec& fault, std::size_t id) {
  require_link(p, node);
  const std::string& ns = p.netns(node);
  const std::string& dev = p.device(node);
  if (fault.kind == model::FaultKind::down) {
    checked({"ip", "-n", ns, "link", "set", dev, "down"});
    return;
  }
  const std::string table = fault_table(id);
  checked(in_netns(ns, {"nft", "add", "table", "inet", table}));
  checked(in_netns(ns, {"nft", "add", "chain", "inet", table, "fin",
                        "{ type filter hook input priority -10 ; policy accept ; }"}));
  checked(in_netns(ns, {"nft", "add", "chain", "inet", table, "fout",
                        "{ type filter hook output priority -10 ; policy accept ; }"}));
  std::vector<std::string> drop;
  if (fault.kind == model::FaultKind::loss) {
    const auto threshold = static_cast<long>(std::lround(fault.loss * 1e6));
    drop = {"numgen", "random", "mod", "1000000", "lt", std::to_string(threshold), "counter", "drop"};
  } else {
    drop = {"counter", "drop"};
  }
  for (const auto& [chain, match] : {std::pair{"fin", "iifname"}, std::pair{"fout", "oifname"}}) {
    std::vector<std::string> rule{"nft", "add", "rule", "inet", table, chain, match, dev};
    rule.insert(rule.end(), drop.begin(), drop.end());
    checked(in_netns(ns, rule));
  }
}

void revert_fault(const Platform& p, std::size_t node, const model::FaultSpec& fault, std::size_t id) {
  require_link(p, node);
  const std::string& ns = p.netns(node);
  if (fault.kind == model::FaultKind::down) {
    checked({"ip", "-n", ns, "link", "set", p.device(node), "up"});
    return;
  }
  checked(in_netns(ns, {"nft", "delete", "table", "inet", fault_table(id)}));
}

std::vector<std::string> fault_tables_of(const Platform& p, std::size_t node) {
  const auto r = run_program(in_netns(p.netns(node), {"nft", "list", "tables"}));
  std::vector<std::string> out;
  std::istringstream in(r.out);
  std::string word;
  while (in >> word)
    if (word.rfind("treefarm_fault_", 0) == 0) out.push_back(word);
  return out;
}

std::uint64_t fault_drops(const Platform& p, std::size_t node, std::size_t id) {
  const auto r = run_program(in_netns(p.netns(node), {"nft", "list", "table", "inet", fault_table(id)}));
  std::uint64_t total = 0;
  std::istringstream in(r.out);
  std::string word;
  while (in >> word)
    if (word == "packets") {
      std::uint64_t n = 0;
      if (in >> n) total += n;
    }
  return total;
}

bool link_is_up(const Platform& p, std::size_t node) {
  require_link(p, node);
  const auto r = run_program({"ip", "-n", p.netns(node), "-o", "link", "show", p.device(node)});
  const auto open = r.out.find('<');
  const auto close = r.out.find('>', open);
  if (open == std::string::npos || close == std::string::npos) return false;
  const std::string flags = "," + r.out.substr(open + 1, close - open - 1) + ",";
  return flags.find(",UP,") != std::string::npos;
}

}  // namespace treefarm::emulate
