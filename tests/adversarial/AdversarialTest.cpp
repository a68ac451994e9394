// The adversarial suite: a scripted malicious peer speaking the wire protocol
// (runtime/net Codec/Wire) against a real master and worker on loopback. Each test asserts
// that the run completes with every task exactly once, 0 wrong, and no process crashed.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <set>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "runtime/zmq/Wire.hpp"
#include "tests/integration/ProcessTestUtil.hpp"

using namespace treefarm::testing;
namespace net = treefarm::net;

namespace {


/// A peer that joins like a worker and then does what the test scripts.
class MaliciousPeer {
 public:
  MaliciousPeer(zmq::context_t& ctx, const std::string& endpoint, const std::string& name)
      : socket_(ctx, zmq::socket_type::dealer) {
    net::configure_socket(socket_, false);
    socket_.connect(endpoint);
    net::send(socket_, net::msg::Hello{name, 1, 1ull << 30});
  }
  void send(const net::Message& m) { net::send(socket_, m); }
  zmq::socket_t& socket() { return socket_; }
  /// Waits for its Welcome, asks for `count` tasks and waits for the first: its id, or
  /// nullopt if either never came.
  std::optional<std::uint64_t> join_and_take(std::uint32_t count) {
    if (!wait_for<net::msg::Welcome>(20)) return std::nullopt;
    send(net::msg::Request{count});
    auto t = wait_for<net::msg::Task>(20);
    if (!t) return std::nullopt;
    return std::get<net::msg::Task>(t->message).task_id;
  }
  /// Waits up to `seconds` for a message of kind K (others are discarded).
  template <class K>
  std::optional<net::Received> wait_for(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq_pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      while (auto got = net::try_receive(socket_, false)) {
        if (auto* r = std::get_if<net::Received>(&*got); r && std::holds_alternative<K>(r->message))
          return std::move(*r);
      }
    }
    return std::nullopt;
  }

 private:
  zmq::socket_t socket_;
};

/// The reason of the Shutdown `peer` receives within `seconds` ("" if none came).
std::string shutdown_reason(MaliciousPeer& peer, double seconds) {
  const auto got = peer.wait_for<net::msg::Shutdown>(seconds);
  return got ? std::get<net::msg::Shutdown>(got->message).reason : std::string();
}

std::string experiment(const std::string& worker, std::uint64_t tasks) {
  return "[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"" + worker +
         "\"\nparent = \"m\"\ncores = 1\n[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 96\ntasks = " +
         std::to_string(tasks) + "\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 4096\ntasks = " +
         std::to_string(tasks) + "\n[run]\nbuffer = 4\n";
}

/// A master and one honest worker; the test's peer attacks while they run.
class Tree {
 public:
  Tree(const std::string& label, std::uint64_t tasks, const std::vector<std::string>& master_extra = {})
      : dir_(label), tasks_(tasks) {
    worker_name_ = label + std::to_string(getpid());
    exp_ = write_file(dir_.path() / "adv.toml", experiment(worker_name_, tasks));
    std::vector<std::string> args{master_bin, exp_, "--ready-file", (dir_.path() / "m.ep").string(),
                                  "--out", (dir_.path() / "out").string(), "--wait-workers", "1",
                                  "--heartbeat-timeout", "3", "--quiet"};
    args.insert(args.end(), master_extra.begin(), master_extra.end());
    master_.emplace(args, dir_.path() / "master.log");
    endpoint_ = wait_for_line(dir_.path() / "m.ep");
  }
  void start_worker() {
    worker_.emplace(std::vector<std::string>{worker_bin, "--parent", endpoint_, "--name", worker_name_, "--cores", "1",
                                             "--ready-file", (dir_.path() / "w.ep").string(), "--heartbeat-timeout", "3"},
                    dir_.path() / "worker.log");
  }
  /// The endpoint the honest worker serves its own children on (after start_worker()).
  std::string worker_endpoint() const { return wait_for_line(dir_.path() / "w.ep"); }
  std::string worker_log() const { return read_file(dir_.path() / "worker.log"); }
  const std::string& endpoint() const { return endpoint_; }
  const std::string& worker_name() const { return worker_name_; }
  std::string master_log() const { return read_file(dir_.path() / "master.log"); }
  nlohmann::json results() const { return nlohmann::json::parse(read_file(dir_.path() / "out" / "results.json")); }

  /// The run completes: master exit 0, worker exit 0, every task once, none wrong.
  void expect_clean_completion() {
    const auto rc = master_->wait(120);
    ASSERT_TRUE(rc.has_value()) << master_->output();
    EXPECT_EQ(*rc, 0) << master_->output();
    const auto wrc = worker_->wait(30);
    ASSERT_TRUE(wrc.has_value()) << worker_->output();
    EXPECT_EQ(*wrc, 0) << "the honest worker crashed or failed: " << worker_->output();
    const auto j = nlohmann::json::parse(read_file(dir_.path() / "out" / "results.json"));
    std::set<std::pair<std::string, std::uint64_t>> seen;
    for (const auto& t : j.at("tasks")) {
      EXPECT_TRUE(seen.insert({t.at("app").get<std::string>(), t.at("id").get<std::uint64_t>()}).second);
    }
    EXPECT_EQ(seen.size(), 2 * tasks_);
    for (const auto& a : j.at("apps")) EXPECT_EQ(a.at("wrong").get<std::uint64_t>(), 0u);
    EXPECT_TRUE(j.at("ok").get<bool>());
  }

 private:
  treefarm::test_support::TempDir dir_;
  std::uint64_t tasks_;
  std::string worker_name_, exp_, endpoint_;
  std::optional<Child> master_, worker_;
};

}  // namespace

// A result for a task the peer was never sent. The core refuses it and the peer is
// dropped (the driver cuts the reason it sends to what the wire carries).
TEST(Adversarial, ForeignResultsAreRefusedAndTheRunCompletes) {
  Tree tree("advforeign", 300);
  zmq::context_t ctx(1);
  MaliciousPeer peer(ctx, tree.endpoint(), "mallory");
  ASSERT_TRUE(peer.wait_for<net::msg::Welcome>(20).has_value());
  tree.start_worker();
  for (std::uint64_t i = 0; i < 20; ++i) {
    net::msg::Result r;
    r.task_id = i;  // app 0, index i: held by the honest worker, or not sent yet
    r.node = "mallory";
    r.checksum = 0;
    peer.send(r);
  }
  // Refused: the peer is told it was dropped, and no result of its is recorded.
  const std::string reason = shutdown_reason(peer, 20);
  EXPECT_NE(reason.find("dropped by its parent"), std::string::npos) << "Shutdown reason: '" << reason << "'";
  tree.expect_clean_completion();
  EXPECT_NE(tree.master_log().find("dropping child 'mallory'"), std::string::npos) << tree.master_log();
  for (const auto& t : tree.results().at("tasks")) EXPECT_NE(t.at("node"), "mallory") << t.dump();
}

// Garbage after a valid join: the peer is dropped, the run goes on.
TEST(Adversarial, GarbageAfterJoiningDropsThePeer) {
  Tree tree("advgarbage", 300);
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  net::configure_socket(s, false);
  s.connect(tree.endpoint());
  net::send(s, net::msg::Hello{"garbage", 1, 1ull << 30});
  tree.start_worker();
  for (int i = 0; i < 50; ++i) {
    std::string junk(64 + i, static_cast<char>(i * 37));
    s.send(zmq::buffer(junk), zmq::send_flags::dontwait);
  }
  tree.expect_clean_completion();
  // Dropped, by the master that received the garbage, and it computed nothing.
  EXPECT_NE(tree.master_log().find("dropping child 'garbage'"), std::string::npos) << tree.master_log();
  for (const auto& t : tree.results().at("tasks")) EXPECT_NE(t.at("node"), "garbage") << t.dump();
}

// One Request(2^20) must not black-hole every task (a request beyond the child's
// allotment drops that child, then its tasks are re-queued).
TEST(Adversarial, AHugeRequestDoesNotBlackHoleTheTasks) {
  Tree tree("advhuge", 300);
  zmq::context_t ctx(1);
  MaliciousPeer peer(ctx, tree.endpoint(), "hoarder");
  ASSERT_TRUE(peer.wait_for<net::msg::Welcome>(20).has_value());
  peer.send(net::msg::Request{1u << 20});
  tree.start_worker();
  tree.expect_clean_completion();
}

// Ghost nodes: a NodeJoined for a node outside the sender's subtree.
TEST(Adversarial, SpoofedNodeJoinedIsRefused) {
  Tree tree("advspoof", 300);
  zmq::context_t ctx(1);
  MaliciousPeer peer(ctx, tree.endpoint(), "spoofer");
  ASSERT_TRUE(peer.wait_for<net::msg::Welcome>(20).has_value());
  peer.send(net::msg::NodeJoined{"ghost", "m", 64, 1ull << 30});
  // Refused: the spoofer is dropped with the reason, and the ghost never joins the tree.
  const std::string reason = shutdown_reason(peer, 20);
  EXPECT_NE(reason.find("outside its subtree"), std::string::npos) << "Shutdown reason: '" << reason << "'";
  tree.start_worker();
  tree.expect_clean_completion();
  EXPECT_NE(tree.master_log().find("dropping child 'spoofer'"), std::string::npos) << tree.master_log();
  for (const auto& n : tree.results().at("nodes")) EXPECT_NE(n.at("name"), "ghost") << n.dump();
}

// 200 idle TCP connections (no ZMTP greeting) must not stall the run.
TEST(Adversarial, AnIdleConnectionFloodDoesNotStallTheRun) {
  Tree tree("advflood", 300);
  const auto port = std::stoi(tree.endpoint().substr(tree.endpoint().rfind(':') + 1));
  std::vector<int> fds;
  for (int i = 0; i < 200; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) fds.push_back(fd);
    else ::close(fd);
  }
  EXPECT_GT(fds.size(), 150u);
  tree.start_worker();
  tree.expect_clean_completion();
  for (int fd : fds) ::close(fd);
}

// Forged results: a peer that answers its tasks with made-up checksums. With --spot-check 1 every
// result of a child is recomputed: the first forged one convicts the peer, it is
// disconnected and refused when it joins again, the tasks it held are redone by the honest
// worker, and results.json has every task once and 0 wrong.
TEST(Adversarial, ForgedChecksumsAreCaughtAndRedone) {
  Tree tree("advforge", 300, {"--spot-check", "1"});
  zmq::context_t ctx(1);
  MaliciousPeer peer(ctx, tree.endpoint(), "forger");
  ASSERT_TRUE(peer.wait_for<net::msg::Welcome>(20).has_value());
  tree.start_worker();
  peer.send(net::msg::Request{2});
  int forged = 0;
  for (int i = 0; i < 2; ++i) {
    auto t = peer.wait_for<net::msg::Task>(20);
    if (!t) break;
    const auto id = std::get<net::msg::Task>(t->message).task_id;
    peer.send(net::msg::Received{{id}});
    net::msg::Result r;
    r.task_id = id;
    r.node = "forger";
    r.checksum = 12345.0;
    peer.send(r);
    ++forged;
  }
  ASSERT_GT(forged, 0) << "the forger was never sent a task";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (tree.master_log().find("spot check caught child 'forger'") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Caught, it is refused when it joins again under the same name.
  MaliciousPeer again(ctx, tree.endpoint(), "forger");
  EXPECT_TRUE(again.wait_for<net::msg::Shutdown>(20).has_value());
  tree.expect_clean_completion();
  EXPECT_NE(tree.master_log().find("spot check caught child 'forger'"), std::string::npos) << tree.master_log();
  EXPECT_NE(tree.master_log().find("refusing 'forger'"), std::string::npos) << tree.master_log();
}

// Forged results, checked in part: a peer forging every result it gets is caught by a secret 5 % spot
// check (it escapes k forged results with probability 0.95^k: 6e-3 for k = 100), and the
// results it got recorded before that are redone: 0 wrong in results.json.
TEST(Adversarial, ASteadyForgerIsCaughtBySpotChecksAndItsResultsRedone) {
  Tree tree("advforge2", 1000, {"--spot-check", "0.05"});
  zmq::context_t ctx(1);
  MaliciousPeer peer(ctx, tree.endpoint(), "forger");
  ASSERT_TRUE(peer.wait_for<net::msg::Welcome>(20).has_value());
  tree.start_worker();
  peer.send(net::msg::Request{4});
  int forged = 0;
  bool caught = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!caught && std::chrono::steady_clock::now() < deadline) {
    auto t = peer.wait_for<net::msg::Task>(5);
    if (!t) break;  // dropped: nothing more comes
    const auto id = std::get<net::msg::Task>(t->message).task_id;
    peer.send(net::msg::Received{{id}});
    net::msg::Result r;
    r.task_id = id;
    r.node = "forger";
    r.checksum = 1.0 + static_cast<double>(id % 1000);
    peer.send(r);
    peer.send(net::msg::Request{1});
    ++forged;
    caught = tree.master_log().find("spot check caught child 'forger'") != std::string::npos;
  }
  tree.expect_clean_completion();
  EXPECT_NE(tree.master_log().find("spot check caught child 'forger'"), std::string::npos)
      << "forged " << forged << " results, never caught:\n" << tree.master_log();
  // Every result it got recorded before it was caught was done again by the honest worker.
  const auto results = tree.results();  // kept: a range-for over a temporary's member dangles
  ASSERT_EQ(results.at("tasks").size(), 2000u);
  for (const auto& t : results.at("tasks")) EXPECT_NE(t.at("node").get<std::string>(), "forger");
}

// Names bound to keys: a second connection under the honest worker's name must
// not take over its identity.
TEST(Adversarial, NameTakeoverIsRefused) {
  Tree tree("advtakeover", 5000);
  tree.start_worker();
  // As soon as the honest worker holds the name (the run may be short).
  ASSERT_TRUE(wait_until([&] { return tree.master_log().find("child '" + tree.worker_name() + "' joined") != std::string::npos; }, 60))
      << tree.master_log();
  zmq::context_t ctx(1);
  MaliciousPeer peer(ctx, tree.endpoint(), tree.worker_name());
  peer.send(net::msg::Request{4});
  // Refused by the driver (a live child holds the name), not merely outlived.
  const std::string refused = "refused a second connection claiming the name '" + tree.worker_name() + "'";
  EXPECT_TRUE(wait_until([&] { return tree.master_log().find(refused) != std::string::npos; }, 30)) << tree.master_log();
  tree.expect_clean_completion();
}

// A hostile child of an inner node (not of the master): scripted peers join under the
// honest worker and send results for tasks they were never sent, a request far beyond
// their buffer, a join outside their subtree, and garbage after taking tasks. The worker
// drops each of them (and re-queues what they held); the run completes with every task
// exactly once, 0 wrong, and neither the master nor the worker crashed.
TEST(Adversarial, AHostileChildOfAnInnerWorkerIsDroppedAndTheRunCompletes) {
  Tree tree("advinner", 400);
  tree.start_worker();
  const auto ep = tree.worker_endpoint();
  ASSERT_FALSE(ep.empty()) << tree.worker_log();
  zmq::context_t ctx(1);
  // Takes tasks, then sends garbage: dropped, its tasks re-queued by the worker.
  MaliciousPeer holder(ctx, ep, "holder");
  EXPECT_TRUE(holder.join_and_take(2).has_value()) << tree.worker_log();
  MaliciousPeer foreign(ctx, ep, "foreign");
  ASSERT_TRUE(foreign.wait_for<net::msg::Welcome>(20).has_value());
  for (std::uint64_t i = 0; i < 20; ++i) {
    net::msg::Result r;
    r.task_id = i;  // app 0, index i: held by someone else, or never sent
    r.node = tree.worker_name();
    r.checksum = 0;
    foreign.send(r);
  }
  MaliciousPeer hoarder(ctx, ep, "hoarder");
  ASSERT_TRUE(hoarder.wait_for<net::msg::Welcome>(20).has_value());
  hoarder.send(net::msg::Request{1u << 20});
  MaliciousPeer spoofer(ctx, ep, "spoofer");
  ASSERT_TRUE(spoofer.wait_for<net::msg::Welcome>(20).has_value());
  spoofer.send(net::msg::NodeJoined{"ghost", "m", 64, 1ull << 30});
  {
    zmq::socket_t raw(ctx, zmq::socket_type::dealer);
    net::configure_socket(raw, false);
    raw.connect(ep);
    net::send(raw, net::msg::Hello{"junk", 1, 1ull << 30});
    for (int i = 0; i < 30; ++i) {
      std::string junk(16 + 7 * i, static_cast<char>(i * 53));
      raw.send(zmq::buffer(junk), zmq::send_flags::dontwait);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    raw.set(zmq::sockopt::linger, 0);
  }
  holder.send(net::msg::Heartbeat{});
  {
    zmq::socket_t& s = holder.socket();
    std::string junk(40, '\x5a');
    s.send(zmq::buffer(junk), zmq::send_flags::dontwait);
  }
  tree.expect_clean_completion();
  const auto log = tree.worker_log();
  for (const char* name : {"holder", "foreign", "hoarder", "spoofer", "junk"})
    EXPECT_NE(log.find(std::string("dropping child '") + name + "'"), std::string::npos) << name << " was not dropped:\n" << log;
  const auto results = tree.results();  // kept: a range-for over a temporary's member dangles
  ASSERT_EQ(results.at("tasks").size(), 800u);
  for (const auto& t : results.at("tasks")) EXPECT_EQ(t.at("node").get<std::string>(), tree.worker_name());
}

// Blame below an inner node (docs/security.md): a scripted peer under the honest
// worker forges a result; the master's spot check catches it and blames down through the
// worker, which drops the forger and names it. The honest worker is NOT dropped: it keeps
// computing and its later results are accepted; the forged task is redone; every task
// once, 0 wrong; the forger cannot rejoin under the worker.
TEST(Adversarial, AForgerBelowAnInnerWorkerIsConvictedAndItsHonestParentKept) {
  Tree tree("advblame", 1000, {"--spot-check", "1"});
  tree.start_worker();
  const auto ep = tree.worker_endpoint();
  ASSERT_FALSE(ep.empty()) << tree.worker_log();
  zmq::context_t ctx(1);
  MaliciousPeer forger(ctx, ep, "forger");
  const auto id = forger.join_and_take(1);
  ASSERT_TRUE(id.has_value()) << tree.worker_log();
  forger.send(net::msg::Received{{*id}});
  net::msg::Result r;
  r.task_id = *id;
  r.node = "forger";
  r.checksum = 12345.0;
  forger.send(r);
  ASSERT_TRUE(forger.wait_for<net::msg::Shutdown>(20).has_value()) << "the worker did not drop the forger:\n" << tree.worker_log();
  ASSERT_TRUE(wait_until([&] { return tree.master_log().find("convicted 'forger'") != std::string::npos; }, 20))
      << tree.master_log();
  // Caught, it is refused when it joins the worker again under the same name.
  MaliciousPeer again(ctx, ep, "forger");
  EXPECT_TRUE(again.wait_for<net::msg::Shutdown>(20).has_value());
  tree.expect_clean_completion();
  const auto mlog = tree.master_log(), wlog = tree.worker_log();
  EXPECT_EQ(mlog.find("dropping child '" + tree.worker_name() + "'"), std::string::npos) << "honest worker dropped:\n" << mlog;
  EXPECT_NE(mlog.find("its honest ancestors keep their results"), std::string::npos) << mlog;
  EXPECT_NE(wlog.find("dropping child 'forger': forged the result of task"), std::string::npos) << wlog;
  EXPECT_NE(wlog.find("refusing 'forger'"), std::string::npos) << wlog;
  // Every task, the forged one included, was computed by the honest worker and recorded once.
  const auto results = tree.results();  // kept: a range-for over a temporary's member dangles
  std::size_t by_worker = 0;
  for (const auto& task : results.at("tasks")) by_worker += task.at("node").get<std::string>() == tree.worker_name();
  EXPECT_EQ(by_worker, 2000u);
}
