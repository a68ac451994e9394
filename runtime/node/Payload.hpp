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

}  // namespace treefarm::node
