#include "runtime/plan/MachineGenerator.hpp"

#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

namespace treefarm::plan {

namespace {
void check_range(double lo, double hi, const char* what) {
  if (!(lo > 0) || !(hi >= lo) || !std::isfinite(hi))
    throw std::invalid_argument(std::string("gen-machines: ") + what + ": need 0 < min <= max");
}
}  // namespace

MachineSet generate_machines(const GenMachinesOptions& o) {
  if (o.machines < 1) throw std::invalid_argument("gen-machines: --machines must be >= 1");
  if (o.lans < 1 || o.lans > o.machines) throw std::invalid_argument("gen-machines: --lans must be in [1, machines]");
  if (o.cores_min < 1 || o.cores_max < o.cores_min) throw std::invalid_argument("gen-machines: cores: need 1 <= min <= max");
  check_range(o.speed_min, o.speed_max, "speed");
  check_range(o.lan_bandwidth_min, o.lan_bandwidth_max, "LAN bandwidth");
  check_range(o.inter_bandwidth_min, o.inter_bandwidth_max, "inter-LAN bandwidth");
  if (!(o.lan_latency >= 0) || !(o.inter_latency_min >= 0) || o.inter_latency_max < o.inter_latency_min)
    throw std::invalid_argument("gen-machines: latencies: need 0 <= min <= max");

  std::mt19937_64 rng(o.seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto log_uniform = [&](double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); };

  MachineSet set;
  for (std::uint32_t a = 0; a < o.lans; ++a)
    set.lans.push_back({"lan" + std::to_string(a), log_uniform(o.lan_bandwidth_min, o.lan_bandwidth_max), o.lan_latency});
  set.lan_bandwidth.assign(o.lans, std::vector<double>(o.lans, 0.0));
  set.lan_latency.assign(o.lans, std::vector<double>(o.lans, 0.0));
  for (std::uint32_t a = 0; a < o.lans; ++a)
    for (std::uint32_t b = a + 1; b < o.lans; ++b) {
      set.lan_bandwidth[a][b] = set.lan_bandwidth[b][a] = log_uniform(o.inter_bandwidth_min, o.inter_bandwidth_max);
      set.lan_latency[a][b] = set.lan_latency[b][a] = uniform(o.inter_latency_min, o.inter_latency_max);
    }
  std::uniform_int_distribution<std::uint32_t> lan_of(0, o.lans - 1), cores(o.cores_min, o.cores_max);
  for (std::uint32_t i = 0; i < o.machines; ++i) {
    Machine m;
    m.name = "m" + std::to_string(i);
    m.lan = i < o.lans ? i : lan_of(rng);
    m.cores = cores(rng);
    m.speed = uniform(o.speed_min, o.speed_max);
    m.memory = std::uint64_t{4} << 30;
    set.machines.push_back(m);
  }
  validate(set);
  return set;
}

std::string gen_machines_command(const GenMachinesOptions& o) {
  std::ostringstream out;
  out << "treefarm gen-machines --machines " << o.machines << " --lans " << o.lans << " --seed " << o.seed;
  const GenMachinesOptions d;
  if (o.cores_min != d.cores_min || o.cores_max != d.cores_max) out << " --cores " << o.cores_min << "," << o.cores_max;
  if (o.speed_min != d.speed_min || o.speed_max != d.speed_max) out << " --speed " << o.speed_min << "," << o.speed_max;
  if (o.lan_bandwidth_min != d.lan_bandwidth_min || o.lan_bandwidth_max != d.lan_bandwidth_max)
    out << " --lan-bandwidth " << o.lan_bandwidth_min << "," << o.lan_bandwidth_max;
  if (o.inter_bandwidth_min != d.inter_bandwidth_min || o.inter_bandwidth_max != d.inter_bandwidth_max)
    out << " --inter-bandwidth " << o.inter_bandwidth_min << "," << o.inter_bandwidth_max;
  return out.str();
}

}  // namespace treefarm::plan
