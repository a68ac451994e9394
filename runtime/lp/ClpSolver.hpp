#pragma once
/// @file ClpSolver.hpp
/// LpSolver implemented with COIN-OR Clp (dual simplex). Clp headers stay in
/// ClpSolver.cpp, so users of this header do not see them.

#include "runtime/lp/LpSolver.hpp"

namespace treefarm::lp {

/// Clp dual simplex. The whole matrix is handed to Clp in one CoinPackedMatrix (no
/// row-by-row insertion), and Clp's log is silenced (log level 0).
class ClpSolver : public LpSolver {
 public:
  LpResult solve(const LpProblem& problem) override;
};

}  // namespace treefarm::lp
