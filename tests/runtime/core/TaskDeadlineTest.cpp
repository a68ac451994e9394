// Task deadlines in the node scheduler (docs/fault-tolerance.md, "Task deadlines"): a task
// a child holds past its deadline is re-issued to another consumer, never back to a
// holder; the first result wins and the second is a duplicate that blames nobody.
#include "runtime/core/NodeScheduler.hpp"

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

NodeConfig with_deadlines(NodeConfig c, double factor, double floor, std::uint32_t max_reissues = 2) {
  c.deadline_factor = factor;
  c.deadline_floor = floor;
  c.max_reissues = max_reissues;
  return c;
}

TEST(NodeSchedulerDeadline, DeadlineIsTheFloorOrFactorTimesTheTasksQueuedAhead) {
  auto cfg = with_deadlines(node_config(true, 4, {app("a", 1, 10)}, /*one_port=*/false), 4, 5);
  cfg.local_seconds = {2.0};  // calibrated: 2 s per task here
  auto root = make_node(std::move(cfg));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 3}, 1)),
            (Strings{"SendTask child 1 0:0", "SendTask child 1 0:1", "SendTask child 1 0:2"}));
  // 1, 2 and 3 tasks held by the child: max(5, 4 x 2 s x q) after t = 1.
  EXPECT_DOUBLE_EQ(*root->deadline_of(task(0, 0).id), 1 + 8);
  EXPECT_DOUBLE_EQ(*root->deadline_of(task(0, 1).id), 1 + 16);
  EXPECT_DOUBLE_EQ(*root->deadline_of(task(0, 2).id), 1 + 24);
  EXPECT_DOUBLE_EQ(*root->next_deadline(), 9);
  // A result disarms its deadline and teaches the child's turnaround (4 s).
  root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 5);
  EXPECT_FALSE(root->deadline_of(task(0, 0).id));
  EXPECT_DOUBLE_EQ(root->state().children.at(ChildId{1}).turnaround, 4.0);
  EXPECT_DOUBLE_EQ(*root->next_deadline(), 17);

  // Disabled (factor 0, the core's default): no deadline at all.
  auto plain = make_node(node_config(true, 4, {app("a", 1, 10)}, false));
  plain->start(0);
  plain->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  plain->handle(event::WorkRequested{child(1), 1}, 0);
  EXPECT_FALSE(plain->deadline_of(task(0, 0).id));
  EXPECT_FALSE(plain->next_deadline());
  EXPECT_THROW(make_node(with_deadlines(node_config(true, 4, {app("a", 1, 1)}), -1, 5)), std::invalid_argument);
}

TEST(NodeSchedulerDeadline, LateCopyWinsWhenItsResultComesFirst) {
  auto root = make_node(with_deadlines(node_config(true, 2, {app("a", 1, 3)}, false), 4, 10));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 0)), Strings{"SendTask child 1 0:0"});
  EXPECT_EQ(names(root->handle(event::Tick{}, 9.9)), Strings{});
  EXPECT_EQ(root->reissued(), 0u);
  // Past the deadline: re-issued, waiting for a consumer other than child 1.
  EXPECT_EQ(names(root->handle(event::Tick{}, 10)), Strings{});
  EXPECT_EQ(root->reissued(), 1u);
  EXPECT_EQ(root->reissue_pending(), 1u);
  EXPECT_EQ(root->state().children.at(ChildId{1}).in_flight, 0u);
  // Child 2 asks: the re-issued task goes first, before the buffered ones.
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 11)), Strings{"SendTask child 2 0:0"});
  // The slow child's result comes first: it wins; child 2's copy is the late one now.
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 12)), Strings{"TaskCompleted 0:0"});
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{2}, task(0, 0)}, 13)),
            Strings{"TaskCompleted 0:0 (duplicate)"})
      << "the second copy's result is a duplicate, not a protocol error";
  EXPECT_EQ(root->completed(), 1u);
  EXPECT_EQ(root->duplicates(), 1u);
  EXPECT_EQ(root->late_duplicates(), 1u);
  EXPECT_EQ(root->in_flight(), 0u);
  // A third result for it is refused: nobody holds it any more.
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 14), ProtocolError);
  // Both children are still there and the run completes with every task once.
  root->handle(event::WorkRequested{child(1), 1}, 15);
  root->handle(event::WorkRequested{child(2), 1}, 15);
  root->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 16);
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{2}, task(0, 2)}, 16)),
            (Strings{"TaskCompleted 0:2", "RunComplete"}));
  EXPECT_TRUE(root->run_complete());
}

TEST(NodeSchedulerDeadline, InnerNodeForwardsTheFirstResultAndDropsTheLateOne) {
  // A worker with one slow child and its own executor: the executor takes the re-issued
  // task; its result goes up first; the child's late result is dropped, the child kept.
  auto node = make_node(with_deadlines(node_config(false, 2, {app("a", 1, 10)}, false), 4, 10));
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  EXPECT_EQ(names(node->handle(event::WorkRequested{child(1), 1}, 0)), Strings{"RequestWork x2"});
  EXPECT_EQ(names(node->handle(event::TaskArrived{task(0, 0)}, 1)), (Strings{"SendTask child 1 0:0", "RequestWork x1"}));
  node->handle(event::TaskArrived{task(0, 1)}, 1);  // buffered
  node->handle(event::Tick{}, 11);
  EXPECT_EQ(node->reissue_pending(), 1u);
  // The executor asks: the re-issued task goes before the buffered 0:1.
  EXPECT_EQ(names(node->handle(event::WorkRequested{Target::executor(), 1}, 12)),
            (Strings{"StartTask 0:0"}));
  EXPECT_EQ(names(node->handle(event::LocalTaskFinished{task(0, 0), 1.0}, 13)), Strings{"ForwardResult 0:0"});
  EXPECT_EQ(names(node->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 14)),
            Strings{"LateResultDropped 0:0 from child 1"});
  EXPECT_TRUE(node->state().children.contains(ChildId{1}));
  // The other way round: the child's late result first, the executor's copy dropped.
  node->handle(event::WorkRequested{child(1), 1}, 15);  // gets 0:1
  EXPECT_DOUBLE_EQ(*node->deadline_of(task(0, 1).id), 25);
  node->handle(event::Tick{}, 25);
  node->handle(event::TaskArrived{task(0, 2)}, 25);
  EXPECT_EQ(names(node->handle(event::WorkRequested{Target::executor(), 1}, 26)), Strings{"StartTask 0:1"});
  EXPECT_EQ(names(node->handle(event::ResultArrived{ChildId{1}, task(0, 1)}, 27)), Strings{"ForwardResult 0:1"});
  EXPECT_EQ(names(node->handle(event::LocalTaskFinished{task(0, 1), 1.0}, 28)),
            Strings{"LateResultDropped 0:1 from the executor"});
  EXPECT_EQ(node->late_duplicates(), 2u);
  EXPECT_EQ(node->in_flight(), 0u);
}

TEST(NodeSchedulerDeadline, NeverReissuedToAHolderAndAtMostMaxReissues) {
  auto root = make_node(with_deadlines(node_config(true, 2, {app("a", 1, 4)}, false), 4, 10, /*max_reissues=*/1));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::WorkRequested{child(1), 1}, 0);  // 0:0
  root->handle(event::Tick{}, 10);
  EXPECT_EQ(root->reissue_pending(), 1u);
  // The holder asks again: it gets a fresh task, never a second copy of 0:0.
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 11)), Strings{"SendTask child 1 0:1"});
  EXPECT_EQ(root->reissue_pending(), 1u);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 12);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(2), 1}, 12)), Strings{"SendTask child 2 0:0"});
  // Child 2 is slow too, but 0:0 was re-issued once already (max 1): both are waited for.
  root->handle(event::Tick{}, 30);
  EXPECT_EQ(root->reissued(), 2u) << "0:1 at child 1 expired too (first re-issue)";
  EXPECT_EQ(root->reissue_pending(), 1u);
  EXPECT_EQ(root->state().children.at(ChildId{2}).in_flight, 1u) << "0:0 stays with child 2";
}

TEST(NodeSchedulerDeadline, AHolderThatLeavesTakesItsLateCopiesAlong) {
  auto root = make_node(with_deadlines(node_config(true, 2, {app("a", 1, 2)}, false), 4, 10));
  root->start(0);
  root->handle(event::ChildJoined{ChildId{1}, {}}, 0);
  root->handle(event::ChildJoined{ChildId{2}, {}}, 0);
  root->handle(event::WorkRequested{child(1), 1}, 0);  // 0:0
  root->handle(event::Tick{}, 10);
  root->handle(event::WorkRequested{child(2), 1}, 10);  // 0:0 again
  // Child 2, the new holder, dies: 0:0 must not go back to child 1 (it has a copy).
  root->handle(event::ChildLeft{ChildId{2}}, 11);
  EXPECT_EQ(root->reissue_pending(), 1u);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(1), 1}, 12)), Strings{"SendTask child 1 0:1"});
  // Child 1's late copy still counts.
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{1}, task(0, 0)}, 13)), Strings{"TaskCompleted 0:0"});
  EXPECT_EQ(root->reissue_pending(), 0u);
  // Child 1 leaves: its late copies go with it; a result from a stranger is refused.
  root->handle(event::ChildLeft{ChildId{1}}, 14);
  root->handle(event::ChildJoined{ChildId{3}, {}}, 15);
  EXPECT_THROW(root->handle(event::ResultArrived{ChildId{3}, task(0, 0)}, 15), ProtocolError);
  EXPECT_EQ(names(root->handle(event::WorkRequested{child(3), 1}, 16)), Strings{"SendTask child 3 0:1"});
  EXPECT_EQ(names(root->handle(event::ResultArrived{ChildId{3}, task(0, 1)}, 17)),
            (Strings{"TaskCompleted 0:1", "RunComplete"}));
  EXPECT_EQ(root->duplicates(), 0u);
}

}  // namespace
}  // namespace treefarm::core::testing
