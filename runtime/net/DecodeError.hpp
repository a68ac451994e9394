#pragma once
/// @file DecodeError.hpp
/// The one error for bytes from the network that do not decode: a header frame or batch
/// (runtime/net/Codec.hpp, Batch.hpp) or a policy message's payload
/// (runtime/core/ByteCodec.hpp). Its message says what was wrong.

#include <stdexcept>

namespace treefarm::net {

class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace treefarm::net
