// Tests of a bag task's placeholders in front of its input (tasks/TaskEnvelope.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tasks/TaskEnvelope.hpp"

namespace treefarm::tasks {
namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

TEST(TaskEnvelope, FieldsAndInputComeBackAsWritten) {
  std::vector<std::byte> out;
  write_envelope({{"name", "a.txt"}, {"stem", "a"}, {"line", ""}}, bytes_of("hello"), out);
  const auto e = read_envelope(out);
  ASSERT_EQ(e.fields.size(), 3u);
  EXPECT_EQ(e.fields[0].second, "a.txt");
  EXPECT_EQ(e.fields[2].second, "");
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(e.input.data()), e.input.size()), "hello");
  EXPECT_TRUE(e.error().empty());
  write_envelope({{"!error", "cannot read"}}, {}, out);
  EXPECT_EQ(read_envelope(out).error(), "cannot read");
}

TEST(TaskEnvelope, ABrokenEnvelopeIsRefusedNotRead) {
  std::vector<std::byte> out;
  write_envelope({{"name", "a.txt"}}, bytes_of("x"), out);
  EXPECT_THROW(read_envelope(std::span(out).first(3)), std::invalid_argument);
  for (std::size_t cut = 8; cut < 8 + 2 + 4 + 4; ++cut)
    EXPECT_THROW(read_envelope(std::span(out).first(cut)), std::invalid_argument) << cut;
  auto bad = out;
  bad[0] = std::byte{'X'};
  EXPECT_THROW(read_envelope(bad), std::invalid_argument);
  bad = out;
  bad[4] = std::byte{0xff};
  bad[5] = std::byte{0xff};
  EXPECT_THROW(read_envelope(bad), std::invalid_argument) << "65535 fields";
  EXPECT_THROW(read_envelope(bytes_of("plain text input")), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::tasks
