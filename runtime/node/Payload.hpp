#pragma once
/// @file Payload.hpp
/// The bytes of a task's input (or of a link probe) as the node driver sees them: an
/// immutable buffer shared by whoever still needs it — the transport sending it to a
/// child, the local executor reading it, the store that keeps it for re-queueing. Each
/// adapter wraps its own buffers (a received ZeroMQ frame, the master's input pool, a
/// simulated size) so that a task is never copied on its way through a node, and a
/// buffer lives as long as its last reader (a child's result cannot free what the
/// executor still reads).

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace treefarm::node {

/// An immutable byte buffer. data() may be null for a simulated payload (size only).
class Bytes {
 public:
  virtual ~Bytes() = default;
  virtual const std::byte* data() const = 0;
  virtual std::size_t size() const = 0;  ///< bytes
};

using Payload = std::shared_ptr<const Bytes>;

/// Bytes held in a shared vector (the master's input pools, probe buffers).
class VectorBytes final : public Bytes {
 public:
  explicit VectorBytes(std::shared_ptr<const std::vector<std::byte>> bytes) : bytes_(std::move(bytes)) {}
  const std::byte* data() const override { return bytes_->data(); }
  std::size_t size() const override { return bytes_->size(); }

 private:
  std::shared_ptr<const std::vector<std::byte>> bytes_;
};

/// A payload that has a size but no bytes: what travels in a simulation.
class SizeOnly final : public Bytes {
 public:
  explicit SizeOnly(std::size_t size) : size_(size) {}
  const std::byte* data() const override { return nullptr; }
  std::size_t size() const override { return size_; }

 private:
  std::size_t size_;
};

/// A payload over a shared vector.
inline Payload share(std::shared_ptr<const std::vector<std::byte>> bytes) {
  return std::make_shared<VectorBytes>(std::move(bytes));
}

/// A view of bytes that something else keeps alive: handed out as an aliasing
/// shared_ptr (Payload(owner, &slice)) that shares the owner's count, so that many
/// payloads inside one buffer (a received batch frame, a slab of small inputs) cost no
/// allocation each.
class SliceBytes final : public Bytes {
 public:
  SliceBytes() = default;
  SliceBytes(const std::byte* data, std::size_t size) : data_(data), size_(size) {}
  const std::byte* data() const override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Payloads of one small size made many to an allocation (no allocation per
/// task on the hot path — the master's no-op and tiny inputs). A slab holds the bytes of
/// `per_slab` payloads and their views; each payload shares the slab's count, so the slab
/// is freed when its last payload is let go, on whichever thread. One thread makes
/// payloads (the node's loop); a payload's bytes are written before it is handed out and
/// never after, so readers on other threads see them whole.
class SmallPayloads {
 public:
  /// `size` bytes each (> 0); `per_slab` payloads per slab (> 0).
  SmallPayloads(std::size_t size, std::size_t per_slab) : size_(size), per_slab_(per_slab), next_(per_slab) {}

  /// The next payload; `fill(std::span<std::byte>)` writes its bytes first (if it throws,
  /// nothing is handed out and the slot is used by the next call).
  template <class Fill>
  Payload make(Fill&& fill) {
    if (next_ == per_slab_) {
      slab_ = std::make_shared<Slab>();
      slab_->bytes.resize(size_ * per_slab_);
      slab_->views.resize(per_slab_);
      next_ = 0;
    }
    std::byte* at = slab_->bytes.data() + next_ * size_;
    fill(std::span<std::byte>(at, size_));
    SliceBytes& view = slab_->views[next_++];
    view = SliceBytes(at, size_);
    return Payload(slab_, &view);
  }

  std::size_t size() const { return size_; }  ///< bytes of each payload

 private:
  struct Slab {
    std::vector<std::byte> bytes;
    std::vector<SliceBytes> views;
  };
  std::size_t size_, per_slab_, next_;
  std::shared_ptr<Slab> slab_;
};

}  // namespace treefarm::node
