// A hostile client of a served master's submit channel (docs/serve.md, "Limits"), on
// loopback: a 50 MB submission is refused with the master staying under 50 MB of resident
// memory; 200 file frames are refused and none is kept; a client that asks for its output
// files and never reads them holds a bounded part of the master's memory, while a client
// that reads gets every byte. Memory is the master's own (/proc/PID/status VmRSS, VmHWM).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"

using namespace treefarm::testing;

namespace {

/// A field of /proc/PID/status in kB (VmRSS, VmHWM); -1 if absent.
long status_kb(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

/// A served master with no worker (or one, with `worker`), its submit endpoint in `sep`.
struct ServedTree {
  std::unique_ptr<Child> master, worker;
  std::string sep;
  std::string start(const TempDir& dir, bool with_worker) {
    // An ipc:// channel of this user: command applications are accepted there (docs/security.md).
    master = std::make_unique<Child>(served_master_args(dir, {.ipc = true, .allow_commands = true, .live_wait = "20"}),
                                     dir.path() / "master.log");
    const auto mep = wait_for_line(dir.path() / "m.ep");
    sep = wait_for_line(dir.path() / "submit.ep");
    if (mep.empty() || sep.empty()) return "master not ready: " + master->output();
    if (with_worker) {
      worker = std::make_unique<Child>(std::vector<std::string>{worker_bin, "--parent", mep, "--name",
                                                                "sc" + std::to_string(getpid()), "--cores", "1", "--listen", ""},
                                       dir.path() / "w.log");
      if (!wait_until([&] { return worker->output().find("no run now; waiting") != std::string::npos; }, 30))
        return "the worker does not wait: " + worker->output();
    }
    return {};
  }
};

/// A raw client: a DEALER on the channel.
struct RawClient {
  zmq::context_t ctx{1};
  zmq::socket_t socket{ctx, zmq::socket_type::dealer};
  explicit RawClient(const std::string& endpoint) {
    socket.set(zmq::sockopt::linger, 0);
    socket.connect(endpoint);
  }
  /// The next JSON message within `seconds` (a second frame, if any, is dropped).
  std::optional<nlohmann::json> next(double seconds) {
    zmq::pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(static_cast<long>(seconds * 1000))) <= 0) return std::nullopt;
    zmq::message_t m, rest;
    (void)socket.recv(m, zmq::recv_flags::none);
    while (m.more() && socket.recv(rest, zmq::recv_flags::none) && rest.more()) {
    }
    return nlohmann::json::parse(m.to_string_view(), nullptr, false);
  }
};

TEST(SubmitChannel, AFiftyMegabyteSubmissionIsRefusedWithTheMasterUnderFiftyMegabytes) {
  TempDir dir;
  ServedTree s;
  const auto why = s.start(dir, false);
  ASSERT_TRUE(why.empty()) << why;
  const long before = status_kb(s.master->pid(), "VmRSS");
  {
    RawClient c(s.sep);
    const std::string request = R"({"type":"submit","name":"x.toml","experiment":")" + std::string(50'000'000, 'a') + "\"}";
    c.socket.send(zmq::buffer(request), zmq::send_flags::none);
    EXPECT_FALSE(c.next(3).has_value()) << "the master answered a 50 MB frame";
  }
  const long hwm = status_kb(s.master->pid(), "VmHWM");
  std::printf("master VmRSS before %ld kB, VmHWM after a 50 MB submission %ld kB\n", before, hwm);
  EXPECT_LT(hwm, 50 * 1000) << "kB";
  // It still serves.
  const auto st = run_command(treefarm_bin + " status --json --to " + s.sep);
  EXPECT_EQ(st.exit_code, 0) << st.output << s.master->output();
  kill(s.master->pid(), SIGTERM);
  EXPECT_EQ(s.master->wait(20), std::optional<int>(0)) << s.master->output();
}

TEST(SubmitChannel, TwoHundredFileFramesAreRefusedAndNoneIsKept) {
  TempDir dir;
  ServedTree s;
  const auto why = s.start(dir, false);
  ASSERT_TRUE(why.empty()) << why;
  RawClient c(s.sep);
  const std::string request = R"({"type":"submit","name":"x.toml","experiment":"","inputs":[]})";
  c.socket.send(zmq::buffer(request), zmq::send_flags::sndmore);
  const std::string mib(1u << 20, 'b');
  for (int i = 0; i < 200; ++i) c.socket.send(zmq::buffer(mib), i + 1 < 200 ? zmq::send_flags::sndmore : zmq::send_flags::none);
  const auto answer = c.next(30);
  ASSERT_TRUE(answer.has_value()) << s.master->output();
  EXPECT_EQ(answer->value("type", ""), "error") << answer->dump();
  EXPECT_NE(answer->value("message", "").find("200 file frames"), std::string::npos) << answer->dump();
  const long rss = status_kb(s.master->pid(), "VmRSS"), hwm = status_kb(s.master->pid(), "VmHWM");
  std::printf("master after 200 frames of 1 MiB: VmRSS %ld kB, VmHWM %ld kB\n", rss, hwm);
  EXPECT_LT(rss, 50 * 1000) << "kB: the master kept the frames";
  EXPECT_TRUE(std::filesystem::is_empty(dir.path() / "state")) << "a job directory for a refused submission";
  kill(s.master->pid(), SIGTERM);
  EXPECT_EQ(s.master->wait(20), std::optional<int>(0)) << s.master->output();
}

TEST(SubmitChannel, AClientThatNeverReadsItsOutputsHoldsBoundedMemoryAndAReaderGetsEveryByte) {
  TempDir dir;
  ServedTree s;
  const auto why = s.start(dir, true);
  ASSERT_TRUE(why.empty()) << why;
  // 20 outputs of 20 MiB each.
  const std::string experiment =
      "[[app]]\nname = \"z\"\nkind = \"command\"\nargv = [\"head\", \"-c\", \"20971520\", \"/dev/zero\"]\nbytes = 10\n"
      "tasks = 20\noutput_file = \"{index}.out\"\nmax_output_bytes = \"32MiB\"\n[run]\nbuffer = 2\n";
  RawClient c(s.sep);
  const std::string request = nlohmann::json{{"type", "submit"}, {"name", "z.toml"}, {"experiment", experiment},
                                             {"outputs", true}, {"inputs", nlohmann::json::array()}}.dump();
  c.socket.send(zmq::buffer(request), zmq::send_flags::none);
  std::optional<nlohmann::json> m;
  std::uint64_t id = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    m = c.next(1);
    if (!m) continue;
    ASSERT_NE(m->value("type", ""), "error") << m->dump();
    id = m->value("id", id);
    if (m->value("type", "") == "done") break;
  }
  ASSERT_TRUE(m && m->value("type", "") == "done") << s.master->output();
  ASSERT_EQ(m->value("exit_code", -1), 0) << m->dump().substr(0, 2000) << s.master->output();
  ASSERT_EQ(m->value("outputs", 0), 20) << m->dump().substr(0, 400);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long after_run = status_kb(s.master->pid(), "VmRSS");
  // Asks for every chunk of every file (400 MiB) and reads none of them.
  for (int file = 0; file < 20; ++file)
    for (std::uint64_t offset = 0; offset < (20u << 20); offset += 1u << 20) {
      const std::string fetch = nlohmann::json{{"type", "fetch"}, {"id", id}, {"file", file}, {"offset", offset}}.dump();
      c.socket.send(zmq::buffer(fetch), zmq::send_flags::none);
    }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const long flooded = status_kb(s.master->pid(), "VmRSS");
  std::printf("master VmRSS after the run %ld kB, with 400 chunks asked and unread %ld kB\n", after_run, flooded);
  EXPECT_LT(flooded - after_run, 48 * 1024) << "kB held for a client that does not read";

  // A client that reads gets every output whole (20 chunks each).
  const auto exp = write_file(dir.path() / "z.toml", experiment);
  const auto r = run_command(treefarm_bin + " submit " + exp + " --to " + s.sep + " --out " + (dir.path() / "out").string() +
                             " --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output << s.master->output();
  for (int i = 0; i < 20; ++i) {
    const auto f = dir.path() / "out" / "outputs" / "z" / (std::to_string(i) + ".out");
    ASSERT_TRUE(std::filesystem::exists(f)) << f;
    EXPECT_EQ(std::filesystem::file_size(f), 20u << 20) << f;
  }
  EXPECT_EQ(read_file(dir.path() / "out" / "outputs" / "z" / "7.out"), std::string(20u << 20, '\0'));
  kill(s.master->pid(), SIGTERM);
  EXPECT_EQ(s.master->wait(20), std::optional<int>(0)) << s.master->output();
}

}  // namespace
