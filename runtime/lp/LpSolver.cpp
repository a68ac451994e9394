#include "runtime/lp/LpSolver.hpp"

#include <stdexcept>

#include "runtime/lp/ClpSolver.hpp"

namespace treefarm::lp {

std::string_view to_string(LpStatus status) {
  switch (status) {
    case LpStatus::optimal: return "optimal";
    case LpStatus::infeasible: return "infeasible";
    case LpStatus::unbounded: return "unbounded";
    case LpStatus::failed: return "failed";
  }
  return "?";
}

std::size_t LpProblem::add_variable(double lower, double upper, double objective) {
  if (lower > upper) {
    throw std::invalid_argument("LpProblem::add_variable: lower bound " + std::to_string(lower) +
                                " exceeds upper bound " + std::to_string(upper));
  }
  lower_.push_back(lower);
  upper_.push_back(upper);
  objective_.push_back(objective);
  return lower_.size() - 1;
}

std::size_t LpProblem::add_row(std::span<const LpTerm> terms, double lower, double upper) {
  if (lower > upper) {
    throw std::invalid_argument("LpProblem::add_row: lower bound " + std::to_string(lower) +
                                " exceeds upper bound " + std::to_string(upper));
  }
  for (const LpTerm& t : terms) {
    if (t.variable >= lower_.size()) {
      throw std::invalid_argument("LpProblem::add_row: variable " + std::to_string(t.variable) +
                                  " does not exist (" + std::to_string(lower_.size()) +
                                  " variables)");
    }
  }
  terms_.insert(terms_.end(), terms.begin(), terms.end());
  row_starts_.push_back(terms_.size());
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
  return row_lower_.size() - 1;
}

void LpProblem::set_objective(std::size_t variable, double coefficient) {
  if (variable >= objective_.size()) {
    throw std::invalid_argument("LpProblem::set_objective: variable " + std::to_string(variable) +
                                " does not exist");
  }
  objective_[variable] = coefficient;
}

void LpProblem::reserve(std::size_t variables, std::size_t rows, std::size_t terms) {
  lower_.reserve(variables);
  upper_.reserve(variables);
  objective_.reserve(variables);
  row_lower_.reserve(rows);
  row_upper_.reserve(rows);
  row_starts_.reserve(rows + 1);
  terms_.reserve(terms);
}

std::unique_ptr<LpSolver> make_default_solver() { return std::make_unique<ClpSolver>(); }

}  // namespace treefarm::lp
