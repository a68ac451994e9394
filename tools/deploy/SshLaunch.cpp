#include "tools/deploy/SshLaunch.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <random>
#include <sstream>
#include <unistd.h>

#include "runtime/process/ScratchDir.hpp"
#include "runtime/zmq/Curve.hpp"
#include "tools/deploy/ChildProcess.hpp"

namespace treefarm::deploy {

namespace fs = std::filesystem;

namespace {
// Runs on the host as `sh RUN_DIR/run.sh READY_FILE PROGRAM ARGS...`: starts the node
// with stdin from /dev/null and ends it (SIGTERM) when the ssh session's stdin reaches
// EOF — the launcher closed it, ended its ssh client, or died. Prints the ready marker
// once the node wrote its --ready-file (it listens), so that the launcher starts its
// children only then. Exits with the node's exit code.
constexpr const char* run_script = R"(# treefarm launch: runs one node; ends it when this ssh session ends
# usage: sh run.sh READY_FILE PROGRAM ARGS...
r=$1; shift
exec 3<&0
"$@" </dev/null &
p=$!
{ cat <&3 >/dev/null 2>&1; kill -TERM "$p" 2>/dev/null; } >/dev/null 2>&1 &
w=$!
exec 3<&-
{ while kill -0 "$p" 2>/dev/null && [ ! -s "$r" ]; do sleep 0.1; done
  [ -s "$r" ] && echo "@@treefarm-launch-ready@@"; } 2>/dev/null &
trap 'kill -TERM "$p" 2>/dev/null' TERM HUP INT
wait "$p"; rc=$?
while kill -0 "$p" 2>/dev/null; do wait "$p"; rc=$?; done
kill "$w" 2>/dev/null
exit "$rc"
)";

std::string random_id() {
  std::random_device rd;
  std::ostringstream s;
  s << std::hex << rd() << rd();
  return s.str().substr(0, 10);
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A here-document writing `content` to `path` with a terminator that does not occur in it.
std::string heredoc(const std::string& path, const std::string& content) {
  std::string end = "TREEFARM_EOF";
  while (content.find(end) != std::string::npos) end += "_";
  std::string body = content;
  if (!body.empty() && body.back() != '\n') body += '\n';
  return "cat > " + shell_quote(path) + " <<'" + end + "'\n" + body + end + "\n";
}

std::string last_lines(const std::string& text, std::size_t lines) {
  std::size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (std::size_t n = 0; n < lines && pos > 0; ++n) {
    const auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    pos = nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> ssh_argv(const Host& host, const SshLaunchOptions& options, const std::string& remote_command) {
  std::vector<std::string> a = {options.ssh, "-T", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=" + std::to_string(static_cast<int>(std::max(1.0, options.connect_timeout))),
                                "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"};
  if (host.port) a.insert(a.end(), {"-p", std::to_string(host.port)});
  if (!host.user.empty()) a.insert(a.end(), {"-l", host.user});
  a.insert(a.end(), host.ssh_options.begin(), host.ssh_options.end());
  a.insert(a.end(), {"--", host.address, remote_command});
  return a;
}

int launch_over_ssh(const model::Experiment& ex, const HostsFile& hf, const SshLaunchOptions& options,
                    const std::atomic<bool>& interrupted) {
  const auto remote = [&](const Host& host, const std::string& command, double connect_timeout) {
    if (options.remote) return options.remote(host, command);
    auto o = options;
    o.connect_timeout = connect_timeout;
    return ssh_argv(host, o, command);
  };
  if (options.out_dir.empty()) throw std::invalid_argument("launch: --out is required");
  const auto placement = place_nodes(ex, hf);
  const fs::path out = options.out_dir;
  const fs::path logs = out / "logs";
  fs::create_directories(logs);
  const std::string id = random_id();
  const auto started = std::chrono::steady_clock::now();
  const auto say = [&](const std::string& line) { std::cerr << "treefarm launch: " << line << "\n"; };

  // Hosts in use, and each one's run directory.
  std::vector<bool> used(hf.hosts.size(), false);
  for (auto h : placement.host_of) used[h] = true;
  const auto run_dir = [&](std::size_t h) { return hf.hosts[h].work_dir + "/treefarm-launch-" + id; };
  const auto endpoint_of = [&](std::size_t i) {
    return "tcp://" + hf.hosts[placement.host_of[i]].address + ":" + std::to_string(placement.port_of[i]);
  };

  // CURVE keys for the run, made here and sent to each host over its ssh session (only the
  // secret keys of the nodes it runs).
  std::vector<std::string> pub(ex.nodes.size()), sec(ex.nodes.size());
  std::string authorized;
  if (!options.insecure) {
    const process::ScratchDir tmpl("launch-keys");  // the secret keys go with it, an error included
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
      const auto pair = net::generate_keypair();
      net::write_keypair(tmpl.string(), ex.nodes[i].name, pair);
      pub[i] = read_file(tmpl / (ex.nodes[i].name + ".key"));
      sec[i] = read_file(tmpl / (ex.nodes[i].name + ".key_secret"));
      // Named node keys; the master's is not listed (docs/security.md, "Roles").
      if (i > 0) authorized += ex.nodes[i].name + " " + pair.public_key + " node\n";
    }
  }

  // 1. Prepare every host at once (run directory, wrapper, experiment, keys; checks the
  // binaries). A host that fails means nothing is started.
  const std::string experiment_text = model::read_input_file(ex.path);
  std::vector<std::future<std::pair<int, std::string>>> prep(hf.hosts.size());
  for (std::size_t h = 0; h < hf.hosts.size(); ++h) {
    if (!used[h]) continue;
    const auto& host = hf.hosts[h];
    const std::string dir = run_dir(h);
    std::string script = "set -e\numask 077\n";
    for (const char* prog : {"treefarm-master", "treefarm-worker"})
      script += "[ -x " + shell_quote(host.bin_dir + "/" + prog) + " ] || { echo " +
                shell_quote(host.bin_dir + "/" + prog + " is missing or not executable (set bin_dir)") + " >&2; exit 3; }\n";
    script += "mkdir -p " + shell_quote(dir + "/keys") + " " + shell_quote(dir + "/out") + "\n";
    script += heredoc(dir + "/run.sh", run_script);
    if (placement.host_of[0] == h) script += heredoc(dir + "/experiment.toml", experiment_text);
    if (!options.insecure) {
      script += heredoc(dir + "/keys/authorized_keys", authorized);
      for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
        if (placement.host_of[i] != h) continue;
        script += heredoc(dir + "/keys/" + ex.nodes[i].name + ".key_secret", sec[i]);
        if (i > 0) {
          const auto p = *ex.parent_index(i);
          script += heredoc(dir + "/keys/" + ex.nodes[p].name + ".key", pub[p]);
        }
      }
    }
    script += "echo ready\n";
    const auto argv = remote(host, "sh -s", options.connect_timeout);
    prep[h] = std::async(std::launch::async, [argv, script, &options] {
      return run_with_input(argv, script, options.connect_timeout + 20);
    });
  }
  std::vector<std::size_t> prepared, failed;
  std::string why_failed;  // each host that cannot be prepared, for the error
  for (std::size_t h = 0; h < hf.hosts.size(); ++h) {
    if (!used[h]) continue;
    const auto [rc, text] = prep[h].get();
    if (rc == 0 && text.find("ready") != std::string::npos) {
      prepared.push_back(h);
    } else {
      failed.push_back(h);
      why_failed += (why_failed.empty() ? "" : "; ") + ("host '" + hf.hosts[h].name + "' (" + hf.hosts[h].address + ", " +
                    hf.path + ":" + std::to_string(hf.hosts[h].line) + ") cannot be prepared: " + options.transport +
                    " exited with code " + std::to_string(rc) + ": " + last_lines(text, 3));
    }
  }
  const auto clean_hosts = [&](const std::vector<std::size_t>& which) {
    if (options.keep_remote) return;
    std::vector<std::future<std::pair<int, std::string>>> jobs;
    for (auto h : which) {
      jobs.push_back(std::async(std::launch::async, [argv = remote(hf.hosts[h], "rm -rf " + shell_quote(run_dir(h)),
                                                                  std::min(options.connect_timeout, 3.0))] {
        return run_with_input(argv, "", 60);
      }));
    }
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      const auto [rc, text] = jobs[k].get();
      if (rc != 0)
        say("could not remove " + run_dir(which[k]) + " on host '" + hf.hosts[which[k]].name + "' (ssh exit " +
            std::to_string(rc) + ")");
    }
  };
  if (!failed.empty()) {
    clean_hosts(prepared);
    throw std::runtime_error("launch: nothing was started: " + why_failed);
  }

  // 2. Start the nodes, master first, then breadth-first (a worker whose parent is not up
  // yet keeps connecting: ZeroMQ reconnects, and the join waits --join-timeout).
  struct Node {
    std::unique_ptr<ChildProcess> ssh;
    std::ofstream log;
    std::optional<int> exit_code;
    bool lost = false;
  };
  std::vector<Node> nodes(ex.nodes.size());
  const auto node_argv = [&](std::size_t i) {
    const auto& host = hf.hosts[placement.host_of[i]];
    const std::string dir = run_dir(placement.host_of[i]);
    const auto& spec = ex.nodes[i];
    std::vector<std::string> args;
    const std::string listen = "tcp://*:" + std::to_string(placement.port_of[i]);
    if (i == 0) {
      args = {host.bin_dir + "/treefarm-master", dir + "/experiment.toml", "--listen", listen, "--out", dir + "/out",
              "--log-level", options.log_level};
      if (!options.policy.empty()) args.insert(args.end(), {"--policy", options.policy});
      if (options.buffer) args.insert(args.end(), {"--buffer", std::to_string(options.buffer)});
      if (options.quiet) args.push_back("--quiet");
      if (spec.cores > 0 && !spec.cpuset.empty()) args.insert(args.end(), {"--cpus", spec.cpuset});
      args.insert(args.end(), options.master_args.begin(), options.master_args.end());
    } else {
      const auto parent = *ex.parent_index(i);
      args = {host.bin_dir + "/treefarm-worker", "--parent", endpoint_of(parent), "--name", spec.name, "--listen", listen,
              "--log-level", options.log_level};
      if (spec.cores == 0) args.insert(args.end(), {"--cores", "0"});
      else if (!spec.cpuset.empty()) args.insert(args.end(), {"--cpus", spec.cpuset});
      else args.insert(args.end(), {"--cores", std::to_string(spec.cores)});
      args.insert(args.end(), options.worker_args.begin(), options.worker_args.end());
    }
    if (options.insecure) {
      args.push_back("--insecure");
    } else {
      args.insert(args.end(), {"--curve-secret", dir + "/keys/" + spec.name + ".key_secret", "--authorized-keys",
                               dir + "/keys/authorized_keys"});
      if (i > 0) args.insert(args.end(), {"--parent-key", dir + "/keys/" + ex.nodes[*ex.parent_index(i)].name + ".key"});
    }
    const std::string ready = dir + "/" + spec.name + ".ready";
    args.insert(args.end(), {"--ready-file", ready});
    std::string cmd = "exec sh " + shell_quote(dir + "/run.sh") + " " + shell_quote(ready);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    return remote(host, cmd, options.connect_timeout);
  };
  std::vector<bool> ready(ex.nodes.size(), false), spawned(ex.nodes.size(), false);
  const auto spawn = [&](std::size_t i) {
    nodes[i].log.open(logs / (ex.nodes[i].name + ".log"), std::ios::app);
    nodes[i].ssh = std::make_unique<ChildProcess>(node_argv(i));
    spawned[i] = true;
    if (!options.quiet)
      say("started " + ex.nodes[i].name + " on " + hf.hosts[placement.host_of[i]].name + " (" + endpoint_of(i) + ")");
  };
  // Children start once their parent listens (a child that connects earlier may have its
  // Hello lost: the same order as treefarm run).
  const auto spawn_ready_children = [&] {
    for (std::size_t i = 1; i < ex.nodes.size(); ++i)
      if (!spawned[i] && ready[*ex.parent_index(i)]) spawn(i);
  };
  spawn(0);
  // 3. Stream output into the logs (the master's also to stdout), watch every session.
  const std::string marker = "@@treefarm-launch-ready@@\n";
  const auto pump = [&](std::size_t i) {
    if (!nodes[i].ssh) return;
    std::string got = nodes[i].ssh->read_output();
    if (const auto at = got.find(marker); at != std::string::npos) {
      got.erase(at, marker.size());
      ready[i] = true;
    }
    if (got.empty()) return;
    nodes[i].log << got;
    nodes[i].log.flush();
    if (i == 0) {
      std::cout << got;
      std::cout.flush();
    }
  };
  // First `natural` seconds for the nodes to end by themselves (after the master's Bye),
  // then their stdin is closed (the remote wrappers SIGTERM their nodes) and they get
  // `grace` more seconds before the ssh clients are ended.
  const auto end_all = [&](double natural, double grace) {
    const auto wait_all = [&](double seconds) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
      for (auto& n : nodes) {
        if (!n.ssh) continue;
        const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
        std::string rest;
        const auto rc = n.ssh->wait(std::max(0.0, left), &rest);
        n.log << rest;
        if (rc && !n.exit_code) n.exit_code = rc;
      }
    };
    wait_all(natural);
    for (auto& n : nodes)
      if (n.ssh) n.ssh->close_stdin();
    wait_all(grace);
    for (auto& n : nodes) {
      if (!n.ssh) continue;
      const int rc = n.ssh->terminate(1.0);
      n.log << n.ssh->read_output();
      if (!n.exit_code) n.exit_code = rc;
    }
  };
  const auto write_summary = [&](int code, const std::string& outcome) {
    nlohmann::json j;
    j["experiment"] = ex.path;
    j["hosts_file"] = hf.path;
    j["outcome"] = outcome;
    j["exit_code"] = code;
    j["seconds"] = seconds_since(started);
    j["run_dir_name"] = "treefarm-launch-" + id;
    j["encrypted"] = !options.insecure;
    j["transport"] = options.transport;
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
      nlohmann::json n;
      n["name"] = ex.nodes[i].name;
      n["host"] = hf.hosts[placement.host_of[i]].name;
      n["endpoint"] = endpoint_of(i);
      if (i > 0) n["parent"] = ex.nodes[*ex.parent_index(i)].name;
      if (nodes[i].exit_code) n["exit_code"] = *nodes[i].exit_code;
      n["lost"] = nodes[i].lost;
      n["started"] = spawned[i];
      n["log"] = (logs / (ex.nodes[i].name + ".log")).string();
      j["nodes"].push_back(n);
    }
    std::ofstream(out / "launch.json") << j.dump(2) << "\n";
  };
  const auto fetch_results = [&]() {
    const std::size_t h = placement.host_of[0];
    const auto [rc, tarball] = run_with_input(
        remote(hf.hosts[h], "cd " + shell_quote(run_dir(h) + "/out") + " && tar cf - .", options.connect_timeout), "", 60);
    if (rc != 0) {
      say("could not fetch the results from host '" + hf.hosts[h].name + "': " + last_lines(tarball, 3));
      return;
    }
    const fs::path tar_file = out / ".results.tar";
    std::ofstream(tar_file, std::ios::binary) << tarball;
    const auto [trc, terr] = run_with_input({"tar", "-xf", tar_file.string(), "-C", out.string()}, "", 60);
    fs::remove(tar_file);
    if (trc != 0) say("could not unpack the results: " + terr);
  };
  const auto finish = [&](int code, const std::string& outcome) {
    end_all(outcome == "completed" ? 5.0 : 0.0, 3.0);
    if (outcome == "completed" || outcome == "master failed") fetch_results();
    std::vector<std::size_t> all;
    for (std::size_t h = 0; h < hf.hosts.size(); ++h)
      if (used[h]) all.push_back(h);
    clean_hosts(all);
    write_summary(code, outcome);
    if (!options.quiet) say(outcome + "; logs in " + logs.string() + ", summary in " + (out / "launch.json").string());
    return code;
  };

  for (;;) {
    if (interrupted) {
      say("interrupted; stopping every node");
      return finish(130, "interrupted");
    }
    if (options.timeout > 0 && seconds_since(started) > options.timeout) {
      say("timeout after " + std::to_string(options.timeout) + " s; stopping every node");
      return finish(124, "timeout");
    }
    std::vector<pollfd> fds;
    for (auto& n : nodes)
      if (n.ssh && n.ssh->output_fd() >= 0) fds.push_back({n.ssh->output_fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    for (std::size_t i = 0; i < nodes.size(); ++i) pump(i);
    spawn_ready_children();
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      if (!nodes[i].ssh || nodes[i].exit_code) continue;
      const auto rc = nodes[i].ssh->poll_exit();
      if (!rc) continue;
      pump(i);
      nodes[i].exit_code = rc;
      if (*rc == 0) continue;
      // A node that dies is its parent's business: the parent re-queues its tasks, which
      // are done elsewhere (docs/fault-tolerance.md). ssh's 255 means the session itself
      // broke: the host died, or the network to it.
      nodes[i].lost = true;
      const auto& host = hf.hosts[placement.host_of[i]];
      say("node '" + ex.nodes[i].name + "' on host '" + host.name + "' " +
          (*rc == 255 && options.transport == "ssh" ? std::string("lost (ssh session broke: host or network down)") : "exited with code " + std::to_string(*rc)) +
          "; its parent re-queues its tasks. Its log ends with:\n" +
          last_lines(read_file(logs / (ex.nodes[i].name + ".log")), 5));
    }
    if (const auto rc = nodes[0].ssh->poll_exit()) {
      pump(0);
      nodes[0].exit_code = rc;
      if (*rc == 255) {
        nodes[0].lost = true;
        say("the master's host '" + hf.hosts[placement.host_of[0]].name + "' was lost (ssh exit 255); stopping every node");
        return finish(1, "master lost");
      }
      return finish(*rc, *rc == 0 ? "completed" : "master failed");
    }
  }
}

}  // namespace treefarm::deploy
