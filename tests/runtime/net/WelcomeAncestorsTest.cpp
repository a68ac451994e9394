// Tree repair on the wire (docs/protocol.md): Welcome's optional sender and ancestor chain.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/net/Codec.hpp"

namespace treefarm::net {
namespace {

using ::testing::HasSubstr;

msg::Welcome small_welcome() {
  msg::Welcome w;
  w.policy = "fcfs";
  msg::AppInfo a;
  a.name = "mm";
  a.tasks = 10;
  w.apps.push_back(a);
  return w;
}

const std::string key40(40, 'k');

/// The encoded frame with its last `cut` body bytes removed and the header's length fixed.
std::vector<std::byte> without_tail(std::vector<std::byte> frame, std::size_t cut) {
  frame.resize(frame.size() - cut);
  const auto body = static_cast<std::uint32_t>(frame.size() - header_bytes);
  std::memcpy(frame.data() + 8, &body, 4);  // body_length: after magic, version, kind
  return frame;
}

TEST(WelcomeAncestors, RoundTrip) {
  auto w = small_welcome();
  w.sender = "w1";
  w.ancestors = {{"m", "tcp://10.0.0.1:5555", key40}, {"root", "tcp://[::1]:7", ""}};
  const auto out = std::get<msg::Welcome>(decode(encode(w), 0));
  EXPECT_EQ(out.sender, "w1");
  ASSERT_EQ(out.ancestors.size(), 2u);
  EXPECT_EQ(out.ancestors[0].name, "m");
  EXPECT_EQ(out.ancestors[0].endpoint, "tcp://10.0.0.1:5555");
  EXPECT_EQ(out.ancestors[0].public_key, key40);
  EXPECT_EQ(out.ancestors[1].name, "root");
  EXPECT_EQ(out.ancestors[1].public_key, "");
}

TEST(WelcomeAncestors, AWelcomeWithoutTheChainStillDecodes) {
  // Without sender and ancestors the encoder writes the Welcome of before tree repair
  // (the body ends after `features`), and it decodes with both empty.
  auto w = small_welcome();
  w.features = 1;
  const auto plain = encode(w);
  w.sender = "p";  // trailer: sender (2 + 1 bytes), count 0 (4 bytes)
  const auto with = encode(w);
  ASSERT_EQ(with.size(), plain.size() + 7);
  EXPECT_TRUE(std::equal(plain.begin() + header_bytes, plain.end(), with.begin() + header_bytes));
  const auto out = std::get<msg::Welcome>(decode(without_tail(with, 7), 0));
  EXPECT_EQ(out.features, 1u);
  EXPECT_TRUE(out.sender.empty());
  EXPECT_TRUE(out.ancestors.empty());
  // Cut inside the chain instead: truncated, refused.
  EXPECT_THROW(decode(without_tail(with, 3), 0), DecodeError);
}

TEST(WelcomeAncestors, BadChainsAreRefused) {
  auto w = small_welcome();
  w.ancestors.assign(max_ancestors + 1, msg::Ancestor{"a", "tcp://h:1", ""});
  EXPECT_THROW(encode(w), std::invalid_argument);
  w.ancestors.resize(max_ancestors);
  EXPECT_EQ(std::get<msg::Welcome>(decode(encode(w), 0)).ancestors.size(), max_ancestors);
  // One more entry written by hand past the limit: the count is checked before the entries.
  auto frame = encode(w);
  const std::uint32_t too_many = max_ancestors + 1;
  const std::size_t count_at = frame.size() - max_ancestors * (2 + 1 + 2 + 9 + 2) - 4;
  std::memcpy(frame.data() + count_at, &too_many, 4);
  try {
    decode(frame, 0);
    ADD_FAILURE() << "too many ancestors accepted";
  } catch (const DecodeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("ancestors"));
  }
  for (const auto& bad : {msg::Ancestor{"", "tcp://h:1", ""}, msg::Ancestor{"a", "", ""},
                          msg::Ancestor{"a", "tcp://h:1", "short-key"}}) {
    auto x = small_welcome();
    x.ancestors = {bad};
    EXPECT_THROW(decode(encode(x), 0), DecodeError) << bad.name << " " << bad.endpoint << " " << bad.public_key;
  }
}

}  // namespace
}  // namespace treefarm::net
