#include "runtime/model/Fault.hpp"

#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "runtime/model/Experiment.hpp"
#include "runtime/model/Units.hpp"

namespace treefarm::model {

const char* to_string(FaultKind kind) {
  static constexpr std::array<const char*, 3> names{"loss", "down", "partition"};  // by FaultKind
  return names.at(static_cast<std::size_t>(kind));
}

namespace {
double seconds_of(const std::string& option, const std::string& part, const char* what) {
  try {
    std::size_t used = 0;
    const double plain = part.empty() ? 0 : std::stod(part, &used);
    if (!part.empty() && used == part.size() && std::isfinite(plain)) return plain;
  } catch (const std::exception&) {
  }
  try {
    const double v = parse_time(part);
    if (std::isfinite(v)) return v;
  } catch (const std::invalid_argument&) {
  }
  throw std::invalid_argument("--fault '" + option + "': " + what + " '" + part +
                              "' is not a time (seconds, or like '20s')");
}
}  // namespace

FaultSpec parse_fault_option(const std::string& text) {
  std::array<std::string, 4> parts;
  std::size_t start = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const auto colon = k + 1 < parts.size() ? text.find(':', start) : std::string::npos;
    if (k + 1 < parts.size() && colon == std::string::npos)
      throw std::invalid_argument("--fault '" + text +
                                  "': expected NODE:AT:DURATION:KIND with KIND loss=P, down or partition "
                                  "(e.g. w1:5:10:loss=0.05)");
    parts[k] = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    start = colon + 1;
  }
  FaultSpec f;
  f.where = "--fault '" + text + "'";
  f.node = parts[0];
  if (f.node.empty()) throw std::invalid_argument(f.where + ": the node's name is empty");
  f.at = seconds_of(text, parts[1], "AT");
  if (f.at < 0) throw std::invalid_argument(f.where + ": AT must be >= 0 seconds");
  f.duration = seconds_of(text, parts[2], "DURATION");
  if (!(f.duration > 0)) throw std::invalid_argument(f.where + ": DURATION must be > 0 seconds");
  const std::string& kind = parts[3];
  if (kind == "down") {
    f.kind = FaultKind::down;
  } else if (kind == "partition") {
    f.kind = FaultKind::partition;
  } else if (kind.rfind("loss=", 0) == 0) {
    f.kind = FaultKind::loss;
    std::size_t used = 0;
    try {
      f.loss = std::stod(kind.substr(5), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != kind.size() - 5 || !(f.loss > 0 && f.loss <= 1))
      throw std::invalid_argument(f.where + ": loss must be a probability in (0, 1], e.g. loss=0.05");
  } else {
    throw std::invalid_argument(f.where + ": unknown fault '" + kind + "'; expected loss=P, down or partition");
  }
  return f;
}

std::optional<FaultProblem> check_fault(const FaultSpec& fault, const std::vector<FaultSpec>& earlier,
                                        const Experiment& experiment) {
  const auto node = experiment.node_index(fault.node);
  if (!node) return FaultProblem{"node", "no [[node]] is called '" + fault.node + "'"};
  if (!experiment.parent_index(*node))
    return FaultProblem{"node", "'" + fault.node + "' is the master: it has no link to a parent to fault"};
  for (const auto& other : earlier) {
    if (other.node != fault.node) continue;
    if (fault.at < other.at + other.duration && other.at < fault.at + fault.duration) {
      std::ostringstream why;
      why << "overlaps the fault on the same link from " << other.at << " s for " << other.duration << " s ("
          << other.where << "): one fault per link at a time";
      return FaultProblem{"at", why.str()};
    }
  }
  return std::nullopt;
}

}  // namespace treefarm::model
