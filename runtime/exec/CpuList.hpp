#pragma once
/// @file CpuList.hpp
/// Parsing of CPU lists as Linux writes them ("0-3,6,8-9").

#include <string>
#include <vector>

namespace treefarm::exec {

/// "0-3,6" → {0,1,2,3,6}. Throws std::invalid_argument naming the bad part.
std::vector<int> parse_cpu_list(const std::string& text);
/// {0,1,2,3,6} → "0-3,6".
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace treefarm::exec
