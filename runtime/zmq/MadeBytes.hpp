#pragma once
/// @file MadeBytes.hpp
/// A payload whose bytes are made on demand (the master's task inputs, generated from the
/// run secret): a transport that packs payloads into a frame of its own has them made
/// straight into that frame (write_to), so they are written once and never copied or
/// zero-filled first. Whatever reads data() instead (the local executor, a payload sent
/// in a frame of its own) gets them made once into a buffer the payload keeps. (Here, not
/// in runtime/node: it locks, and the node driver's folder has no thread headers.)

#include <cstddef>
#include <memory>
#include <mutex>
#include <span>

#include "runtime/node/Payload.hpp"

namespace treefarm::zmq_node {

class MadeBytes : public node::Bytes {
 public:
  /// `size` bytes, written by make().
  explicit MadeBytes(std::size_t size) : size_(size) {}

  std::size_t size() const final { return size_; }
  /// Made on the first call, on whichever thread calls first; the same bytes after.
  const std::byte* data() const final {
    std::call_once(made_, [this] {
      kept_ = std::make_unique_for_overwrite<std::byte[]>(size_);
      make(std::span<std::byte>(kept_.get(), size_));
    });
    return kept_.get();
  }
  /// Makes the bytes into `out` (size() bytes): no copy, no buffer of the payload's own.
  void write_to(std::span<std::byte> out) const { make(out); }

 protected:
  /// Writes the payload's bytes into `out` (size() bytes), the same bytes at every call;
  /// may be called from several threads at once.
  virtual void make(std::span<std::byte> out) const = 0;

 private:
  std::size_t size_;
  mutable std::once_flag made_;
  mutable std::unique_ptr<std::byte[]> kept_;
};

}  // namespace treefarm::zmq_node
