/// Tests of the codec's fields for command applications: the argument vector,
/// timeout and expected digest travel in Welcome; a task's error text up to
/// max_text_bytes travels in Result; bad values are DecodeErrors.

#include <cstring>
#include <span>
#include <stdexcept>
#include <string_view>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/net/Batch.hpp"
#include "runtime/net/Codec.hpp"

namespace treefarm::net {
namespace {

msg::Welcome command_welcome() {
  msg::Welcome w;
  w.policy = "fcfs";
  msg::AppInfo a;
  a.name = "gz";
  a.kernel = 4;  // model::Kernel::command
  a.bytes = 4096;
  a.tasks = 10;
  a.argv = {"sh", "-c", std::string(1500, 'x') + " {index} {input} {output}"};
  a.timeout = 2.5;
  a.expect_digest = std::string(64, 'a');
  a.max_output_bytes = 1 << 20;
  w.apps.push_back(a);
  msg::AppInfo k;  // a kernel application beside it carries none of these
  k.name = "mm";
  k.kernel = 0;
  k.n = 8;
  w.apps.push_back(k);
  return w;
}

Message round_trip(const Message& m) {
  const auto frame = encode(m);
  return decode(std::span<const std::byte>(frame), payload_frames_of(m));
}

TEST(CommandCodec, WelcomeCarriesTheCommand) {
  const auto in = command_welcome();
  const auto out = std::get<msg::Welcome>(round_trip(in));
  ASSERT_EQ(out.apps.size(), 2u);
  EXPECT_EQ(out.apps[0].argv, in.apps[0].argv);
  EXPECT_EQ(out.apps[0].timeout, 2.5);
  EXPECT_EQ(out.apps[0].expect_digest, in.apps[0].expect_digest);
  EXPECT_EQ(out.apps[0].max_output_bytes, 1u << 20);
  EXPECT_TRUE(out.apps[1].argv.empty());
  EXPECT_EQ(out.apps[1].n, 8u);
}

TEST(CommandCodec, ResultCarriesALongErrorText) {
  msg::Result r;
  r.task_id = 3;
  r.node = "w1";
  r.failed = true;
  r.error = std::string(max_text_bytes, 'e');
  EXPECT_EQ(std::get<msg::Result>(round_trip(r)).error, r.error);
  r.error += "more";  // cut to the limit, not refused
  EXPECT_EQ(std::get<msg::Result>(round_trip(r)).error.size(), max_text_bytes);
}

TEST(CommandCodec, BadCommandFieldsAreDecodeErrors) {
  auto w = command_welcome();
  auto frame = encode(w);
  // The timeout is the 8 bytes after the last argument: make it negative.
  const std::string last = w.apps[0].argv.back();
  const auto* base = reinterpret_cast<const char*>(frame.data());
  const auto at = std::string_view(base, frame.size()).find(last);
  ASSERT_NE(at, std::string_view::npos);
  const double negative = -1;
  std::memcpy(frame.data() + at + last.size(), &negative, sizeof negative);
  EXPECT_THROW(decode(std::span<const std::byte>(frame), 0), DecodeError);

  auto empty_program = command_welcome();
  empty_program.apps[0].argv = {""};
  auto frame2 = encode(empty_program);
  EXPECT_THROW(decode(std::span<const std::byte>(frame2), 0), DecodeError);

  auto no_args = command_welcome();
  no_args.apps[0].argv.clear();
  EXPECT_THROW(encode(no_args), std::invalid_argument);
}

// Output files (docs/command-tasks.md): a Result may carry its output in one payload frame.
TEST(CommandCodec, ResultWithAnOutputDeclaresOnePayloadFrameAndWithoutKeepsItsBytes) {
  msg::Result plain;
  plain.task_id = 7;
  plain.node = "w1";
  plain.checksum = 42;
  const auto plain_frame = encode(plain);
  msg::Result with = plain;
  with.has_output = true;
  with.output_bytes = 12345;
  const auto with_frame = encode(with);
  EXPECT_EQ(payload_frames_of(plain), 0u);
  EXPECT_EQ(payload_frames_of(with), 1u);
  EXPECT_EQ(with_frame.size(), plain_frame.size() + 9);  // the optional trailing byte and size
  const auto back = std::get<msg::Result>(decode(std::span<const std::byte>(with_frame), 1));
  EXPECT_TRUE(back.has_output);
  EXPECT_EQ(back.output_bytes, 12345u);
  EXPECT_FALSE(std::get<msg::Result>(decode(std::span<const std::byte>(plain_frame), 0)).has_output);
  // The frame count must match what the body says, both ways.
  EXPECT_THROW(decode(std::span<const std::byte>(with_frame), 0), DecodeError);
  EXPECT_THROW(decode(std::span<const std::byte>(plain_frame), 1), DecodeError);
}

TEST(CommandCodec, ResultOutputBoundsAreChecked) {
  msg::Result r;
  r.task_id = 1;
  r.node = "w1";
  r.has_output = true;
  r.output_bytes = max_payload_bytes + 1;
  EXPECT_THROW(encode(r), std::invalid_argument);
  r.output_bytes = max_payload_bytes;
  auto frame = encode(r);
  EXPECT_EQ(std::get<msg::Result>(decode(std::span<const std::byte>(frame), 1)).output_bytes, max_payload_bytes);
  // Forge a size over the limit in the last 8 bytes, then a has_output byte other than 1.
  const std::uint64_t over = max_payload_bytes + 1;
  std::memcpy(frame.data() + frame.size() - 8, &over, sizeof over);
  EXPECT_THROW(decode(std::span<const std::byte>(frame), 1), DecodeError);
  auto bad_flag = encode(r);
  bad_flag[bad_flag.size() - 9] = std::byte{2};
  EXPECT_THROW(decode(std::span<const std::byte>(bad_flag), 1), DecodeError);
  // Truncated after the flag: the size is missing (the header's body length made to fit).
  auto cut = encode(r);
  cut.resize(cut.size() - 8);
  const auto body = static_cast<std::uint32_t>(cut.size() - header_bytes);
  std::memcpy(cut.data() + 8, &body, sizeof body);
  EXPECT_THROW(decode(std::span<const std::byte>(cut), 1), DecodeError);
  // A Welcome's output limit over the wire's payload limit is refused.
  auto w = command_welcome();
  w.apps[0].max_output_bytes = max_payload_bytes + 1;
  EXPECT_THROW(decode(std::span<const std::byte>(encode(w)), 0), DecodeError);
}

TEST(CommandCodec, ResultsWithAndWithoutOutputsShareABatchFrame) {
  msg::Result a;
  a.task_id = 1;
  a.node = "w1";
  msg::Result b = a;
  b.task_id = 2;
  b.has_output = true;
  const std::vector<std::byte> output = {std::byte{'g'}, std::byte{'z'}, std::byte{'!'}};
  b.output_bytes = output.size();
  BatchWriter writer;
  EXPECT_TRUE(BatchWriter::batchable(b, output.size()));
  EXPECT_FALSE(BatchWriter::batchable(b, max_batched_payload_bytes + 1));  // a big output travels alone
  ASSERT_TRUE(writer.add(a));
  ASSERT_TRUE(writer.add(b, output));
  ASSERT_TRUE(writer.add(a));
  const auto frame = writer.take();
  const auto entries = decode_batch(frame);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_FALSE(entries[0].has_payload);
  ASSERT_TRUE(entries[1].has_payload);
  EXPECT_EQ(entries[1].payload_size, output.size());
  EXPECT_EQ(std::memcmp(frame.data() + entries[1].payload_offset, output.data(), output.size()), 0);
  EXPECT_TRUE(std::get<msg::Result>(entries[1].message).has_output);
  EXPECT_FALSE(entries[2].has_payload);
  EXPECT_THROW(writer.add(a, output), std::invalid_argument);  // no payload without has_output
}

}  // namespace
}  // namespace treefarm::net
