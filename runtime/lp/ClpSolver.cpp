#include "runtime/lp/ClpSolver.hpp"

#include <coin/ClpSimplex.hpp>
#include <coin/ClpSolve.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace treefarm::lp {
namespace {

double to_coin(double bound) {
  if (bound == lp_infinity) return COIN_DBL_MAX;
  if (bound == -lp_infinity) return -COIN_DBL_MAX;
  return bound;
}

std::vector<double> to_coin(const std::vector<double>& bounds) {
  std::vector<double> out(bounds.size());
  for (std::size_t i = 0; i < bounds.size(); ++i) out[i] = to_coin(bounds[i]);
  return out;
}

int checked_int(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw std::invalid_argument(std::string("ClpSolver: too many ") + what + " for Clp (" +
                                std::to_string(n) + ")");
  }
  return static_cast<int>(n);
}

}  // namespace

LpResult ClpSolver::solve(const LpProblem& problem) {
  const int columns = checked_int(problem.variable_count(), "variables");
  const int rows = checked_int(problem.row_count(), "rows");
  const std::size_t nnz = problem.term_count();
  checked_int(nnz, "coefficients");

  // Rows are stored compressed by row; Clp wants columns. One counting-sort pass turns
  // one into the other, and the whole matrix is loaded at once (no per-row insertion,
  // which is quadratic-ish in Clp for 10^5 rows).
  std::vector<CoinBigIndex> start(static_cast<std::size_t>(columns) + 1, 0);
  for (const LpTerm& t : problem.terms()) ++start[t.variable + 1];
  for (int c = 0; c < columns; ++c) start[c + 1] += start[c];
  std::vector<int> index(nnz);
  std::vector<double> value(nnz);
  {
    std::vector<CoinBigIndex> next(start.begin(), start.end() - 1);
    const auto& row_starts = problem.row_starts();
    const auto& terms = problem.terms();
    for (int r = 0; r < rows; ++r) {
      for (std::size_t i = row_starts[r]; i < row_starts[r + 1]; ++i) {
        const CoinBigIndex at = next[terms[i].variable]++;
        index[at] = r;
        value[at] = terms[i].coefficient;
      }
    }
  }

  ClpSimplex model;
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  const std::vector<double> col_lower = to_coin(problem.lower());
  const std::vector<double> col_upper = to_coin(problem.upper());
  const std::vector<double> row_lower = to_coin(problem.row_lower());
  const std::vector<double> row_upper = to_coin(problem.row_upper());
  model.loadProblem(columns, rows, start.data(), index.data(), value.data(), col_lower.data(),
                    col_upper.data(), problem.objective().data(), row_lower.data(),
                    row_upper.data());
  model.setOptimizationDirection(problem.sense() == Sense::maximize ? -1.0 : 1.0);

  // Primal simplex after Clp's presolve: the steady-state LPs are large and sparse, and
  // presolve removes the many variables fixed at zero (nodes that cannot run an app) and
  // the doubleton rows of the leaves (sent = α). Two of its passes are left out: the
  // implied-free column substitution and the dual-based fixing (domination) cost more
  // than they save on these trees — on a 10,000-node tree × 10 applications they were
  // 70 % of the CPU time (perf), and without them the primal simplex needs no more
  // iterations. Primal rather than dual: on the multi-port LP the dual simplex took
  // 2.5x the iterations (docs/benchmarks.md, "Simulation and LP").
  ClpSolve options;
  options.setSolveType(ClpSolve::usePrimal);
  options.setPresolveType(ClpSolve::presolveOn);
  options.setDoImpliedFree(false);
  options.setDoDual(false);
  model.initialSolve(options);

  LpResult result;
  result.iterations = static_cast<std::size_t>(std::max(0, model.numberIterations()));
  switch (model.status()) {
    case 0: result.status = LpStatus::optimal; break;
    case 1: result.status = LpStatus::infeasible; return result;
    case 2: result.status = LpStatus::unbounded; return result;
    default: result.status = LpStatus::failed; return result;
  }
  const double* x = model.primalColumnSolution();
  result.values.assign(x, x + columns);
  const double* ax = model.primalRowSolution();
  result.row_activity.assign(ax, ax + rows);
  result.objective = 0.0;
  for (int c = 0; c < columns; ++c) result.objective += problem.objective()[c] * x[c];
  return result;
}

}  // namespace treefarm::lp
