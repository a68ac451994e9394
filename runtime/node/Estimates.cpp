#include "runtime/node/Estimates.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace treefarm::node {

namespace {
std::uint32_t count32(std::uint64_t n) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, std::numeric_limits<std::uint32_t>::max()));
}
net::msg::Estimate wire(const std::string& node, net::msg::Estimate::What what, std::size_t app, const RunningEstimate& e) {
  return net::msg::Estimate{node, what, static_cast<std::uint16_t>(app), e.mean(), e.spread(), count32(e.samples()),
                            std::min(e.shifts(), count32(e.samples()))};
}
}  // namespace

void Estimates::configure(std::string name, std::size_t apps, const std::vector<double>& prior_seconds,
                          std::map<std::string, double> prior_bandwidth, ShiftTestParams test) {
  name_ = std::move(name);
  test_ = test;
  tasks_.assign(apps, RunningEstimate(0.1, test));
  compute_cpu_.assign(apps, {0.0, 0});
  for (std::size_t k = 0; k < apps && k < prior_seconds.size(); ++k) tasks_[k].set_prior(prior_seconds[k]);
  links_.clear();
  for (const auto& [child, bw] : prior_bandwidth) {
    if (!(bw > 0) || !std::isfinite(bw)) continue;
    link_of(child).bandwidth.set_prior(bw);
  }
  below_.clear();
}

bool Estimates::task_ran(std::size_t k, double seconds) {
  if (k >= tasks_.size()) return false;
  return tasks_[k].add(seconds);
}

void Estimates::task_cpu(std::size_t k, double cpu_seconds) {
  if (k >= compute_cpu_.size() || !(cpu_seconds >= 0) || !std::isfinite(cpu_seconds)) return;
  compute_cpu_[k].first += cpu_seconds;
  compute_cpu_[k].second += 1;
}

void Estimates::transfer(const std::string& child, double bytes, double seconds) {
  auto& l = link_of(child);
  // A transfer whose time is mostly latency is no measure of the bandwidth.
  if (const auto bandwidth = l.fit.add(bytes, seconds)) l.bandwidth.add(*bandwidth);
}

Estimates::Link& Estimates::link_of(const std::string& child) {
  return links_.try_emplace(child, Link{core::LinkFit{}, RunningEstimate(0.1, test_)}).first->second;
}

void Estimates::from_child(const std::string& child, std::vector<net::msg::Estimate> estimates) {
  below_[child] = std::move(estimates);
}

void Estimates::forget(const std::string& child) {
  below_.erase(child);
  links_.erase(child);
}

std::vector<net::msg::Estimate> Estimates::report() const {
  std::vector<net::msg::Estimate> out;
  // Only inside a run (this node has its applications): a worker waiting for a served
  // tree's next run reports nothing its parent would read as a run's figure.
  if (!tasks_.empty() && cpu_seconds_ > 0 && std::isfinite(cpu_seconds_))
    out.push_back(net::msg::Estimate{name_, net::msg::Estimate::What::process_cpu_seconds, 0, cpu_seconds_, 0, 1, 0});
  for (std::size_t k = 0; k < compute_cpu_.size() && out.size() < net::max_estimates; ++k)
    if (const auto& [cpu, n] = compute_cpu_[k]; cpu > 0 && std::isfinite(cpu))
      out.push_back(net::msg::Estimate{name_, net::msg::Estimate::What::compute_cpu_seconds,
                                       static_cast<std::uint16_t>(k), cpu, 0, count32(n), 0});
  for (std::size_t k = 0; k < tasks_.size() && out.size() < net::max_estimates; ++k)
    if (tasks_[k].samples() > 0) out.push_back(wire(name_, net::msg::Estimate::What::task_seconds, k, tasks_[k]));
  for (const auto& [child, l] : links_)
    if (l.bandwidth.samples() > 0 && out.size() < net::max_estimates)
      out.push_back(wire(child, net::msg::Estimate::What::link_bandwidth, 0, l.bandwidth));
  for (const auto& [child, list] : below_)
    for (const auto& e : list) {
      if (out.size() >= net::max_estimates) return out;
      out.push_back(e);
    }
  return out;
}

}  // namespace treefarm::node
