#pragma once
/// @file StateFile.hpp
/// The record of what one emulated platform created (namespaces, control groups), kept
/// on disk while it exists so that `treefarm emulate --cleanup` can remove it after a
/// crash. One file per platform: DIR/PREFIX.state, one item a line:
///
///     owner PID STARTTIME      the process that owns the platform (0 = nobody)
///     netns tf1a2b-n0          a network namespace (its veths and qdiscs go with it)
///     cgroup /sys/fs/cgroup/cpu/tf1a2b-n0
///
/// An item is written before it is created, so a crash in between lists it anyway.

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace treefarm::emulate {

class StateFile {
 public:
  /// Parsed contents of a state file.
  struct Contents {
    std::string prefix;
    pid_t owner = 0;
    unsigned long long owner_start = 0;  ///< Start time of the owner (clock ticks since boot).
    std::vector<std::pair<std::string, std::string>> items;  ///< (kind, value) in creation order.
  };

  /// /run/treefarm/emulate (or /tmp/treefarm-emulate if /run is not writable).
  static std::string default_dir();

  /// Creates DIR/PREFIX.state owned by this process. Throws std::runtime_error if it
  /// already exists or cannot be written.
  StateFile(std::string dir, std::string prefix);
  StateFile(const StateFile&) = delete;
  StateFile& operator=(const StateFile&) = delete;

  /// Appends an item and flushes it to the file.
  void record(const std::string& kind, const std::string& value);
  /// Marks the file as owned by nobody (what a crashed owner leaves behind).
  void orphan();
  /// Deletes the file (everything it listed is gone).
  void remove();
  const std::string& path() const { return path_; }

  /// Reads a state file; unknown lines are ignored.
  static Contents read(const std::string& path);
  /// The state files in `dir`.
  static std::vector<std::string> list(const std::string& dir);
  /// True if the owner process still runs (same pid and start time).
  static bool owner_alive(const Contents& c);
  /// Start time of a process (field 22 of /proc/PID/stat), 0 if it does not exist.
  static unsigned long long start_time(pid_t pid);

 private:
  std::string path_;
  std::string prefix_;
};

}  // namespace treefarm::emulate
