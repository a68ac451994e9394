#pragma once
/// @file ByteCodec.hpp
/// A tiny byte codec for policy messages (event::PolicyMessage payloads): little-endian
/// fixed-width integers, IEEE doubles and length-prefixed strings. The reader checks every
/// length against the bytes left: payloads come from the network and are untrusted.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/net/DecodeError.hpp"

namespace treefarm::core {

/// A payload that does not decode (truncated, too long, out of range): the wire's one
/// DecodeError.
using net::DecodeError;

class ByteWriter {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(v); }
  void u32(std::uint32_t v);
  void f64(double v);
  void str(const std::string& s);
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}
  std::uint8_t u8();
  std::uint32_t u32();
  /// A finite double (NaN and infinities are rejected).
  double f64();
  /// A string of at most `max` bytes.
  std::string str(std::size_t max = 1024);
  /// A count of at most `max` (a bound on what the payload may announce).
  std::uint32_t count(std::uint32_t max);
  bool done() const { return pos_ == bytes_.size(); }

 private:
  void need(std::size_t n) const;
  const std::vector<std::uint8_t>& bytes_;
  std::size_t pos_ = 0;
};

}  // namespace treefarm::core
