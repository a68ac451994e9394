#pragma once
/// @file FuzzCodec.hpp
/// The body of the codec fuzz target (fuzz_codec.cpp), callable by the corpus replay test.

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace treefarm::fuzz {

/// What the codec did with one fuzz input.
enum class CodecOutcome {
  Rejected,    ///< decode() threw DecodeError (or the input was empty).
  RoundTrips,  ///< decode() accepted it, and encode/decode/encode gave the same bytes.
};

/// A property of the codec does not hold for an input (the message says which).
class CodecPropertyViolated : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Runs one fuzz input (byte 0: payload frame count modulo 3; the rest: the header frame)
/// through decode, encode, decode, encode. Throws CodecPropertyViolated if an accepted
/// message does not round-trip unchanged; any other exception escaping decode() escapes.
CodecOutcome check_codec_input(const std::uint8_t* data, std::size_t size);

}  // namespace treefarm::fuzz
