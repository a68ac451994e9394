#pragma once
/// @file RandomTree.hpp
/// Random platform trees for the LP's tests and `treefarm bench lp`.

#include <cstddef>
#include <cstdint>

#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::lp {

/// A random platform tree: node i > 0 gets a parent drawn uniformly among nodes
/// 0..i-1; cores 1..16 (one node in ten only forwards, cores 0), speed 1e9..1e10 flop/s
/// per core, link bandwidth 1e7..1.25e9 bytes/s (log-uniform); applications with
/// 1e4..1e7 bytes and 1e7..1e11 flop per task (log-uniform), weights 1..4, one in four
/// with 2 cores per task; the task duration on a node is flops/(cores_per_task·speed)
/// times a per-(node, app) factor in [0.5, 1.5] (kernels do not all run at one rate).
/// Same seed, same platform.
PlatformModel random_tree(std::size_t nodes, std::size_t apps, std::uint64_t seed,
                          model::CommModel comm_model = model::CommModel::one_port);

}  // namespace treefarm::lp
