#pragma once
/// @file FrameBuffer.hpp
/// The bytes of a frame being built (a batch frame, runtime/net/Batch.hpp): a growable
/// byte array whose growth leaves the new bytes as they are instead of zero-filling them. A
/// batch makes room for each payload (16 KiB for a matmul of order 32) that its writer fills
/// at once; the zero-fill of a std::vector<std::byte> was a second pass over every input the
/// master sends. (A std::vector with a default-initialising allocator would do the same, but
/// libstdc++ then moves its bytes one at a time when it grows: 7 % of a bench's samples.)

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <stdexcept>

namespace treefarm::net {

/// A frame under construction: resize() leaves the bytes it adds unwritten; growth copies
/// the bytes with memcpy. Appends only (insert() at end()).
class FrameBuffer {
 public:
  FrameBuffer() = default;
  FrameBuffer(std::size_t n, std::byte value) { insert(end(), n, value); }
  FrameBuffer(std::initializer_list<std::byte> values) { insert(end(), values.begin(), values.end()); }
  FrameBuffer(FrameBuffer&& o) noexcept : bytes_(std::move(o.bytes_)), size_(o.size_), capacity_(o.capacity_) {
    o.size_ = o.capacity_ = 0;
  }
  FrameBuffer& operator=(FrameBuffer&& o) noexcept {
    bytes_ = std::move(o.bytes_);
    size_ = o.size_;
    capacity_ = o.capacity_;
    o.size_ = o.capacity_ = 0;
    return *this;
  }

  std::byte* data() { return bytes_.get(); }
  const std::byte* data() const { return bytes_.get(); }
  std::byte* begin() { return data(); }
  std::byte* end() { return data() + size_; }
  const std::byte* begin() const { return data(); }
  const std::byte* end() const { return data() + size_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }

  void clear() { size_ = 0; }
  /// Room for `n` bytes without moving them again.
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    auto grown = std::make_unique_for_overwrite<std::byte[]>(n);
    if (size_ > 0) std::memcpy(grown.get(), bytes_.get(), size_);
    bytes_ = std::move(grown);
    capacity_ = n;
  }
  /// `n` bytes; those added are left unwritten.
  void resize(std::size_t n) {
    if (n > capacity_) reserve(std::max(n, 2 * capacity_));
    size_ = n;
  }
  /// Appends [first, last); `at` must be end().
  void insert(const std::byte* at, const std::byte* first, const std::byte* last) {
    const auto n = static_cast<std::size_t>(last - first);
    at_end(at);
    // A growth reallocates before the copy: a source inside this buffer would dangle.
    if (n > 0 && bytes_ && first < data() + capacity_ && last > data())
      throw std::logic_error("FrameBuffer appends no bytes of its own");
    resize(size_ + n);
    if (n > 0) std::memcpy(end() - n, first, n);
  }
  /// Appends `n` copies of `value`; `at` must be end().
  void insert(const std::byte* at, std::size_t n, std::byte value) {
    at_end(at);
    resize(size_ + n);
    std::fill(end() - n, end(), value);
  }
  void push_back(std::byte value) { insert(end(), 1, value); }

  friend bool operator==(const FrameBuffer& a, const FrameBuffer& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void at_end(const std::byte* at) const {
    if (at != end()) throw std::logic_error("FrameBuffer appends only");
  }
  std::unique_ptr<std::byte[]> bytes_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace treefarm::net
