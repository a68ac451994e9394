#pragma once
/// @file ChildProcess.hpp
/// What a forked simulation child needs (each simulation runs in its own process, since
/// SimGrid's engine is a process-wide singleton): dying with its parent, and writing its
/// report into a pipe.

#include <string>

namespace treefarm::sim {

/// In a freshly forked child: receive SIGKILL when the parent dies, so that no
/// simulation outlives the command that started it.
void die_with_parent();

/// Writes all of `text` to `fd`, retrying on EINTR; stops silently if the reader is gone.
void write_all(int fd, const std::string& text);

}  // namespace treefarm::sim
