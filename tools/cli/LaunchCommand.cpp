// treefarm launch (docs/launch.md, docs/commands.md).
#include <iostream>
#include <memory>

#include "runtime/model/Experiment.hpp"
#include "runtime/cli/CliSupport.hpp"
#include "tools/cli/Command.hpp"
#include "tools/deploy/HostsFile.hpp"
#include "tools/deploy/SlurmHosts.hpp"
#include "tools/deploy/SshLaunch.hpp"
#include "tools/Process.hpp"

namespace treefarm::cli {

namespace {
struct LaunchArgs {
  std::string experiment, hosts;
  bool slurm = false;
  std::string bin_dir, work_dir = "/tmp";
  deploy::SshLaunchOptions o;
};

int run_launch(const LaunchArgs& a) {
  if (a.slurm == !a.hosts.empty())
    throw cli_support::UsageError("launch: give either --hosts HOSTS.toml or --slurm (inside an allocation)");
  const auto ex = model::load_experiment(a.experiment);
  if (!a.slurm) return deploy::launch_over_ssh(ex, deploy::load_hosts(a.hosts), a.o, interrupted());
  auto o = a.o;
  o.remote = deploy::srun_argv;
  o.transport = "srun";
  const auto hosts = deploy::hosts_from_slurm(a.bin_dir.empty() ? tools::self_dir() : a.bin_dir, a.work_dir);
  return deploy::launch_over_ssh(ex, hosts, o, interrupted());
}
}  // namespace

void add_launch_command(CLI::App& app, Commands& out) {
  auto a = std::make_shared<LaunchArgs>();
  auto* c = app.add_subcommand("launch",
                               "Start an experiment's tree on real machines over ssh (hosts file), collect logs and results");
  c->footer("Example: treefarm launch experiment.toml --hosts hosts.toml --out out/lan\n"
            "         salloc -N 4 treefarm launch experiment.toml --slurm --out out/cluster\n"
            "The hosts file lists machines (address, ssh user/port, nodes placed there): docs/launch.md.\n"
            "ssh runs in BatchMode with your agent and ~/.ssh/config. Exit code: the master's; 1 if the\n"
            "master's host was lost or a host could not be prepared (nothing started), 124 timeout, 130 interrupted.");
  c->add_option("experiment", a->experiment, "Experiment file (TOML, docs/experiment-file.md)")->required()->check(CLI::ExistingFile);
  c->add_option("--hosts", a->hosts, "Hosts file (TOML, docs/hosts-file.md)")->check(CLI::ExistingFile);
  c->add_flag("--slurm", a->slurm, "Inside a Slurm allocation: the hosts are its nodes, each tree node a job step (srun)");
  c->add_option("--bin-dir", a->bin_dir, "--slurm: where treefarm-master/worker are on the nodes (default: next to this treefarm)");
  c->add_option("--work-dir", a->work_dir, "--slurm: run directories are made under it on each node")->capture_default_str();
  c->add_option("--out", a->o.out_dir, "Local directory for results.json, launch.json and logs/NODE.log")->required();
  c->add_option("--policy", a->o.policy, "Scheduling policy (overrides [run] policy)")->check(treefarm::cli_support::policy_check());
  c->add_option("--buffer", a->o.buffer, "Buffer bound B in tasks (overrides [run] buffer)")->check(cli_support::positive_number());
  c->add_option("--timeout", a->o.timeout, "Stop every node after this many seconds (0 = never)")->capture_default_str()->check(cli_support::non_negative_seconds());
  cli_support::exits_on_timeout(*c);  // --timeout expired: exit 124
  c->add_option("--connect-timeout", a->o.connect_timeout, "seconds for each ssh connection")->capture_default_str()->check(cli_support::positive_seconds());
  c->add_flag("--insecure", a->o.insecure, "Plain TCP between the nodes (default: CURVE keys made for the run)");
  c->add_flag("--keep-remote", a->o.keep_remote, "Keep the run directories on the hosts (WORK_DIR/treefarm-launch-ID)");
  c->add_flag("--quiet", a->o.quiet, "No progress lines");
  c->add_option("--ssh", a->o.ssh, "ssh client program")->capture_default_str();
  c->add_option("--log-level", a->o.log_level, "trace|debug|info|warn|error|critical|off (of the nodes)")->capture_default_str()->check(cli_support::log_level_check());
  out.push_back({c, [a] { return run_launch(*a); }});
}

}  // namespace treefarm::cli
