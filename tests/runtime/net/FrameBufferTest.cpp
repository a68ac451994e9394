/// Tests of runtime/net/FrameBuffer: growing a frame leaves the new bytes as they are (no
/// zero-fill pass under a payload its writer fills anyway); otherwise it keeps what was
/// appended. Whether growth writes is seen without reading an unwritten byte: a buffer of
/// 40 MiB is fresh anonymous pages (malloc maps it), and mincore(2) tells which were touched.

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/net/FrameBuffer.hpp"

namespace treefarm::net {
namespace {

/// Above glibc's largest mmap threshold (32 MiB): malloc maps fresh pages for it.
constexpr std::size_t big = 40u << 20;

/// Pages of [data, data + bytes) resident (touched) so far, the first (which may hold the
/// allocator's header) left out.
std::size_t touched_pages(const std::byte* data, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = (reinterpret_cast<std::uintptr_t>(data) + page) & ~(page - 1);  // the next page boundary
  const auto last = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(page - 1);
  std::vector<unsigned char> in((last - first) / page);
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(first), last - first, in.data()), 0);
  std::size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

/// Pages that growing a fresh `Buffer` by resize() over `big` bytes wrote; -1 when the
/// memory was not fresh (cannot tell).
template <class Buffer>
long pages_written_by_growth() {
  Buffer f;
  f.reserve(big);
  if (touched_pages(f.data(), big) != 0) return -1;
  f.resize(big);
  return static_cast<long>(touched_pages(f.data(), big));
}

TEST(FrameBuffer, GrowingDoesNotWriteTheRoomItAdds) {
  const long zeroing = pages_written_by_growth<std::vector<std::byte>>();  // a vector zero-fills
  if (zeroing < 0) GTEST_SKIP() << "malloc did not give fresh pages";
  ASSERT_GT(zeroing, 0) << "mincore does not see written pages here";
  const long written = pages_written_by_growth<FrameBuffer>();
  if (written < 0) GTEST_SKIP() << "malloc did not give fresh pages";
  EXPECT_EQ(written, 0) << "resize() wrote the room it added";
}

TEST(FrameBuffer, GrowingPastItsRoomKeepsTheBytesAppended) {
  FrameBuffer f;
  std::vector<std::byte> expected;
  for (std::size_t i = 0; i < 100000; ++i) {
    const std::byte b{static_cast<unsigned char>(i * 7)};
    const std::byte two[2] = {b, ~b};
    f.insert(f.end(), two, two + 2);
    expected.insert(expected.end(), two, two + 2);
  }
  ASSERT_EQ(f.size(), expected.size());
  EXPECT_TRUE(std::equal(f.begin(), f.end(), expected.begin()));
  EXPECT_GE(f.capacity(), f.size());
}

TEST(FrameBuffer, ValuesGivenAreWritten) {
  FrameBuffer f(3, std::byte{7});
  f.insert(f.end(), 2, std::byte{9});
  f.push_back(std::byte{1});
  EXPECT_EQ(f, (FrameBuffer{std::byte{7}, std::byte{7}, std::byte{7}, std::byte{9}, std::byte{9}, std::byte{1}}));
  FrameBuffer moved(std::move(f));
  EXPECT_EQ(moved.size(), 6u);
  EXPECT_TRUE(f.empty());  // NOLINT(bugprone-use-after-move): a moved-from buffer is empty
  EXPECT_THROW(moved.insert(moved.begin(), 1, std::byte{0}), std::logic_error) << "appends only";
}

}  // namespace
}  // namespace treefarm::net
