/// Tests of the codec's fields for command applications (issue 20): the argument vector,
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
  return decode(std::span<const std::byte>(frame), payload_frames_for(kind_of(m)));
}

TEST(CommandCodec, WelcomeCarriesTheCommand) {
  const auto in = command_welcome();
  const auto out = std::get<msg::Welcome>(round_trip(in));
  ASSERT_EQ(out.apps.size(), 2u);
  EXPECT_EQ(out.apps[0].argv, in.apps[0].argv);
  EXPECT_EQ(out.apps[0].timeout, 2.5);
  EXPECT_EQ(out.apps[0].expect_digest, in.apps[0].expect_digest);
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

}  // namespace
}  // namespace treefarm::net
