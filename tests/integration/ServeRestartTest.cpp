// A served master that restarts (docs/serve.md, "Restarts"), with real processes on
// loopback: `treefarm-master --serve --state-dir DIR` is killed with SIGKILL while it runs
// one experiment and two more wait in its queue; started again with the same --state-dir
// (and the same endpoints), it takes them up: the workers rejoin by themselves (the same
// processes), the interrupted experiment resumes from its journal, the queued ones run, and
// each waiting `treefarm submit` gets its result — every task of all three exactly once.
#include <gtest/gtest.h>

#include <csignal>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"
#include "tests/support/EveryTaskOnce.hpp"

using namespace treefarm::testing;

namespace {

const char* const experiment = R"([[app]]
name = "mm"
kernel = "matmul"
n = 320
tasks = 2000
[run]
buffer = 4
)";

std::vector<std::string> master_args(const TempDir& dir, const std::string& listen) {
  return served_master_args(dir, {.ipc = true, .live_wait = "20", .fast_heartbeats = true, .extra = {"--listen", listen}});
}

std::size_t lines_of(const fs::path& file) {
  const auto text = read_file(file);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST(ServeRestart, AKilledServedMasterTakesUpItsRunningAndQueuedExperimentsWithTheSameWorkers) {
  TempDir dir;
  const std::string tag = "sr" + std::to_string(getpid());
  auto master = std::make_unique<Child>(master_args(dir, "tcp://127.0.0.1:*"), dir.path() / "master1.log");
  const auto mep = wait_for_line(dir.path() / "m.ep");
  const auto sep = wait_for_line(dir.path() / "submit.ep");
  ASSERT_FALSE(mep.empty() || sep.empty()) << master->output();
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the state directory is the master's user's only";

  std::vector<std::unique_ptr<Child>> workers;
  for (const auto* w : {"w1", "w2"})
    workers.push_back(std::make_unique<Child>(
        std::vector<std::string>{worker_bin, "--parent", mep, "--name", tag + w, "--cores", "1", "--listen", "",
                                 "--heartbeat-timeout", "2", "--heartbeat-interval", "0.3", "--rejoin-timeout", "120"},
        dir.path() / (std::string(w) + ".log")));
  const pid_t pid1 = workers[0]->pid(), pid2 = workers[1]->pid();

  const auto exp = write_file(dir.path() / "live.toml", experiment);
  std::vector<std::unique_ptr<Child>> submits;
  for (int k = 1; k <= 3; ++k) {
    submits.push_back(std::make_unique<Child>(
        std::vector<std::string>{treefarm_bin, "submit", exp, "--to", sep, "--out",
                                 (dir.path() / ("out" + std::to_string(k))).string(), "--timeout", "300"},
        dir.path() / ("submit" + std::to_string(k) + ".log")));
    ASSERT_TRUE(wait_until([&] { return submits.back()->output().find("queued") != std::string::npos; }, 30))
        << submits.back()->output() << master->output();
  }
  // Experiment 1 runs (a fair part of it journaled), 2 and 3 wait: kill -9.
  const auto journal = dir.path() / "state" / "job-1" / "out" / "journal.tsv";
  ASSERT_TRUE(wait_until([&] { return fs::exists(journal) && lines_of(journal) > 20; }, 120)) << master->output();
  kill(master->pid(), SIGKILL);
  const auto journaled = lines_of(journal) - 1;  // its header line
  ASSERT_LT(journaled, 2000u) << "experiment 1 ended before the kill: the test would show nothing";
  ASSERT_TRUE(master->wait(10).has_value());
  const auto state_of = [&](int k) {
    return nlohmann::json::parse(read_file(dir.path() / "state" / ("job-" + std::to_string(k)) / "job.json")).at("state");
  };
  EXPECT_EQ(state_of(1), "running");
  EXPECT_EQ(state_of(2), "queued");
  EXPECT_EQ(state_of(3), "queued");

  // The same state directory and endpoints: the workers come back by themselves.
  fs::remove(dir.path() / "m.ep");
  auto restarted = std::make_unique<Child>(master_args(dir, mep), dir.path() / "master2.log");
  ASSERT_FALSE(wait_for_line(dir.path() / "m.ep").empty()) << restarted->output();
  for (int k = 0; k < 3; ++k) {
    auto& s = *submits[static_cast<std::size_t>(k)];
    const auto rc = s.wait(240);
    ASSERT_TRUE(rc.has_value()) << s.output() << restarted->output();
    ASSERT_EQ(*rc, 0) << s.output() << restarted->output();
    const auto r = nlohmann::json::parse(read_file(dir.path() / ("out" + std::to_string(k + 1)) / "results.json"));
    treefarm::test_support::every_task_once(r, 2000);
    EXPECT_EQ(r.at("lost").get<int>(), 0);
    EXPECT_EQ(state_of(k + 1), "done");
  }
  const auto log = restarted->output();
  EXPECT_NE(log.find("experiment 1 (live.toml) taken up"), std::string::npos) << log;
  EXPECT_NE(log.find("it resumes from its journal"), std::string::npos) << log;
  EXPECT_NE(log.find("experiment 3 (live.toml) taken up"), std::string::npos) << log;
  // Experiment 1 resumed: its journal's tasks were not done again, the rest was.
  const auto resumed = log.find("tasks already done");
  ASSERT_NE(resumed, std::string::npos) << log;
  const auto line = log.substr(log.rfind(": ", resumed) + 2, resumed - log.rfind(": ", resumed) - 2);
  const auto done_before = std::stoull(line.substr(0, line.find(' ')));
  EXPECT_GT(done_before, 0u) << log;
  EXPECT_LT(done_before, 2000u) << log;
  // The same worker processes, still connected.
  EXPECT_FALSE(workers[0]->wait(0).has_value()) << workers[0]->output();
  EXPECT_FALSE(workers[1]->wait(0).has_value()) << workers[1]->output();
  EXPECT_EQ(workers[0]->pid(), pid1);
  EXPECT_EQ(workers[1]->pid(), pid2);

  // A client asking after an experiment this state directory never had gets a clear error.
  {
    zmq::context_t ctx;
    zmq::socket_t client(ctx, zmq::socket_type::dealer);
    client.set(zmq::sockopt::linger, 0);
    client.connect(sep);
    client.send(zmq::str_buffer(R"({"type":"watch","id":77})"), zmq::send_flags::none);
    zmq::pollitem_t item{static_cast<void*>(client), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, std::chrono::seconds(10)), 1);
    zmq::message_t answer;
    ASSERT_TRUE(client.recv(answer));
    const auto j = nlohmann::json::parse(answer.to_string_view());
    EXPECT_EQ(j.at("type"), "error");
    EXPECT_EQ(j.at("message"), "experiment 77 is not known to this master (its state directory holds no such experiment)");
  }
  kill(restarted->pid(), SIGTERM);
  EXPECT_TRUE(restarted->wait(30).has_value()) << restarted->output();
}
