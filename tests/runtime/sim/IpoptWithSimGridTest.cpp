// Ipopt (sequential MUMPS) in a binary that also links SimGrid: libsimgrid exports SMPI's
// MPI_* symbols, and MUMPS must still reach its own MPI stubs (libmpiseq_seq), or it
// aborts with "MPI_Init was not called". runtime/lp/CMakeLists.txt orders the libraries.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/lp/FairnessOptimum.hpp"

namespace treefarm::lp {
namespace {

TEST(IpoptWithSimGrid, ProportionalOptimumSolves) {
  PlatformModel m;
  m.apps = {{"a", 100.0, 1.0, 1}, {"b", 100.0, 1.0, 1}};
  const double inf = std::numeric_limits<double>::infinity();
  m.nodes.push_back({"root", -1, 2, inf, {1.0, 4.0}, inf});
  const auto s = solve_fairness(m, FairnessObjective::parse("proportional"));
  EXPECT_NEAR(s.app_throughput[0], 1.0, 1e-6);
  EXPECT_NEAR(s.app_throughput[1], 0.25, 1e-6);
}

}  // namespace
}  // namespace treefarm::lp
