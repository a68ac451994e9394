// master/RootInputs: the input of every task, whichever way it is made (a slab of small
// inputs, made when sent straight into a frame, generated ahead), is byte for byte the
// input fill_input makes from the task's seed under the run secret.
#include "master/RootInputs.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/model/Experiment.hpp"
#include "runtime/net/Batch.hpp"
#include "runtime/zmq/MadeBytes.hpp"
#include "tasks/Payload.hpp"

namespace treefarm::master {
namespace {

model::Experiment experiment(const std::string& app_lines) {
  return model::parse_experiment("[[node]]\nname = \"master\"\ncores = 1\n\n[[app]]\nname = \"a\"\n" + app_lines + "tasks = 100\n",
                                 "inputs.toml");
}

/// The input of task `index` of application 0 made the way the workers' inputs always were.
std::vector<std::byte> reference(const RootInputs& inputs, const model::AppSpec& app, std::uint64_t index) {
  std::vector<std::byte> out;
  tasks::fill_input(app, inputs.secret().input_seed(0, index), 0, 0, out);
  return out;
}

TEST(RootInputs, AnInputWrittenIntoABatchFrameIsTheInputGeneratedWholeByteForByte) {
  const auto ex = experiment("kernel = \"matmul\"\nn = 32\n");  // 16 KiB: made when sent
  RootInputs inputs(ex, false);
  net::BatchWriter batch;
  std::vector<std::uint64_t> written;  // task indices, in frame order
  for (std::uint64_t i : {0u, 1u, 7u, 99u}) {
    const node::Payload p = inputs.payload(core::TaskId::make(core::AppId{0}, i));
    ASSERT_NE(dynamic_cast<const zmq_node::MadeBytes*>(p.get()), nullptr) << "not made on demand";
    ASSERT_EQ(p->size(), ex.apps[0].input_bytes());
    auto room = batch.add_room(net::msg::Task{i}, p->size());
    ASSERT_TRUE(room);
    static_cast<const zmq_node::MadeBytes&>(*p).write_to(*room);
    written.push_back(i);
  }
  const auto frame = batch.take();
  const auto entries = net::decode_batch(frame);
  ASSERT_EQ(entries.size(), written.size());
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const auto expected = reference(inputs, ex.apps[0], written[e]);
    ASSERT_EQ(entries[e].payload_size, expected.size());
    EXPECT_EQ(std::memcmp(frame.data() + entries[e].payload_offset, expected.data(), expected.size()), 0)
        << "task " << written[e];
  }
  // Different tasks, different inputs (the check above could not pass on a constant).
  EXPECT_NE(reference(inputs, ex.apps[0], 0), reference(inputs, ex.apps[0], 1));
}

TEST(RootInputs, AnInputReadWholeIsMadeOnceAndIsTheSameBytesOnEveryThread) {
  const auto ex = experiment("kernel = \"matadd\"\nn = 40\n");  // 25,600 bytes
  RootInputs inputs(ex, false);
  const node::Payload p = inputs.payload(core::TaskId::make(core::AppId{0}, 5));
  const auto* made = dynamic_cast<const zmq_node::MadeBytes*>(p.get());
  ASSERT_NE(made, nullptr);
  const auto expected = reference(inputs, ex.apps[0], 5);
  std::vector<const std::byte*> seen(4);
  std::vector<std::thread> readers;
  for (std::size_t t = 0; t < seen.size(); ++t) readers.emplace_back([&, t] { seen[t] = p->data(); });
  for (auto& r : readers) r.join();
  for (const auto* d : seen) EXPECT_EQ(d, seen[0]);  // one buffer, made once
  ASSERT_EQ(p->size(), expected.size());
  EXPECT_EQ(std::memcmp(p->data(), expected.data(), expected.size()), 0);
  std::vector<std::byte> again(p->size());
  made->write_to(again);
  EXPECT_EQ(again, expected);
}

// A tree on one machine (made_when_sent): an input too large for a batch (a matadd of order
// 512: 4 MiB) is made when sent too — written once into the child's slot, nothing generated
// ahead — and is the same bytes; the default keeps generating it ahead into a plain buffer.
TEST(RootInputs, ALargeInputMadeWhenSentIsTheGeneratedOneAndNothingIsMadeAhead) {
  const auto ex = experiment("kernel = \"matadd\"\nn = 512\n");
  RootInputs ahead(ex, false);
  EXPECT_EQ(dynamic_cast<const zmq_node::MadeBytes*>(ahead.payload(core::TaskId::make(core::AppId{0}, 0)).get()), nullptr);
  RootInputs inputs(ex, false, true);
  const node::Payload p = inputs.payload(core::TaskId::make(core::AppId{0}, 3));
  const auto* made = dynamic_cast<const zmq_node::MadeBytes*>(p.get());
  ASSERT_NE(made, nullptr) << "not made when sent";
  const auto expected = reference(inputs, ex.apps[0], 3);
  ASSERT_EQ(p->size(), expected.size());
  std::vector<std::byte> slot(p->size());
  made->write_to(slot);
  EXPECT_EQ(slot, expected);
  EXPECT_NE(inputs.summary().find("0 task inputs generated"), std::string::npos) << inputs.summary();
  EXPECT_NE(inputs.summary().find("1 made when sent"), std::string::npos) << inputs.summary();
}

TEST(RootInputs, SmallAndLargeInputsAreTheGeneratedOnesToo) {
  for (const std::string lines : {"kernel = \"noop\"\nbytes = 16\n", "kernel = \"matmul\"\nn = 100\n"}) {
    const auto ex = experiment(lines);  // a slab's 16 bytes; 160,000 bytes generated ahead
    RootInputs inputs(ex, false);
    for (std::uint64_t i : {0u, 3u}) {
      const node::Payload p = inputs.payload(core::TaskId::make(core::AppId{0}, i));
      EXPECT_EQ(dynamic_cast<const zmq_node::MadeBytes*>(p.get()), nullptr) << lines;
      const auto expected = reference(inputs, ex.apps[0], i);
      ASSERT_EQ(p->size(), expected.size()) << lines;
      EXPECT_EQ(std::memcmp(p->data(), expected.data(), expected.size()), 0) << lines;
    }
  }
}

}  // namespace
}  // namespace treefarm::master
