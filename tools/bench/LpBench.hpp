#pragma once
/// @file LpBench.hpp
/// `treefarm bench lp`: how long building and solving the steady-state LP (runtime/lp)
/// takes on random trees of 100, 1000 and 10000 nodes with 10 applications.

#include <iosfwd>

namespace treefarm::tools {

/// Prints, for random trees of 100, 1000 and 10000 nodes with 10 applications in the
/// one-port and the multi-port model, the LP size, build time and solve time (seconds).
void bench_lp(std::ostream& out);

}  // namespace treefarm::tools
