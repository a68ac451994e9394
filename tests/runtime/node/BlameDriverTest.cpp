// Blame below an inner node (docs/security.md): a result the root proves forged
// convicts the node that produced it, found hop by hop down the way it came, and not the
// honest inner nodes above it — unless one of them cannot or will not answer.
#include "runtime/node/Blame.hpp"
#include "runtime/node/BlameLedger.hpp"
#include "runtime/node/NodeDriver.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/runtime/node/RecordingTransport.hpp"

namespace treefarm::node {
namespace {

using testing::RecordingTransport;
using testing::parent;
using testing::quiet_options;
constexpr double forged_checksum = -1;  ///< what the root's check calls forged

/// The root's side of a run: a bag of no-op tasks, a check that calls negative checksums
/// forged, and a convict() that revokes by producing node (or by child), as the master does.
struct RootRecord {
  std::map<std::uint64_t, std::pair<std::string, std::string>> recorded;  ///< task -> (node, via)
  std::map<std::uint64_t, int> times;                                     ///< task -> times recorded
  std::vector<std::string> convictions;                                    ///< "culprit<via" or "culprit<via*" (whole child)
  std::string arriving_via;

  RootSetup setup(std::uint64_t tasks) {
    RootSetup r;
    r.welcome = testing::welcome(2, false, tasks);
    r.apps = {testing::noop_app(tasks)};
    r.payload = [](core::TaskId) -> Payload { return std::make_shared<SizeOnly>(testing::task_bytes); };
    r.check_result = [this](const net::msg::Result& res, const std::string& via) {
      arriving_via = via;
      return ResultVerdict{res.checksum == forged_checksum};
    };
    r.on_result = [this](const net::msg::Result& res, bool duplicate, double) {
      if (duplicate) return;
      recorded[res.task_id] = {res.node, arriving_via};
      ++times[res.task_id];
    };
    r.convict = [this](const std::string& culprit, const std::string& via, bool whole) {
      convictions.push_back(culprit + "<" + via + (whole ? "*" : ""));
      std::vector<core::TaskRef> redo;
      for (auto it = recorded.begin(); it != recorded.end();) {
        const bool revoke = whole ? it->second.second == via : it->second.first == culprit;
        if (revoke) {
          redo.push_back(core::TaskRef{core::TaskId{it->first}});
          --times[it->first];
          it = recorded.erase(it);
        } else {
          ++it;
        }
      }
      return redo;
    };
    return r;
  }
};

NodeOptions quiet(const std::string& name) {
  NodeOptions o = quiet_options(name);
  o.blame_timeout = 4;
  return o;
}

/// master → a → {honest, forger}: the root and the inner node are real drivers wired to
/// each other; the two leaves are scripted by the test.
class TwoLevels : public ::testing::Test {
 protected:
  static constexpr PeerId a_peer{10}, honest{1}, forger{2};

  void SetUp() override {
    root_ = std::make_unique<NodeDriver>(quiet("master"), rt_, nullptr, rec_.setup(tasks_));
    a_ = std::make_unique<NodeDriver>(quiet("a"), at_, nullptr, std::nullopt);
    root_->start(now_);
    a_->start(now_);
    pump();
    ASSERT_EQ(root_->child_count(), 1u);
    for (auto [peer, name] : {std::pair{honest, "honest"}, std::pair{forger, "forger"}}) {
      a_->on_child_message(peer, net::msg::Hello{name, 1, 0}, {}, now_);
      ASSERT_EQ(at_.take<net::msg::Welcome>(peer).size(), 1u);
    }
    pump();
  }

  /// Carries messages between the root and a until neither has anything for the other.
  void pump() {
    for (bool moved = true; moved;) {
      moved = false;
      a_->flush(now_);
      root_->flush(now_);
      for (auto it = at_.sent.begin(); it != at_.sent.end();) {
        if (it->to) { ++it; continue; }
        auto s = *it;
        it = at_.sent.erase(it);
        root_->on_child_message(a_peer, s.message, s.payload, now_);
        moved = true;
        it = at_.sent.begin();
      }
      for (auto it = rt_.sent.begin(); it != rt_.sent.end();) {
        if (it->to != a_peer) { ++it; continue; }
        auto s = *it;
        it = rt_.sent.erase(it);
        a_->on_parent_message(s.message, s.payload, now_);
        moved = true;
        it = rt_.sent.begin();
      }
    }
  }

  /// The leaf `peer` asks for a task at a time and answers each (forged if `forge`), until
  /// it has sent `most` results, is dropped or the run ends. Returns how many it sent.
  int work(PeerId peer, const std::string& name, bool forge, int most = 1000) {
    int sent = 0;
    bool asked = false;
    for (int round = 0; round < 400 && sent < most && !root_->finished(); ++round) {
      now_ += 0.01;
      if (at_.dropped.contains(peer)) break;
      if (!asked) a_->on_child_message(peer, net::msg::Request{1}, {}, now_);
      asked = true;
      pump();
      for (const auto& [t, payload] : at_.take<net::msg::Task>(peer)) {
        a_->on_child_message(peer, net::msg::Received{{t.task_id}}, {}, now_);
        a_->on_child_message(peer, net::msg::Result{t.task_id, name, 0.01, 0, forge ? forged_checksum : 1.0, false, ""}, {},
                             now_);
        ++sent;
        asked = false;
        pump();
      }
    }
    return sent;
  }

  std::uint64_t tasks_ = 12;
  double now_ = 0;
  RecordingTransport rt_, at_;
  RootRecord rec_;
  std::unique_ptr<NodeDriver> root_, a_;
};

TEST_F(TwoLevels, TheForgerIsDroppedItsHonestParentKeptAndOnlyItsResultsRedone) {
  work(honest, "honest", false, 4);  // some honest results first: they must survive
  const auto before = rec_.recorded.size();
  ASSERT_GT(before, 0u);
  ASSERT_EQ(work(forger, "forger", true, 1), 1);
  ASSERT_EQ(rec_.convictions, (std::vector<std::string>{"forger<a"})) << "the root must convict the forger, not 'a'";
  EXPECT_TRUE(at_.dropped.contains(forger)) << "a must drop the forger";
  const auto told = at_.take<net::msg::Shutdown>(forger);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].first.reason.find("forged"), std::string::npos) << told[0].first.reason;
  EXPECT_FALSE(rt_.dropped.contains(a_peer)) << "the honest inner node was dropped";
  EXPECT_EQ(root_->child_count(), 1u);
  EXPECT_EQ(a_->child_count(), 1u);
  EXPECT_EQ(rec_.recorded.size(), before) << "the honest results were revoked";
  // The forger cannot come back under a.
  a_->on_child_message(PeerId{3}, net::msg::Hello{"forger", 1, 0}, {}, now_);
  EXPECT_TRUE(at_.dropped.contains(PeerId{3}));
  // The honest leaf finishes the run through a, the forged task included.
  work(honest, "honest", false);
  EXPECT_EQ(rec_.recorded.size(), tasks_);
  for (const auto& [task, times] : rec_.times) EXPECT_EQ(times, 1) << "task " << task;
  for (const auto& [task, how] : rec_.recorded) EXPECT_EQ(how.first, "honest");
}

TEST_F(TwoLevels, AnInnerNodeThatNoLongerKnowsTheSenderAnswersUnknown) {
  // An inner node whose record was overwritten (more results forwarded within one round
  // trip than its ledger holds) cannot name the sender: it answers "".
  work(honest, "honest", false, 2);
  net::msg::Blame b{core::TaskId::make(core::AppId{0}, 999).value, "forger", 1};
  a_->on_parent_message(b, {}, now_);
  auto replies = at_.take<net::msg::BlameReply>(parent);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].first.culprit, "");
}

/// The root under a scripted inner child "a" with a leaf "leaf" below it, holding tasks.
struct ScriptedInner {
  RecordingTransport t;
  RootRecord rec;
  std::unique_ptr<NodeDriver> root;
  static constexpr PeerId a{5};
  std::vector<std::uint64_t> held;

  ScriptedInner() {
    root = std::make_unique<NodeDriver>(quiet("master"), t, nullptr, rec.setup(8));
    root->start(0);
    root->on_child_message(a, net::msg::Hello{"a", 0, 0}, {}, 0);
    root->on_child_message(a, net::msg::NodeJoined{"leaf", "a", 1, 0}, {}, 0);
    root->on_child_message(a, net::msg::Request{2}, {}, 0.1);
    for (const auto& [task, payload] : t.take<net::msg::Task>(a)) held.push_back(task.task_id);
  }
  /// a passes up a forged result said computed by `node`; returns the Blame a is sent.
  std::vector<net::msg::Blame> forge(const std::string& node) {
    root->on_child_message(a, net::msg::Result{held.at(0), node, 0.1, 0, forged_checksum, false, ""}, {}, 0.2);
    std::vector<net::msg::Blame> out;
    for (auto& [m, p] : t.take<net::msg::Blame>(a)) out.push_back(m);
    return out;
  }
};

TEST(BlameDriver, TheRootAsksTheInnerChildAndConvictsTheNodeItNames) {
  ScriptedInner s;
  const auto blames = s.forge("leaf");
  ASSERT_EQ(blames.size(), 1u);
  EXPECT_EQ(blames[0].task_id, s.held[0]);
  EXPECT_EQ(blames[0].node, "leaf");
  EXPECT_GT(blames[0].wait_seconds, 0);
  EXPECT_LT(blames[0].wait_seconds, 4) << "a must answer before the root gives up on it";
  EXPECT_FALSE(s.t.dropped.contains(ScriptedInner::a));
  s.root->on_child_message(ScriptedInner::a, net::msg::BlameReply{s.held[0], "leaf"}, {}, 0.3);
  EXPECT_EQ(s.rec.convictions, (std::vector<std::string>{"leaf<a"}));
  EXPECT_FALSE(s.t.dropped.contains(ScriptedInner::a));
  // a dropped 'leaf': a result still in its name is a lie about where it came from.
  s.root->on_child_message(ScriptedInner::a, net::msg::Result{s.held[1], "leaf", 0.1, 0, 1.0, false, ""}, {}, 0.4);
  EXPECT_TRUE(s.t.dropped.contains(ScriptedInner::a));
  EXPECT_TRUE(s.rec.recorded.empty());
}

TEST(BlameDriver, AnInnerChildNamingANodeOutsideItsSubtreeOrNoneIsHeldResponsible) {
  // A lie (a node outside a's subtree) and "no longer known" both convict a itself.
  for (const std::string answer : {"someone-else", ""}) {
    ScriptedInner s;
    ASSERT_EQ(s.forge("leaf").size(), 1u);
    s.root->on_child_message(ScriptedInner::a, net::msg::BlameReply{s.held[0], answer}, {}, 0.3);
    EXPECT_TRUE(s.t.dropped.contains(ScriptedInner::a)) << "'" << answer << "'";
    EXPECT_EQ(s.rec.convictions, (std::vector<std::string>{"a<a*"})) << "'" << answer << "'";
  }
}

TEST(BlameDriver, ASilentInnerChildIsHeldResponsibleAfterTheTimeout) {
  ScriptedInner s;
  ASSERT_EQ(s.forge("leaf").size(), 1u);
  ASSERT_TRUE(s.root->next_deadline().has_value());
  EXPECT_LE(*s.root->next_deadline(), 0.2 + 4);
  s.root->on_timer(3.0);
  EXPECT_FALSE(s.t.dropped.contains(ScriptedInner::a)) << "gave up before the timeout";
  s.root->on_timer(4.3);
  EXPECT_TRUE(s.t.dropped.contains(ScriptedInner::a));
  EXPECT_EQ(s.rec.convictions, (std::vector<std::string>{"a<a*"}));
  const auto told = s.t.take<net::msg::Shutdown>(ScriptedInner::a);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].first.reason.find("did not answer"), std::string::npos) << told[0].first.reason;
  // A late or unasked answer changes nothing more.
  EXPECT_EQ(s.rec.convictions.size(), 1u);
}

TEST(BlameDriver, AResultInTheNameOfANodeOutsideTheChildsSubtreeDropsTheChild) {
  ScriptedInner s;
  s.root->on_child_message(ScriptedInner::a, net::msg::Result{s.held[0], "stranger", 0.1, 0, 1.0, false, ""}, {}, 0.2);
  EXPECT_TRUE(s.t.dropped.contains(ScriptedInner::a));
  EXPECT_TRUE(s.rec.recorded.empty());
}

TEST(BlameDriver, AnUnaskedBlameReplyDropsTheChild) {
  ScriptedInner s;
  s.root->on_child_message(ScriptedInner::a, net::msg::BlameReply{s.held[0], "leaf"}, {}, 0.2);
  EXPECT_TRUE(s.t.dropped.contains(ScriptedInner::a));
  EXPECT_TRUE(s.rec.convictions.empty());
}

TEST(BlameLedger, NamesTheNewestSenderUntilOverwritten) {
  BlameLedger l(4);
  l.record(7, 1);
  l.record(8, BlameLedger::local);
  l.record(7, 2);  // a re-issued task's second result
  EXPECT_EQ(l.who_sent(7), 2u);
  EXPECT_EQ(l.who_sent(8), BlameLedger::local);
  l.retract(7);  // that late copy was dropped, not passed up
  EXPECT_EQ(l.who_sent(7), 1u);
  for (std::uint64_t t = 100; t < 103; ++t) l.record(t, 3);  // wraps: 7's first record is gone
  EXPECT_EQ(l.size(), 4u);
  EXPECT_FALSE(l.who_sent(7).has_value());
  EXPECT_FALSE(l.who_sent(8).has_value());
  EXPECT_EQ(l.who_sent(102), 3u);
  EXPECT_THROW(BlameLedger(0), std::invalid_argument);
}

TEST(BlameLedger, KeepsOrderAcrossItsBlocksAndWrapsAtItsCapacity) {
  // 10,000 records: three blocks of 4,096 entries, the last one cut to the capacity.
  constexpr std::size_t capacity = 10000;
  BlameLedger l(capacity);
  for (std::uint64_t t = 0; t < capacity; ++t) l.record(t, static_cast<std::uint32_t>(t % 7));
  EXPECT_EQ(l.size(), capacity);
  for (std::uint64_t t : {0ull, 4095ull, 4096ull, 8191ull, 8192ull, 9999ull}) EXPECT_EQ(l.who_sent(t), t % 7) << t;
  for (std::uint64_t t = capacity; t < capacity + 5000; ++t) l.record(t, 9);  // overwrites the 5,000 oldest
  EXPECT_EQ(l.size(), capacity);
  EXPECT_FALSE(l.who_sent(4999).has_value());
  EXPECT_EQ(l.who_sent(5000), 5000u % 7);
  EXPECT_EQ(l.who_sent(capacity + 4999), 9u);
  l.record(5000, 3);  // the newest record of a task wins
  EXPECT_EQ(l.who_sent(5000), 3u);
  l.clear();
  EXPECT_EQ(l.size(), 0u);
  EXPECT_FALSE(l.who_sent(5000).has_value());
}

TEST(Blame, TheRootKeepsNoLedgerAnInnerNodeDoes) {
  Blame root(true), inner;
  root.passed_up(7, 1);
  inner.passed_up(7, 1);
  EXPECT_EQ(root.ledger.size(), 0u) << "no Blame ever asks the root";
  EXPECT_EQ(inner.ledger.who_sent(7), 1u);
}

TEST(BlameLedger, WaitingBlamesExpireAndLeaveWithTheirChild) {
  BlameLedger l;
  EXPECT_TRUE(l.expect(1, 5, 10.0));
  EXPECT_FALSE(l.expect(1, 6, 11.0)) << "one Blame per task";
  EXPECT_TRUE(l.expect(2, 6, 12.0));
  EXPECT_EQ(l.next_deadline(), 10.0);
  EXPECT_FALSE(l.answered(2, 5).has_value()) << "only the child asked may answer";
  EXPECT_TRUE(l.expired(9.9).empty());
  const auto gone = l.expired(10.0);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].task_id, 1u);
  EXPECT_EQ(l.forget_child(6).size(), 1u);
  EXPECT_FALSE(l.next_deadline().has_value());
}

}  // namespace
}  // namespace treefarm::node
