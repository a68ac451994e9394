#include "runtime/lp/RandomTree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace treefarm::lp {
namespace {

/// Log-uniform in [lo, hi].
double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> d(std::log(lo), std::log(hi));
  return std::exp(d(rng));
}

}  // namespace

PlatformModel random_tree(std::size_t nodes, std::size_t apps, std::uint64_t seed,
                          model::CommModel comm_model) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  PlatformModel m;
  m.comm_model = comm_model;
  std::vector<double> flops(apps);
  for (std::size_t k = 0; k < apps; ++k) {
    PlatformModel::App app;
    app.name = "app" + std::to_string(k);
    app.bytes = std::round(log_uniform(rng, 1e4, 1e7));
    app.weight = 1.0 + std::floor(4.0 * unit(rng));
    app.cores_per_task = unit(rng) < 0.25 ? 2 : 1;
    flops[k] = log_uniform(rng, 1e7, 1e11);
    m.apps.push_back(app);
  }
  for (std::size_t u = 0; u < nodes; ++u) {
    PlatformModel::Node node;
    node.name = "n" + std::to_string(u);
    node.parent = u == 0 ? -1 : static_cast<int>(std::uniform_int_distribution<std::size_t>(0, u - 1)(rng));
    node.cores = u > 0 && unit(rng) < 0.1 ? 0 : static_cast<std::uint32_t>(1 + std::floor(16.0 * unit(rng)));
    node.link_bandwidth = u == 0 ? std::numeric_limits<double>::infinity() : log_uniform(rng, 1e7, 1.25e9);
    node.max_out_bandwidth = u == 0 ? std::numeric_limits<double>::infinity() : log_uniform(rng, 1e8, 2.5e9);
    const double speed = log_uniform(rng, 1e9, 1e10);
    node.task_seconds.resize(apps);
    for (std::size_t k = 0; k < apps; ++k) {
      node.task_seconds[k] = flops[k] / (m.apps[k].cores_per_task * speed) * (0.5 + unit(rng));
    }
    m.nodes.push_back(std::move(node));
  }
  // Make sure every application is runnable somewhere: the root has at least 2 cores.
  if (nodes > 0) m.nodes[0].cores = std::max<std::uint32_t>(m.nodes[0].cores, 2);
  return m;
}

}  // namespace treefarm::lp
