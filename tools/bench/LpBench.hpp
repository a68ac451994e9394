#pragma once
/// @file LpBench.hpp
/// `treefarm bench lp`: how long building and solving the steady-state LP (runtime/lp)
/// takes on random trees of 100, 1000 and 10000 nodes with 10 applications.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace treefarm::bench {

/// Prints, for random trees of 100, 1000 and 10000 nodes with 10 applications in the
/// one-port and the multi-port model, the LP size, build time and solve time (seconds).
void bench_lp(std::ostream& out);
/// The same for trees of `sizes` nodes, then per model the fitted exponent of the
/// generate + build + solve seconds against nodes; with `plot_png`, that curve drawn there
/// (tools/plot/ScalingPlot).
void bench_lp(std::ostream& out, const std::vector<std::size_t>& sizes, const std::string& plot_png = "");

}  // namespace treefarm::bench
