#include "runtime/core/ByteCodec.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace treefarm::core {

void ByteWriter::u32(std::uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void ByteWriter::f64(double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
}

void ByteWriter::str(const std::string& s) {
  u32(static_cast<std::uint32_t>(s.size()));
  bytes_.insert(bytes_.end(), s.begin(), s.end());
}

void ByteReader::need(std::size_t n) const {
  if (bytes_.size() - pos_ < n) throw DecodeError("policy message truncated");
}

std::uint8_t ByteReader::u8() {
  need(1);
  return bytes_[pos_++];
}

std::uint32_t ByteReader::u32() {
  need(4);
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes_[pos_++]} << (8 * i);
  return v;
}

double ByteReader::f64() {
  need(8);
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits |= std::uint64_t{bytes_[pos_++]} << (8 * i);
  const double v = std::bit_cast<double>(bits);
  if (!std::isfinite(v)) throw DecodeError("policy message holds a non-finite number");
  return v;
}

std::string ByteReader::str(std::size_t max) {
  const std::uint32_t n = u32();
  if (n > max) throw DecodeError("policy message string too long");
  need(n);
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
  pos_ += n;
  return s;
}

std::uint32_t ByteReader::count(std::uint32_t max) {
  const std::uint32_t n = u32();
  if (n > max) throw DecodeError("policy message announces " + std::to_string(n) + " items (at most " + std::to_string(max) + ")");
  return n;
}

}  // namespace treefarm::core
