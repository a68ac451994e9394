// Who may do what on a served tree (docs/security.md, "Roles" and "No programs for
// strangers"), tried as an attacker would with real processes on loopback: a served
// master (`treefarm-master --serve`), workers, and `treefarm submit/status/cancel` as
// clients holding node, client or admin keys. CTest label `adversarial`; each test is one
// finding and fails on a master that admits any listed key, runs submitted programs for
// anyone, or reads files it was not sent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"

using namespace treefarm::testing;

namespace {

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

/// A served master "m" in `dir` (served_master_args: its endpoints in DIR/m.ep and
/// DIR/submit.ep) as `o` says, with fast heartbeats, a live wait of 20 s and CURVE keys
/// from DIR/keys when `curve`.
struct ServedMaster {
  std::unique_ptr<Child> process;
  std::string tree, submit;  ///< endpoints
  ServedMaster(const fs::path& dir, bool curve, Served o = {}) {
    o.live_wait = "20";
    o.fast_heartbeats = true;
    if (curve)
      o.extra.insert(o.extra.begin(), {"--curve-secret", (dir / "keys" / "m.key_secret").string(), "--authorized-keys",
                                       (dir / "keys" / "authorized_keys").string()});
    process = std::make_unique<Child>(served_master_args(dir, o), dir / "master.log");
    tree = wait_for_line(dir / "m.ep");
    submit = wait_for_line(dir / "submit.ep");
  }
  std::string log() const { return process->output(); }
  void stop() {
    kill(process->pid(), SIGTERM);
    EXPECT_TRUE(process->wait(20).has_value()) << log();
  }
};

/// A one-core leaf worker NAME under `parent`, with the key KEY (DIR/keys/KEY.key_secret) under CURVE.
std::unique_ptr<Child> start_worker(const fs::path& dir, const std::string& name, const std::string& parent,
                                    const std::string& key = "") {
  std::vector<std::string> a{worker_bin, "--parent", parent, "--name", name, "--cores", "1", "--listen", ""};
  a.insert(a.end(), fast_heartbeats.begin(), fast_heartbeats.end());
  if (!key.empty())
    a.insert(a.end(), {"--curve-secret", (dir / "keys" / (key + ".key_secret")).string(), "--parent-key",
                       (dir / "keys" / "m.key").string()});
  return std::make_unique<Child>(a, dir / (name + ".log"));
}

/// `treefarm SUBCOMMAND ... --to ENDPOINT`, as the client holding key KEY under CURVE.
std::string client(const fs::path& dir, const std::string& command, const std::string& endpoint,
                   const std::string& key = "") {
  std::string c = treefarm_bin + " " + command + " --to " + endpoint;
  if (!key.empty())
    c += " --curve-secret " + (dir / "keys" / (key + ".key_secret")).string() + " --server-key " +
         (dir / "keys" / "m.key").string();
  return c;
}

/// Keys for a served tree: m (the master, not listed), w1 (node), alice and bob (client),
/// root (admin).
void make_keys(const fs::path& dir) {
  const std::string out = " --out " + (dir / "keys").string();
  ASSERT_EQ(run_command(treefarm_bin + " keygen m --role master" + out).exit_code, 0);
  ASSERT_EQ(run_command(treefarm_bin + " keygen w1" + out).exit_code, 0);
  ASSERT_EQ(run_command(treefarm_bin + " keygen alice bob --role client" + out).exit_code, 0);
  const auto admin = run_command(treefarm_bin + " keygen root --role admin" + out);
  ASSERT_EQ(admin.exit_code, 0) << admin.output;
}

nlohmann::json status_of(const std::string& command) {
  const auto r = run_command(command + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto brace = r.output.find('{');
  return brace == std::string::npos ? nlohmann::json::object() : nlohmann::json::parse(r.output.substr(brace));
}

const std::string noop_experiment = "[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 64\ntasks = 20\n";

// A node key may join the tree but not submit; a client key may submit but not join; the
// master's own key does neither. Each refusal is logged once per key, not once per retry.
TEST(ServedTree, ANodeKeysSubmitAndAClientKeysJoinAreRefused) {
  TempDir dir("served-roles");
  make_keys(dir.path());
  const auto authorized = read_file(dir.path() / "keys" / "authorized_keys");
  EXPECT_EQ(authorized.find(" m "), std::string::npos) << "the master's key is listed:\n" << authorized;
  EXPECT_NE(authorized.find("alice "), std::string::npos) << authorized;
  ServedMaster m(dir.path(), true);
  ASSERT_FALSE(m.tree.empty() || m.submit.empty()) << m.log();

  // alice's key as a worker: the tree refuses it; w1's key joins.
  auto intruder = start_worker(dir.path(), "alice", m.tree, "alice");
  auto as_master = start_worker(dir.path(), "m", m.tree, "m");
  auto w1 = start_worker(dir.path(), "w1", m.tree, "w1");
  const auto status = client(dir.path(), "status", m.submit, "alice");
  ASSERT_TRUE(wait_until([&] { return status_of(status).value("waiting", nlohmann::json::array()).size() == 1; }, 30))
      << m.log();
  EXPECT_EQ(status_of(status).at("waiting"), nlohmann::json::array({"w1"})) << m.log();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the refused ones keep retrying
  const std::string log = m.log();
  EXPECT_NE(log.find("refused a connection to the tree"), std::string::npos) << log;
  EXPECT_NE(log.find("a client key ('alice'); the tree admits node keys only"), std::string::npos) << log;
  EXPECT_NE(log.find("not in the authorized keys"), std::string::npos) << log;  // the master's own key
  EXPECT_EQ(count_of(log, "a client key ('alice'); the tree admits node keys only"), 1u) << "not rate-limited:\n" << log;

  // w1's key submits: refused at the channel, nothing queued.
  const auto exp = write_file(dir.path() / "nop.toml", noop_experiment);
  const auto by_node = run_command(client(dir.path(), "submit " + exp + " --timeout 5", m.submit, "w1"));
  EXPECT_NE(by_node.exit_code, 0) << by_node.output;
  EXPECT_NE(m.log().find("a node key ('w1'); the submit channel admits client or admin keys only"), std::string::npos)
      << m.log();
  const auto s = status_of(status);
  EXPECT_TRUE(s.at("queue").empty() && s.at("finished").empty() && s.at("running").is_null()) << s.dump();

  // alice's key submits and the node w1 computes it.
  const auto ok = run_command(client(dir.path(), "submit " + exp + " --timeout 60", m.submit, "alice"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output << m.log();
  m.stop();
}

// Without --allow-commands a served master refuses every command application, whoever
// sends it; with it, a TCP channel without CURVE still refuses them (nobody is
// authenticated there), and an ipc:// channel of the master's own user accepts them.
TEST(ServedTree, ACommandApplicationIsRefusedWithoutAllowCommandsAndOverAPlainTcpChannel) {
  TempDir dir("served-cmd");
  const auto marker = dir.path() / "ran";
  const auto exp = write_file(dir.path() / "cmd.toml", "[[app]]\nname = \"c\"\nkind = \"command\"\nargv = [\"sh\", "
                                                       "\"-c\", \"echo x >> " + marker.string() +
                                                           "\"]\nbytes = 10\ntasks = 4\n");
  {
    ServedMaster m(dir.path(), false);
    ASSERT_FALSE(m.submit.empty()) << m.log();
    auto w = start_worker(dir.path(), "w1", m.tree);
    const auto r = run_command(client(dir.path(), "submit " + exp + " --timeout 30", m.submit));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("--allow-commands"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("cmd.toml:1: field 'app[0]': application 'c' is a command"), std::string::npos) << r.output;
    m.stop();
  }
  fs::remove(dir.path() / "m.ep");
  fs::remove(dir.path() / "submit.ep");
  {
    ServedMaster m(dir.path(), false, {.allow_commands = true});
    ASSERT_FALSE(m.submit.empty()) << m.log();
    auto w = start_worker(dir.path(), "w1", m.tree);
    const auto r = run_command(client(dir.path(), "submit " + exp + " --timeout 30", m.submit));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("only over CURVE from a client key, or over an ipc:// channel"), std::string::npos) << r.output;
    m.stop();
  }
  EXPECT_FALSE(fs::exists(marker)) << "a refused command ran: " << read_file(marker);
  fs::remove(dir.path() / "m.ep");
  fs::remove(dir.path() / "submit.ep");
  {
    const auto socket = dir.path() / "submit.sock";
    ServedMaster m(dir.path(), false, {.ipc = true, .allow_commands = true});
    ASSERT_FALSE(m.submit.empty()) << m.log();
    EXPECT_EQ(fs::status(socket).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
    auto w = start_worker(dir.path(), "w1", m.tree);
    // Tasks run as nobody (docs/command-tasks.md): their output comes back, not a file here.
    const auto echo = write_file(dir.path() / "echo.toml", "[[app]]\nname = \"c\"\nkind = \"command\"\nargv = [\"echo\", "
                                                           "\"{index}\"]\nbytes = 10\ntasks = 4\noutput_file = \"{index}\"\n");
    const auto r = run_command(client(dir.path(), "submit " + echo + " --timeout 60 --out " + (dir.path() / "out").string(),
                                      m.submit));
    EXPECT_EQ(r.exit_code, 0) << r.output << m.log();
    EXPECT_EQ(read_file(dir.path() / "out" / "outputs" / "c" / "3"), "3\n");
    m.stop();
  }
}

// With --allow-commands, over CURVE, a client key's command application runs on the
// workers; the served master never runs it itself, not for a spot check (spot_check =
// true, --spot-check 1) and not on cores of its own (--cpus is refused with it).
TEST(ServedTree, WithAllowCommandsAClientKeysCommandRunsOnTheWorkersAndNeverOnTheMaster) {
  TempDir dir("served-allow");
  make_keys(dir.path());
  const auto computing = run_command(master_bin + " --serve --allow-commands --cpus 0 --bind-file " +
                                     (dir.path() / "x.ep").string());
  EXPECT_EQ(computing.exit_code, 2) << computing.output;
  EXPECT_NE(computing.output.find("--allow-commands with --cpus"), std::string::npos) << computing.output;

  ServedMaster m(dir.path(), true, {.allow_commands = true, .extra = {"--spot-check", "1"}});
  ASSERT_FALSE(m.submit.empty()) << m.log();
  auto w1 = start_worker(dir.path(), "w1", m.tree, "w1");
  const auto status = client(dir.path(), "status", m.submit, "alice");
  ASSERT_TRUE(wait_until([&] { return status_of(status).value("waiting", nlohmann::json::array()).size() == 1; }, 30))
      << m.log();
  const auto exp = write_file(dir.path() / "who.toml",
                              "[[app]]\nname = \"who\"\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"cat /proc/$PPID/comm; "
                              "echo {index}\"]\nbytes = 10\ntasks = 12\nspot_check = true\noutput_file = \"{index}.txt\"\n");
  const auto r = run_command(client(dir.path(), "submit " + exp + " --timeout 60 --out " + (dir.path() / "out").string(),
                                    m.submit, "alice"));
  ASSERT_EQ(r.exit_code, 0) << r.output << m.log();
  EXPECT_EQ(read_file(dir.path() / "out" / "outputs" / "who" / "7.txt"), "treefarm-worker\n7\n");
  // --spot-check 1 would have the master re-run all 12: it re-ran none.
  EXPECT_NE(m.log().find("spot checks: 0 of 12 results from children recomputed"), std::string::npos) << m.log();
  EXPECT_NE(m.log().find("spot_check of 'who' is not honoured on a served master"), std::string::npos) << m.log();
  m.stop();
}

// Cancel: only the experiment's submitter (the same key name) or an admin key.
TEST(ServedTree, OnlyItsSubmitterOrAnAdminCancelsAnExperiment) {
  TempDir dir("served-cancel");
  make_keys(dir.path());
  ServedMaster m(dir.path(), true, {.allow_commands = true});
  ASSERT_FALSE(m.submit.empty()) << m.log();
  auto w1 = start_worker(dir.path(), "w1", m.tree, "w1");
  ASSERT_TRUE(wait_until([&] { return w1->output().find("no run now; waiting") != std::string::npos; }, 30)) << w1->output();
  // 300 tasks of 0.2 s on one core: alice's first runs for a minute, her second waits.
  const auto exp = write_file(dir.path() / "nap.toml", "[[app]]\nname = \"nap\"\nkind = \"command\"\nargv = [\"sleep\", "
                                                       "\"0.2\"]\nbytes = 10\ntasks = 300\n[run]\nbuffer = 1\n");
  Child first({treefarm_bin, "submit", exp, "--to", m.submit, "--curve-secret",
               (dir.path() / "keys" / "alice.key_secret").string(), "--server-key", (dir.path() / "keys" / "m.key").string(),
               "--timeout", "60"},
              dir.path() / "first.log");
  ASSERT_TRUE(wait_until([&] { return first.output().find("started") != std::string::npos; }, 30)) << first.output();
  Child second({treefarm_bin, "submit", exp, "--to", m.submit, "--curve-secret",
                (dir.path() / "keys" / "alice.key_secret").string(), "--server-key", (dir.path() / "keys" / "m.key").string(),
                "--timeout", "60"},
               dir.path() / "second.log");
  ASSERT_TRUE(wait_until([&] { return second.output().find("queued") != std::string::npos; }, 30)) << second.output();
  for (const char* id : {"1", "2"}) {
    const auto by_bob = run_command(client(dir.path(), std::string("cancel ") + id, m.submit, "bob"));
    EXPECT_NE(by_bob.exit_code, 0) << by_bob.output;
    EXPECT_NE(by_bob.output.find("only its submitter or an admin key may cancel it"), std::string::npos) << by_bob.output;
  }
  EXPECT_FALSE(second.wait(0).has_value()) << second.output();
  const auto by_alice = run_command(client(dir.path(), "cancel 2", m.submit, "alice"));
  EXPECT_EQ(by_alice.exit_code, 0) << by_alice.output;
  const auto by_admin = run_command(client(dir.path(), "cancel 1", m.submit, "root"));
  EXPECT_EQ(by_admin.exit_code, 0) << by_admin.output;
  EXPECT_EQ(second.wait(30), std::optional<int>(130)) << second.output();
  EXPECT_EQ(first.wait(60), std::optional<int>(130)) << first.output();
  m.stop();
}

// A submission reads only the files sent with it: an input_file outside the experiment's
// folder (the master's secret key here) is refused at submission, naming file, line and
// field; so is an application named "..".
TEST(ServedTree, AnInputFileOutsideTheSubmissionOrADotDotApplicationIsRefusedAtSubmission) {
  TempDir dir("served-input");
  make_keys(dir.path());
  ServedMaster m(dir.path(), true, {.allow_commands = true});
  ASSERT_FALSE(m.submit.empty()) << m.log();
  const auto secret = (dir.path() / "keys" / "m.key_secret").string();
  for (const std::string& input : {secret, std::string("../keys/m.key_secret")}) {
    fs::create_directories(dir.path() / "sub");
    const auto exp = write_file(dir.path() / "sub" / "steal.toml",
                                "[[app]]\nname = \"steal\"\nkind = \"command\"\nargv = [\"cat\"]\ninput_file = \"" + input +
                                    "\"\ntasks = 1\noutput_file = \"{index}\"\n");
    const auto r = run_command(client(dir.path(), "submit " + exp + " --timeout 30 --out " + (dir.path() / "loot").string(),
                                      m.submit, "alice"));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("steal.toml:5: field 'app[0].input_file'"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir.path() / "loot" / "outputs")) << input;
  }
  const auto dots = write_file(dir.path() / "dots.toml", "[[app]]\nname = \"..\"\nkernel = \"noop\"\nbytes = 8\ntasks = 1\n");
  const auto r = run_command(client(dir.path(), "submit " + dots + " --timeout 30", m.submit, "alice"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dots.toml:2: field 'app[0].name'"), std::string::npos) << r.output;
  m.stop();
}

// An argument the wire cannot carry (5,000 bytes) is refused when the experiment is
// submitted, naming file, line and field; the waiting worker stays on the tree and runs
// the next experiment.
TEST(ServedTree, AnArgvTooLongForTheWireIsRefusedAtSubmissionAndTheTreeStaysWhole) {
  TempDir dir("served-argv");
  make_keys(dir.path());
  ServedMaster m(dir.path(), true, {.allow_commands = true});
  ASSERT_FALSE(m.submit.empty()) << m.log();
  auto w1 = start_worker(dir.path(), "w1", m.tree, "w1");
  const auto status = client(dir.path(), "status", m.submit, "alice");
  ASSERT_TRUE(wait_until([&] { return status_of(status).value("waiting", nlohmann::json::array()).size() == 1; }, 30))
      << m.log();
  const auto big = write_file(dir.path() / "argv.toml", "[[app]]\nname = \"big\"\nkind = \"command\"\nbytes = 10\ntasks = 2\n"
                                                        "argv = [\"echo\", \"" + std::string(5000, 'x') + "\"]\n");
  const auto r = run_command(client(dir.path(), "submit " + big + " --timeout 30", m.submit, "alice"));
  EXPECT_NE(r.exit_code, 0) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("argv.toml:6: field 'app[0].argv[1]'"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("5000 bytes"), std::string::npos) << r.output.substr(0, 2000);
  const auto exp = write_file(dir.path() / "nop.toml", noop_experiment);
  const auto next = run_command(client(dir.path(), "submit " + exp + " --timeout 60 --out " + (dir.path() / "out").string(),
                                       m.submit, "alice"));
  ASSERT_EQ(next.exit_code, 0) << next.output << m.log();
  const auto results = nlohmann::json::parse(read_file(dir.path() / "out" / "results.json"));
  std::uint64_t by_w1 = 0;
  for (const auto& t : results.at("tasks")) by_w1 += t.value("node", "") == "w1";
  EXPECT_EQ(by_w1, 20u) << "w1 left the tree:\n" << w1->output();
  EXPECT_FALSE(w1->wait(0).has_value()) << w1->output();
  m.stop();
}


// Output files: a link planted under an output's .part name is not written through, and an
// experiment's outputs stop at --output-quota bytes (the run ends, its submitter told why).
TEST(ServedTree, OutputFilesAreNotWrittenThroughLinksAndStopAtTheQuota) {
  TempDir dir("served-outputs");
  ServedMaster m(dir.path(), false, {.ipc = true, .allow_commands = true, .extra = {"--output-quota", "100"}});
  ASSERT_FALSE(m.submit.empty()) << m.log();
  auto w1 = start_worker(dir.path(), "w1", m.tree);
  ASSERT_TRUE(wait_until([&] { return w1->output().find("no run now; waiting") != std::string::npos; }, 30)) << w1->output();
  const auto victim = write_file(dir.path() / "victim", "keep");
  const auto outputs = dir.path() / "state" / "job-1" / "out" / "outputs" / "o";
  fs::create_directories(outputs);
  for (int i = 0; i < 6; ++i) fs::create_symlink(victim, outputs / (std::to_string(i) + ".txt.part"));
  const auto exp = write_file(dir.path() / "o.toml", "[[app]]\nname = \"o\"\nkind = \"command\"\nargv = [\"sh\", \"-c\", "
                                                     "\"head -c 40 /dev/zero\"]\nbytes = 10\ntasks = 6\n"
                                                     "output_file = \"{index}.txt\"\n[run]\nbuffer = 1\n");
  const auto r = run_command(client(dir.path(), "submit " + exp + " --timeout 60", m.submit));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("output quota of 100 bytes"), std::string::npos) << r.output << m.log();
  EXPECT_EQ(read_file(victim), "keep") << "an output was written through a planted link";
  std::size_t kept = 0;
  for (const auto& f : fs::directory_iterator(outputs))
    if (f.path().extension() == ".txt" && !fs::is_symlink(f.path())) {
      ++kept;
      EXPECT_EQ(fs::file_size(f.path()), 40u);
    }
  EXPECT_EQ(kept, 2u) << "100 bytes hold two 40-byte outputs";
  m.stop();
}

}  // namespace
