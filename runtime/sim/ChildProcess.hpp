#pragma once
/// @file ChildProcess.hpp
/// What a forked simulation child needs (each simulation runs in its own process, since
/// SimGrid's engine is a process-wide singleton): dying with its parent, and writing its
/// report into a pipe. fork_reporting_child() starts such a child (used by simulate()),
/// through runtime/process (the project's one way to start a child).

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace treefarm::sim {

/// Writes all of `text` to `fd`, retrying on EINTR; stops silently if the reader is gone.
void write_all(int fd, const std::string& text);

/// A forked child and the read end of the pipe it writes its report into.
struct ReportingChild {
  pid_t pid = -1;
  int fd = -1;  ///< The parent's read end; the caller closes it.
};

/// Flushes stdio, forks (process::spawn_function), and in the child: dies with the parent (SIGKILL), closes `close_in_child`
/// (the parent's other descriptors it must not hold, e.g. other children's pipes), writes
/// what `work` returns into the pipe — or the JSON object {"exception": what} if it
/// throws — and leaves with _exit(0), without the parent's atexit code. Throws
/// std::runtime_error (prefixed by `what`) if pipe or fork fails.
ReportingChild fork_reporting_child(const std::function<std::string()>& work, const std::string& what,
                                    const std::vector<int>& close_in_child = {});

}  // namespace treefarm::sim
