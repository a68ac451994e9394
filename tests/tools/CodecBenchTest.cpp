/// Tests of tools/bench/CodecBench: the MessagePack codec it measures ours against is a
/// real, checking codec (round trip, rejection of malformed input), and the benchmark's
/// figures are those of the two codecs' actual encodings.

#include "tools/bench/CodecBench.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/net/Codec.hpp"

namespace {

using namespace treefarm;

net::msg::Result sample_result() {
  net::msg::Result r;
  r.task_id = 77;
  r.node = "worker-17";
  r.compute_seconds = 0.5;
  r.queued_seconds = 0.25;
  r.checksum = std::numeric_limits<double>::quiet_NaN();  // allowed: the master judges
  r.failed = true;
  r.error = "kernel failed";
  return r;
}

TEST(CodecBench, MsgpackCodecRoundTrips) {
  EXPECT_EQ(bench::msgpack_decode_task(bench::msgpack_encode(net::msg::Task{1ull << 40})).task_id, 1ull << 40);
  const auto r = sample_result();
  const auto d = bench::msgpack_decode_result(bench::msgpack_encode(r));
  EXPECT_EQ(d.task_id, r.task_id);
  EXPECT_EQ(d.node, r.node);
  EXPECT_EQ(d.compute_seconds, r.compute_seconds);
  EXPECT_EQ(d.queued_seconds, r.queued_seconds);
  EXPECT_TRUE(std::isnan(d.checksum));
  EXPECT_TRUE(d.failed);
  EXPECT_EQ(d.error, r.error);
}

TEST(CodecBench, MsgpackCodecRejectsMalformedInput) {
  const auto task = bench::msgpack_encode(net::msg::Task{5});
  const auto result = bench::msgpack_encode(sample_result());
  // Truncated, with trailing bytes, of the other kind, with a bad magic.
  EXPECT_THROW(bench::msgpack_decode_task(std::span<const char>(task).first(task.size() - 1)), net::DecodeError);
  auto longer = task;
  longer.push_back('\0');
  EXPECT_THROW(bench::msgpack_decode_task(longer), net::DecodeError);
  EXPECT_THROW(bench::msgpack_decode_task(result), net::DecodeError);
  EXPECT_THROW(bench::msgpack_decode_result(task), net::DecodeError);
  auto bad_magic = task;
  bad_magic[2] = static_cast<char>(bad_magic[2] ^ 1);  // inside the uint32 magic (0x94 0xce m m m m ...)
  EXPECT_THROW(bench::msgpack_decode_task(bad_magic), net::DecodeError);
  // A non-finite compute time is refused, as by ours.
  auto r = sample_result();
  r.compute_seconds = std::numeric_limits<double>::infinity();
  EXPECT_THROW(bench::msgpack_decode_result(bench::msgpack_encode(r)), net::DecodeError);
}

TEST(CodecBench, JsonReportsBothCodecsWithTheirRealSizes) {
  std::ostringstream out;
  ASSERT_EQ(bench::bench_codec(out, {.messages = 200, .rounds = 3, .json = true}), 0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("benchmark"), "codec");
  ASSERT_EQ(j.at("results").size(), 4u);
  net::msg::Result result;
  result.node = "worker-17";
  const std::size_t ours_task = net::encode(net::Message{net::msg::Task{1}}).size();
  const std::size_t ours_result = net::encode(net::Message{result}).size();
  EXPECT_EQ(ours_task, net::header_bytes + 8);  // header + task id
  for (const auto& r : j.at("results")) {
    SCOPED_TRACE(r.dump());
    EXPECT_GT(r.at("encode_ns").get<double>(), 0);
    EXPECT_GT(r.at("decode_ns").get<double>(), 0);
    const bool task = r.at("message") == "Task";
    const auto bytes = r.at("bytes").get<std::size_t>();
    if (r.at("codec") == "treefarm")
      EXPECT_EQ(bytes, task ? ours_task : ours_result);
    else
      EXPECT_EQ(bytes, task ? bench::msgpack_encode(net::msg::Task{123456789}).size()
                            : bench::msgpack_encode(net::msg::Result{123456789, "worker-17", 0.0123, 0.0004, 5.25e6,
                                                                     false, ""})
                                  .size());
  }
}

TEST(CodecBench, TextNamesEveryFigureAndRejectsZeroOptions) {
  std::ostringstream out;
  ASSERT_EQ(bench::bench_codec(out, {.messages = 100, .rounds = 1, .json = false}), 0);
  const std::string s = out.str();
  EXPECT_NE(s.find("Task: msgpack / treefarm = "), std::string::npos) << s;
  EXPECT_NE(s.find("Result: msgpack / treefarm = "), std::string::npos) << s;
  std::ostringstream ignored;
  EXPECT_THROW(bench::bench_codec(ignored, {.messages = 0}), std::invalid_argument);
  EXPECT_THROW(bench::bench_codec(ignored, {.messages = 1, .rounds = 0}), std::invalid_argument);
}

}  // namespace
