#pragma once
/// @file SshLaunch.hpp
/// `treefarm launch EXPERIMENT --hosts HOSTS`: starts an experiment's tree on real
/// machines over ssh (docs/launch.md). Every node runs on its host under a small shell
/// wrapper that ends the node when its ssh session ends, so the launcher tears the whole
/// tree down by ending its ssh clients — on exit, on Ctrl-C, on timeout, and (by the
/// kernel's parent-death signal) if the launcher itself dies.

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "tools/deploy/HostsFile.hpp"

namespace treefarm::deploy {

struct SshLaunchOptions {
  std::string out_dir;                   ///< Local: results.json, launch.json, logs/NODE.log (required).
  std::string policy;                    ///< Overrides [run] policy.
  std::uint32_t buffer = 0;              ///< Overrides [run] buffer (0 = keep).
  double timeout = 0;                    ///< seconds for the whole run (0 = none).
  double connect_timeout = 10;           ///< seconds for each ssh connection (ssh ConnectTimeout).
  bool insecure = false;                 ///< Plain TCP between the nodes (no CURVE keys).
  bool quiet = false;                    ///< No progress lines from the master.
  bool keep_remote = false;              ///< Leave the run directories on the hosts.
  std::string log_level = "info";
  std::vector<std::string> master_args;  ///< Extra arguments for treefarm-master.
  std::vector<std::string> worker_args;  ///< Extra arguments for every treefarm-worker.
  std::string ssh = "ssh";               ///< The ssh client program.
  /// How to run one shell command line on a host, stdin forwarded (default: ssh_argv).
  /// `treefarm launch --slurm` sets srun_argv (tools/deploy/SlurmHosts.hpp).
  std::function<std::vector<std::string>(const Host&, const std::string& command)> remote;
  /// Name of the transport in messages ("ssh" or "srun").
  std::string transport = "ssh";
};

/// The ssh command line that runs `remote_command` (one shell command line) on `host`:
/// BatchMode (never a password prompt), ConnectTimeout, ServerAlive probes (a dead host
/// is noticed within ~6 s), the host's user, port and ssh_options.
std::vector<std::string> ssh_argv(const Host& host, const SshLaunchOptions& options, const std::string& remote_command);

/// `word` quoted for a POSIX shell ('...' with embedded quotes escaped).
std::string shell_quote(const std::string& word);

/// Runs the experiment; returns the master's exit code, 1 if the master's host was lost,
/// 2 if a host could not be prepared (nothing was started then), 124 on timeout, 130 if
/// `interrupted` became true. Throws model::FileError for a bad placement.
int launch_over_ssh(const model::Experiment& ex, const HostsFile& hosts, const SshLaunchOptions& options,
                    const std::atomic<bool>& interrupted);

}  // namespace treefarm::deploy
