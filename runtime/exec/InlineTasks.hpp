#pragma once
/// @file InlineTasks.hpp
/// Which tasks run on the node's own loop thread instead of a core thread of the executor.
///
/// Handing a task to a pinned core thread and hearing that it ended costs two thread
/// wake-ups (~20-50 µs on a loaded 2-core VM, most of it in the kernel's scheduler). A task
/// whose work is far below that — a no-op, a matmul of order ≤ 64 (≤ 2^19 flop, a few µs of
/// dgemm), a matadd of order ≤ 64 — is cheaper to run at once where it arrived, so a node's
/// buffer of tiny tasks drains in one turn of its loop without any wake-up. The driver still
/// starts at most as many tasks as the node has cores, so running one inline never computes
/// more tasks at once than there are cores.

#include <cstddef>
#include <cstdint>

#include "runtime/model/Application.hpp"

namespace treefarm::exec {

/// bytes: the largest input of a task run inline (64 KiB: a matmul or matadd of order 64).
inline constexpr std::size_t inline_max_input_bytes = std::size_t{64} << 10;
/// flop: the most work of a task run inline (2^19: a matmul of order 64 is 2·64^3).
inline constexpr double inline_max_flops = 524288.0;

/// Whether a task of `app` with an input of `input_bytes` bytes runs inline: a one-core
/// task of a built-in kernel (noop, matmul, matadd) with at most inline_max_input_bytes of
/// input and inline_max_flops of work. Commands, abstract tasks and multi-core tasks never do.
bool runs_inline(const model::AppSpec& app, std::size_t input_bytes);

}  // namespace treefarm::exec
