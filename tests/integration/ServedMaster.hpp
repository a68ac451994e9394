#pragma once
// How the integration tests start `treefarm-master --serve` (docs/serve.md): one place for
// its command line, the options the tests vary named.

#include <string>
#include <vector>

#include "tests/integration/ProcessTestUtil.hpp"

namespace treefarm::testing {

/// Heartbeats fast enough for a test to see a lost peer within seconds.
inline const std::vector<std::string> fast_heartbeats{"--heartbeat-timeout", "2", "--heartbeat-interval", "0.3"};

/// What a test's served master varies.
struct Served {
  /// The submit/status channel: false, tcp://127.0.0.1:* (the default); true, an ipc://
  /// socket DIR/submit.sock of this user (`treefarm cancel` and command applications from
  /// another process: docs/security.md).
  bool ipc = false;
  bool allow_commands = false;    ///< --allow-commands
  std::string live_wait = {};     ///< --live-wait, seconds (empty: the master's default)
  bool fast_heartbeats = false;   ///< the heartbeats above
  std::vector<std::string> extra = {};  ///< more options, last
};

/// `treefarm-master --serve` named m: its tree's endpoint in DIR/m.ep, its submit channel's
/// in DIR/submit.ep, its state in DIR/state.
inline std::vector<std::string> served_master_args(const fs::path& dir, const Served& o = {}) {
  std::vector<std::string> a{master_bin, "--serve", "--name", "m", "--ready-file", (dir / "m.ep").string(),
                             "--bind", o.ipc ? "ipc://" + (dir / "submit.sock").string() : "tcp://127.0.0.1:*",
                             "--bind-file", (dir / "submit.ep").string(), "--state-dir", (dir / "state").string()};
  if (o.allow_commands) a.push_back("--allow-commands");
  if (!o.live_wait.empty()) a.insert(a.end(), {"--live-wait", o.live_wait});
  if (o.fast_heartbeats) a.insert(a.end(), fast_heartbeats.begin(), fast_heartbeats.end());
  a.insert(a.end(), o.extra.begin(), o.extra.end());
  return a;
}

inline std::vector<std::string> served_master_args(const TempDir& dir, const Served& o = {}) {
  return served_master_args(dir.path(), o);
}

}  // namespace treefarm::testing
