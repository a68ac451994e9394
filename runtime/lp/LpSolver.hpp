#pragma once
/// @file LpSolver.hpp
/// A small linear-programming interface: a problem built column by column and row by
/// row, and a solver that returns a status and the variable values. The steady-state
/// model (SteadyState.hpp) is written against this interface only; ClpSolver
/// (ClpSolver.hpp, COIN-OR Clp) implements it.

#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace treefarm::lp {

/// Unbounded side of a variable or row bound.
inline constexpr double lp_infinity = std::numeric_limits<double>::infinity();

/// Direction of the objective.
enum class Sense { maximize, minimize };

/// Outcome of a solve.
enum class LpStatus { optimal, infeasible, unbounded, failed };

/// "optimal", "infeasible", "unbounded", "failed".
std::string_view to_string(LpStatus status);

/// One coefficient of a row: `coefficient` times variable `variable`.
struct LpTerm {
  std::size_t variable;
  double coefficient;
};

/// A linear program: max/min c·x subject to row_lower <= A·x <= row_upper and
/// lower <= x <= upper. Rows are stored compressed (one array of terms for all rows), so
/// building a problem with 10^5 rows costs a few allocations.
class LpProblem {
 public:
  /// Adds a variable with bounds [lower, upper] (±lp_infinity allowed) and objective
  /// coefficient `objective`; returns its index (0, 1, 2, ... in order of addition).
  std::size_t add_variable(double lower, double upper, double objective = 0.0);
  /// Adds the row lower <= Σ terms <= upper; returns its index. Terms must name existing
  /// variables (checked: std::invalid_argument) and may be empty.
  std::size_t add_row(std::span<const LpTerm> terms, double lower, double upper);
  /// Sets the objective coefficient of an existing variable.
  void set_objective(std::size_t variable, double coefficient);
  void set_sense(Sense sense) { sense_ = sense; }
  /// Reserves room for `variables` variables, `rows` rows and `terms` coefficients.
  void reserve(std::size_t variables, std::size_t rows, std::size_t terms);

  Sense sense() const { return sense_; }
  std::size_t variable_count() const { return lower_.size(); }
  std::size_t row_count() const { return row_lower_.size(); }
  std::size_t term_count() const { return terms_.size(); }

  const std::vector<double>& lower() const { return lower_; }
  const std::vector<double>& upper() const { return upper_; }
  const std::vector<double>& objective() const { return objective_; }
  const std::vector<double>& row_lower() const { return row_lower_; }
  const std::vector<double>& row_upper() const { return row_upper_; }
  /// Row r's terms are terms()[row_starts()[r] .. row_starts()[r+1]).
  const std::vector<std::size_t>& row_starts() const { return row_starts_; }
  const std::vector<LpTerm>& terms() const { return terms_; }

 private:
  Sense sense_ = Sense::maximize;
  std::vector<double> lower_, upper_, objective_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<std::size_t> row_starts_{0};
  std::vector<LpTerm> terms_;
};

/// Result of a solve. `values` and `row_activity` are filled when status is optimal.
struct LpResult {
  LpStatus status = LpStatus::failed;
  double objective = 0.0;               ///< c·x at the returned point.
  std::vector<double> values;           ///< x, one per variable.
  std::vector<double> row_activity;     ///< A·x, one per row.
  std::size_t iterations = 0;           ///< Simplex iterations (informative).
};

/// A linear-programming solver.
class LpSolver {
 public:
  virtual ~LpSolver() = default;
  /// Solves `problem`. Never throws for an infeasible or unbounded problem: the status
  /// says so.
  virtual LpResult solve(const LpProblem& problem) = 0;
};

/// The default solver: a ClpSolver (ClpSolver.hpp).
std::unique_ptr<LpSolver> make_default_solver();

}  // namespace treefarm::lp
