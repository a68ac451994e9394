#pragma once
/// @file PayloadMemory.hpp
/// Keeps the memory of freed task payloads in the process for the next task.
///
/// glibc's malloc serves a block above its mmap threshold (128 KiB at start, raised
/// adaptively) with a fresh mmap and gives it back with munmap when it is freed, and
/// trims the top of its heaps above the trim threshold. A node that receives, computes
/// and frees a multi-megabyte input per task then takes a page fault, and the kernel
/// zeroes a page, for every 4 KiB of every input: on the quickstart's one-hop tree
/// 0.8 million faults in 6 s, ~250 per task, a quarter of its system time (see
/// docs/benchmarks.md "Payload memory kept"). keep_payload_memory() raises both
/// thresholds (mmap: 32 MiB, glibc's largest; trim: 256 MiB) so that freed payloads stay
/// in the heap and the next task reuses them. A process keeps up to its peak payload
/// memory (B buffered inputs and what is in flight) instead of returning it between
/// tasks. Called first thing by treefarm-master, treefarm-worker and treefarm.
/// Built with -DTREEFARM_TCMALLOC=ON (opt-in, CMakeLists.txt) the three link tcmalloc,
/// whose mallopt is a no-op; it keeps freed spans in its page heap by itself.

namespace treefarm::tasks {

/// Sets the allocator's thresholds (mallopt); returns false if glibc refused one.
bool keep_payload_memory();

}  // namespace treefarm::tasks
