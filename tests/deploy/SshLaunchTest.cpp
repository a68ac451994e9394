// `treefarm launch --hosts` against real sshd servers, each in a network namespace this test
// creates (tools/emulate's Platform: a star of veth links around a "client" namespace that
// routes between them). Each sshd has its own host key; the client key and known_hosts are
// made here. Needs root, /usr/sbin/sshd and ssh-keygen; skips with the reason otherwise.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <zmq.hpp>
#include <sstream>
#include <thread>

#include "tests/support/TreeToml.hpp"
#include "tests/emulate/EmulationTestSupport.hpp"
#include "tools/deploy/ChildProcess.hpp"
#include "tools/emulate/Program.hpp"
#include "tools/emulate/Platform.hpp"

namespace treefarm::deploy {
namespace {

namespace fs = std::filesystem;
using emulate::run_checked;
using emulate::run_program;

std::string why_not() {
  if (!emulate::testing::unavailable_reason().empty()) return emulate::testing::unavailable_reason();
  if (!fs::exists("/usr/sbin/sshd")) return "/usr/sbin/sshd missing (apt-get install openssh-server)";
  if (run_program({"sh", "-c", "command -v ssh && command -v ssh-keygen"}).exit_code != 0)
    return "ssh or ssh-keygen missing (apt-get install openssh-client)";
  return "";
}

#define SKIP_UNLESS_SSHD()                                                      \
  do {                                                                          \
    if (const auto why = why_not(); !why.empty()) GTEST_SKIP() << "ssh launch tests skipped: " << why; \
  } while (0)

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// N hosts: namespaces PREFIX-n1..nN, around the client namespace PREFIX-n0 which routes
// between them; an sshd on each host's address (unless told not to start it).
class SshHosts {
 public:
  SshHosts(std::size_t n, const fs::path& dir) : dir_(dir) {
    std::string toml = "[[node]]\nname = \"client\"\ncores = 0\n";
    for (std::size_t i = 1; i <= n; ++i) toml += "[[node]]\nname = \"h" + std::to_string(i) + "\"\nparent = \"client\"\ncores = 0\n";
    toml += "[[app]]\nname = \"x\"\nkernel = \"matmul\"\nn = 8\ntasks = 1\n";
    emulate::PlatformOptions po;
    po.prefix = emulate::testing::fresh_prefix();
    platform_ = std::make_unique<emulate::Platform>(emulate::testing::experiment(toml), po);
    run_checked({"ip", "netns", "exec", platform_->netns(0), "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"});
    for (std::size_t i = 1; i <= n; ++i)
      run_checked({"ip", "-n", platform_->netns(i), "route", "add", "default", "via", platform_->parent_address(i)});
    fs::create_directories("/run/sshd");  // sshd's privilege separation directory
    run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", (dir_ / "client_key").string()});
    fs::copy_file(dir_ / "client_key.pub", dir_ / "authorized_keys");
    std::ofstream known(dir_ / "known_hosts");
    for (std::size_t i = 1; i <= n; ++i) {
      const auto key = dir_ / ("host" + std::to_string(i) + "_key");
      run_checked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key.string()});
      known << address(i) << " " << slurp(key.string() + ".pub");
      std::ofstream(dir_ / ("sshd" + std::to_string(i) + ".conf"))
          << "ListenAddress " << address(i) << "\nPort 22\nHostKey " << key.string() << "\nPidFile none\n"
          << "AuthorizedKeysFile " << (dir_ / "authorized_keys").string() << "\nPasswordAuthentication no\n"
          << "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n";
      fs::create_directories(work_dir(i));
    }
    std::ofstream(dir_ / "ssh_config") << "Host *\n  IdentityFile " << (dir_ / "client_key").string()
                                       << "\n  IdentitiesOnly yes\n  UserKnownHostsFile " << (dir_ / "known_hosts").string()
                                       << "\n  StrictHostKeyChecking yes\n  User root\n";
    sshd_.resize(n + 1);
  }
  ~SshHosts() {
    for (auto& s : sshd_)
      if (s) s->terminate(2.0);
    platform_->teardown();
  }

  void start_sshd(std::size_t i) {
    sshd_[i] = std::make_unique<ChildProcess>(std::vector<std::string>{
        "ip", "netns", "exec", platform_->netns(i), "/usr/sbin/sshd", "-D", "-e", "-f", (dir_ / ("sshd" + std::to_string(i) + ".conf")).string()});
    // Ready once it accepts a session: within 30 s however loaded the machine (a count of
    // tries made it ~5 s of refused connections).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (run_program(client({"ssh", "-F", (dir_ / "ssh_config").string(), "-o", "BatchMode=yes", address(i), "true"})).exit_code == 0)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "sshd on host " << i << " does not accept sessions within 30 s: " << sshd_[i]->read_output();
  }
  // Host i dies: every process in its namespace is killed at once (sshd, its sessions, the node).
  void kill_host(std::size_t i) {
    std::istringstream pids(run_program({"ip", "netns", "pids", platform_->netns(i)}).out);
    for (std::string pid; pids >> pid;) ::kill(std::stoi(pid), SIGKILL);
    if (sshd_[i]) sshd_[i]->terminate(1.0);
    sshd_[i].reset();
  }
  // Processes in host i's namespace other than its sshd.
  std::vector<std::string> strays(std::size_t i) const {
    std::set<std::string> keep;
    if (sshd_[i]) {
      // `ip netns exec` execs sshd: same pid.
      keep.insert(std::to_string(sshd_[i]->pid()));
    }
    std::vector<std::string> out;
    std::istringstream pids(run_program({"ip", "netns", "pids", platform_->netns(i)}).out);
    for (std::string pid; pids >> pid;)
      if (!keep.count(pid)) out.push_back(pid + " " + slurp("/proc/" + pid + "/cmdline"));
    return out;
  }

  /// Waits up to 20 s for the hosts to have no process but their sshd: the sshd processes
  /// of a session end just after its client does, later on a loaded machine. What never
  /// ends is left for strays() to name.
  void wait_quiet(const std::vector<std::size_t>& which) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      bool quiet = true;
      for (auto i : which) quiet = quiet && strays(i).empty();
      if (quiet) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::string address(std::size_t i) const { return platform_->address(i); }
  /// The client's network namespace (where the launcher runs).
  std::string client_netns() const { return platform_->netns(0); }
  fs::path work_dir(std::size_t i) const { return dir_ / ("work" + std::to_string(i)); }
  /// argv run from the client namespace.
  std::vector<std::string> client(std::vector<std::string> argv) const {
    argv.insert(argv.begin(), {"ip", "netns", "exec", platform_->netns(0)});
    return argv;
  }
  /// A hosts file: host i (1-based) gets `nodes[i-1]`.
  fs::path hosts_file(const std::vector<std::vector<std::string>>& nodes) const {
    std::ostringstream t;
    t << "[defaults]\nssh_options = [\"-F\", \"" << (dir_ / "ssh_config").string() << "\"]\nbin_dir = \"" << TREEFARM_BIN_DIR
      << "\"\n";
    for (std::size_t i = 1; i <= nodes.size(); ++i) {
      t << "\n[[host]]\nname = \"h" << i << "\"\naddress = \"" << address(i) << "\"\nwork_dir = \"" << work_dir(i).string()
        << "\"\nnodes = [";
      for (std::size_t k = 0; k < nodes[i - 1].size(); ++k) t << (k ? ", " : "") << '"' << nodes[i - 1][k] << '"';
      t << "]\n";
    }
    const auto p = dir_ / "hosts.toml";
    std::ofstream(p) << t.str();
    return p;
  }

 private:
  fs::path dir_;
  std::unique_ptr<emulate::Platform> platform_;
  std::vector<std::unique_ptr<ChildProcess>> sshd_;
};

// The quickstart's tree and applications, fewer tasks: a run of a few seconds.
fs::path write_experiment(const fs::path& dir, int mm, int ma) {
  const std::string t = test_support::quickstart_nodes_toml() +
                        test_support::quickstart_apps_toml(static_cast<std::uint64_t>(mm), static_cast<std::uint64_t>(ma)) +
                        test_support::multiport_run_toml(4, "fcfs");
  const auto p = dir / "experiment.toml";
  std::ofstream(p) << t;
  return p;
}

// Every task of every application completed exactly once, none wrong.
void expect_exactly_once(const nlohmann::json& r) {
  std::map<std::string, std::set<std::uint64_t>> ids;
  for (const auto& t : r.at("tasks")) {
    const bool fresh = ids[t.at("app").get<std::string>()].insert(t.at("id").get<std::uint64_t>()).second;
    EXPECT_TRUE(fresh) << "task " << t.dump() << " completed twice";
  }
  for (const auto& a : r.at("apps")) {
    EXPECT_EQ(a.at("completed"), a.at("tasks")) << a.dump();
    EXPECT_EQ(a.at("wrong"), 0) << a.dump();
    EXPECT_EQ(ids[a.at("name").get<std::string>()].size(), a.at("tasks").get<std::size_t>());
  }
}

// No ssh client of this run left (they would name the run's hosts file's ssh_config).
std::vector<std::string> stray_clients(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto cmd = slurp(e.path() / "cmdline");
    if (cmd.find((dir / "ssh_config").string()) != std::string::npos && cmd.rfind("ssh", 0) == 0)
      out.push_back(e.path().filename().string());
  }
  return out;
}

// How a plain ZeroMQ client (no CURVE) fares against `endpoint`, from inside the network
// namespace `netns`: nullopt if it never got a TCP connection within `seconds`, else
// whether its ZMTP handshake succeeded (a CURVE server refuses a plain client's greeting).
std::optional<bool> plain_handshake_succeeds(const std::string& netns, const std::string& endpoint, double seconds) {
  std::optional<bool> result;
  std::thread probe([&] {
    // setns moves this thread only; the context's I/O thread, made below, inherits it.
    const int fd = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const bool entered = ::setns(fd, CLONE_NEWNET) == 0;
    ::close(fd);
    if (!entered) return;
    zmq::context_t ctx(1);
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    zmq_socket_monitor(s.handle(), "inproc://plain-probe",
                       ZMQ_EVENT_CONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED);
    zmq::socket_t monitor(ctx, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect("inproc://plain-probe");
    s.connect(endpoint);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    bool connected = false;
    while (std::chrono::steady_clock::now() < deadline) {
      zmq_pollitem_t item{static_cast<void*>(monitor), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(100));
      zmq::message_t event, address;
      if (!monitor.recv(event, zmq::recv_flags::dontwait)) continue;
      (void)monitor.recv(address);
      std::uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof id);
      if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        result = true;
        return;
      }
      if (id == ZMQ_EVENT_CONNECTED && !connected) {
        connected = true;  // reached: from now on a few seconds for the handshake
        const auto handshake_by = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        if (handshake_by < deadline) deadline = handshake_by;
      }
    }
    if (connected) result = false;
  });
  probe.join();
  return result;
}

TEST(SshLaunch, QuickstartOnFourHostsCompletesAndLeavesNothingBehind) {
  SKIP_UNLESS_SSHD();
  test_support::TempDir dir("ssh-launch");
  SshHosts hosts(4, dir.path());
  for (std::size_t i = 1; i <= 4; ++i) hosts.start_sshd(i);
  const auto hf = hosts.hosts_file({{"master"}, {"w1"}, {"w2"}, {"w1a", "w1b"}});
  const auto ex = write_experiment(dir.path(), 300, 600);
  const auto out = dir.path() / "out";
  ChildProcess launch(hosts.client({std::string(TREEFARM_BIN_DIR) + "/treefarm", "launch", ex.string(), "--hosts",
                                    hf.string(), "--out", out.string(), "--timeout", "200"}));
  // While it runs: the master (host h1, the hosts file's first port) speaks CURVE only, so
  // a plain client reaches its port but its handshake is refused.
  const auto plain = plain_handshake_succeeds(hosts.client_netns(), "tcp://" + hosts.address(1) + ":5555", 60);
  std::string output;
  const auto rc = launch.wait(200, &output);
  ASSERT_TRUE(rc.has_value()) << output;
  ASSERT_EQ(*rc, 0) << output;
  ASSERT_TRUE(plain.has_value()) << "the plain client never reached the master's port";
  EXPECT_FALSE(*plain) << "a plain (unencrypted) client completed a handshake with the master";
  const auto results = nlohmann::json::parse(slurp(out / "results.json"));
  expect_exactly_once(results);
  // Every node joined and computed on its own host.
  for (const auto& n : results.at("nodes")) {
    if (n.at("name") != "master") {
      EXPECT_GT(n.at("tasks_computed").get<int>(), 0) << n.dump();
    }
  }
  const auto summary = nlohmann::json::parse(slurp(out / "launch.json"));
  EXPECT_EQ(summary.at("outcome"), "completed");
  EXPECT_TRUE(summary.at("encrypted").get<bool>());
  for (const auto& n : summary.at("nodes")) {
    EXPECT_FALSE(n.at("lost").get<bool>()) << n.dump();
    EXPECT_TRUE(fs::exists(n.at("log").get<std::string>()));
  }
  EXPECT_EQ(summary.at("nodes")[3].at("host"), "h4");
  // Workers logged through their ssh sessions.
  EXPECT_FALSE(slurp(out / "logs" / "w1a.log").empty());
  // Nothing left: no process on any host but its sshd, no ssh client, no run directory.
  hosts.wait_quiet({1, 2, 3, 4});
  for (std::size_t i = 1; i <= 4; ++i) {
    EXPECT_EQ(hosts.strays(i), std::vector<std::string>{}) << "host " << i;
    EXPECT_TRUE(fs::is_empty(hosts.work_dir(i))) << hosts.work_dir(i);
  }
  EXPECT_EQ(stray_clients(dir.path()), std::vector<std::string>{});
}

TEST(SshLaunch, AHostThatDiesMidRunHasItsTasksDoneElsewhere) {
  SKIP_UNLESS_SSHD();
  test_support::TempDir dir("ssh-launch");
  SshHosts hosts(4, dir.path());
  for (std::size_t i = 1; i <= 4; ++i) hosts.start_sshd(i);
  const auto hf = hosts.hosts_file({{"master"}, {"w1"}, {"w2"}, {"w1a", "w1b"}});
  const auto ex = write_experiment(dir.path(), 450, 900);
  const auto out = dir.path() / "out";
  ChildProcess launch(hosts.client({std::string(TREEFARM_BIN_DIR) + "/treefarm", "launch", ex.string(), "--hosts", hf.string(),
                                    "--out", out.string(), "--timeout", "200"}));
  launch.close_stdin();
  // Once w2 (alone on h3) has computed tasks, h3 dies.
  std::string output;
  const auto w2_log = out / "logs" / "w2.log";
  for (int k = 0; k < 1200 && !launch.poll_exit(); ++k) {
    output += launch.read_output();
    // The master prints "[T s] DONE/TOTAL ..." every second once dispatching started.
    bool computing = false;
    for (auto at = output.find(" s] "); at != std::string::npos && !computing; at = output.find(" s] ", at + 1))
      computing = at + 4 < output.size() && output[at + 4] >= '1' && output[at + 4] <= '9';
    if (computing)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(launch.poll_exit()) << "the run ended before host h3 could die: " << output;
  hosts.kill_host(3);
  const auto rc = launch.wait(200, &output);
  ASSERT_TRUE(rc.has_value()) << output;
  ASSERT_EQ(*rc, 0) << output;
  EXPECT_NE(output.find("node 'w2' on host 'h3' lost"), std::string::npos) << output;
  const auto results = nlohmann::json::parse(slurp(out / "results.json"));
  expect_exactly_once(results);
  const auto summary = nlohmann::json::parse(slurp(out / "launch.json"));
  for (const auto& n : summary.at("nodes")) EXPECT_EQ(n.at("lost").get<bool>(), n.at("name") == "w2") << n.dump();
  hosts.wait_quiet({1, 2, 4});
  for (std::size_t i : {1, 2, 4}) {
    EXPECT_EQ(hosts.strays(i), std::vector<std::string>{}) << "host " << i;
    EXPECT_TRUE(fs::is_empty(hosts.work_dir(i))) << hosts.work_dir(i);
  }
  EXPECT_EQ(hosts.strays(3), std::vector<std::string>{});
  EXPECT_EQ(stray_clients(dir.path()), std::vector<std::string>{});
}

TEST(SshLaunch, AHostThatRefusesTheConnectionStopsTheLaunchBeforeAnythingStarts) {
  SKIP_UNLESS_SSHD();
  test_support::TempDir dir("ssh-launch");
  SshHosts hosts(2, dir.path());
  hosts.start_sshd(1);  // host 2 has no sshd: its port 22 refuses the connection
  const auto hf = hosts.hosts_file({{"master", "w1"}, {"w2", "w1a", "w1b"}});
  const auto ex = write_experiment(dir.path(), 10, 10);
  const auto r = run_program(hosts.client({std::string(TREEFARM_BIN_DIR) + "/treefarm", "launch", ex.string(), "--hosts",
                                           hf.string(), "--out", (dir.path() / "out").string()}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("treefarm: error: launch: nothing was started: host 'h2' (" + hosts.address(2)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Connection refused"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was started"), std::string::npos) << r.err;
  // The launcher's sessions on host 1 (preparing, cleaning) are over, but their sshd
  // processes may not have ended yet.
  hosts.wait_quiet({1});
  EXPECT_EQ(hosts.strays(1), std::vector<std::string>{});
  EXPECT_TRUE(fs::is_empty(hosts.work_dir(1)));  // host 1 was prepared, then cleaned
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "results.json"));
}

}  // namespace
}  // namespace treefarm::deploy
