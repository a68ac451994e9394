#pragma once
/// @file WireFit.hpp
/// What an experiment's applications take in the Welcome message (runtime/net/Messages.hpp,
/// docs/protocol.md), so that an experiment the wire cannot carry is refused when its file
/// is parsed (file, line, field) rather than when the tree is told about it.

#include <cstddef>

#include "runtime/model/Application.hpp"
#include "runtime/net/Messages.hpp"

namespace treefarm::model {

/// bytes a Welcome's other fields can take at most: its fixed fields, the policy name, the
/// sender's name and net::max_ancestors ancestors of three strings each, rounded up.
constexpr std::size_t welcome_reserved_bytes = 16 * 1024;
/// bytes of a Welcome's body left for its applications (node hints, optional, are dropped
/// by the master when they do not fit).
constexpr std::size_t welcome_app_budget = net::max_body_bytes - welcome_reserved_bytes;

/// bytes application `app` takes in a Welcome's body, its optional requirements block
/// (disk_per_task, min_speed) included.
std::size_t welcome_bytes_of(const AppSpec& app);

}  // namespace treefarm::model
