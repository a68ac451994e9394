#include "runtime/lp/FairnessOptimum.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include <IpIpoptApplication.hpp>
#include <IpSolveStatistics.hpp>
#include <IpTNLP.hpp>

#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {
namespace {

constexpr std::size_t none = SteadyStateVariables::none;
/// Ipopt's infinity (nlp_lower/upper_bound_inf default ±1e19).
constexpr double ipopt_inf = 2e19;

double finite_or(double v) { return std::isinf(v) ? (v > 0 ? ipopt_inf : -ipopt_inf) : v; }

/// The fair program as an Ipopt TNLP (bertin2008 §2.4): the columns of LP (3) with the
/// max-min variable T fixed to 0, plus one column ϱ_k per application; the rows of LP (3)
/// plus ϱ_k − α_0^(k) − Σ_{v∈Γ(root)} sent_{0→v}^(k) = 0. Objective (minimised):
/// −Σ_k w(k)·U(ϱ_k). Only the ϱ_k enter the objective, so the Hessian is diagonal.
class FairNlp : public Ipopt::TNLP {
 public:
  FairNlp(const PlatformModel& m, const FairnessObjective& obj, std::vector<double> start)
      : m_(m), obj_(obj), start_(std::move(start)) {
    lp_ = build_steady_state_lp(m, var_);
    base_cols_ = lp_.variable_count();
    base_rows_ = lp_.row_count();
    const std::size_t kk = m.apps.size();
    rho_rows_.resize(kk);
    for (std::size_t k = 0; k < kk; ++k) {  // from each application's origin (bertin2008 §2.2)
      auto& row = rho_rows_[k];
      row.push_back({base_cols_ + k, 1.0});
      for (const auto& t : app_rate_terms(m, var_, k)) row.push_back({t.variable, -t.coefficient});
    }
  }

  double alpha() const { return obj_.kind == FairnessObjective::Kind::proportional ? 1.0 : obj_.alpha; }
  std::size_t cols() const { return base_cols_ + m_.apps.size(); }
  std::size_t rows() const { return base_rows_ + m_.apps.size(); }

  bool get_nlp_info(Ipopt::Index& n, Ipopt::Index& mm, Ipopt::Index& nnz_jac, Ipopt::Index& nnz_h,
                    IndexStyleEnum& style) override {
    n = static_cast<Ipopt::Index>(cols());
    mm = static_cast<Ipopt::Index>(rows());
    std::size_t nz = lp_.term_count();
    for (const auto& r : rho_rows_) nz += r.size();
    nnz_jac = static_cast<Ipopt::Index>(nz);
    nnz_h = static_cast<Ipopt::Index>(m_.apps.size());
    style = C_STYLE;
    return true;
  }

  bool get_bounds_info(Ipopt::Index, Ipopt::Number* xl, Ipopt::Number* xu, Ipopt::Index,
                       Ipopt::Number* gl, Ipopt::Number* gu) override {
    for (std::size_t j = 0; j < base_cols_; ++j) {
      xl[j] = finite_or(lp_.lower()[j]);
      xu[j] = finite_or(lp_.upper()[j]);
    }
    xl[var_.fair] = 0.0;  // T is the max-min objective: not used here
    xu[var_.fair] = 0.0;
    for (std::size_t k = 0; k < m_.apps.size(); ++k) {
      xl[base_cols_ + k] = 0.0;
      xu[base_cols_ + k] = ipopt_inf;
    }
    for (std::size_t r = 0; r < base_rows_; ++r) {
      gl[r] = finite_or(lp_.row_lower()[r]);
      gu[r] = finite_or(lp_.row_upper()[r]);
    }
    for (std::size_t k = 0; k < m_.apps.size(); ++k) gl[base_rows_ + k] = gu[base_rows_ + k] = 0.0;
    return true;
  }

  bool get_starting_point(Ipopt::Index n, bool init_x, Ipopt::Number* x, bool init_z, Ipopt::Number*,
                          Ipopt::Number*, Ipopt::Index, bool init_lambda, Ipopt::Number*) override {
    if (!init_x || init_z || init_lambda) return false;
    for (Ipopt::Index j = 0; j < n; ++j) x[j] = start_[static_cast<std::size_t>(j)];
    return true;
  }

  bool eval_f(Ipopt::Index, const Ipopt::Number* x, bool, Ipopt::Number& f) override {
    f = 0.0;
    for (std::size_t k = 0; k < m_.apps.size(); ++k) {
      const double w = m_.apps[k].weight;
      f -= w * u(x[base_cols_ + k] / w);
    }
    return std::isfinite(f);
  }

  bool eval_grad_f(Ipopt::Index n, const Ipopt::Number* x, bool, Ipopt::Number* g) override {
    std::fill(g, g + n, 0.0);
    for (std::size_t k = 0; k < m_.apps.size(); ++k) {
      g[base_cols_ + k] = -std::pow(x[base_cols_ + k] / m_.apps[k].weight, -alpha());
    }
    return true;
  }

  bool eval_g(Ipopt::Index, const Ipopt::Number* x, bool, Ipopt::Index, Ipopt::Number* g) override {
    for (std::size_t r = 0; r < base_rows_; ++r) {
      double s = 0.0;
      for (std::size_t t = lp_.row_starts()[r]; t < lp_.row_starts()[r + 1]; ++t) {
        s += lp_.terms()[t].coefficient * x[lp_.terms()[t].variable];
      }
      g[r] = s;
    }
    for (std::size_t k = 0; k < rho_rows_.size(); ++k) {
      double s = 0.0;
      for (const auto& t : rho_rows_[k]) s += t.coefficient * x[t.variable];
      g[base_rows_ + k] = s;
    }
    return true;
  }

  bool eval_jac_g(Ipopt::Index, const Ipopt::Number*, bool, Ipopt::Index, Ipopt::Index,
                  Ipopt::Index* irow, Ipopt::Index* jcol, Ipopt::Number* values) override {
    std::size_t i = 0;
    auto put = [&](std::size_t r, const LpTerm& t) {
      if (values) {
        values[i] = t.coefficient;
      } else {
        irow[i] = static_cast<Ipopt::Index>(r);
        jcol[i] = static_cast<Ipopt::Index>(t.variable);
      }
      ++i;
    };
    for (std::size_t r = 0; r < base_rows_; ++r) {
      for (std::size_t t = lp_.row_starts()[r]; t < lp_.row_starts()[r + 1]; ++t) put(r, lp_.terms()[t]);
    }
    for (std::size_t k = 0; k < rho_rows_.size(); ++k) {
      for (const auto& t : rho_rows_[k]) put(base_rows_ + k, t);
    }
    return true;
  }

  bool eval_h(Ipopt::Index, const Ipopt::Number* x, bool, Ipopt::Number obj_factor, Ipopt::Index,
              const Ipopt::Number*, bool, Ipopt::Index, Ipopt::Index* irow, Ipopt::Index* jcol,
              Ipopt::Number* values) override {
    for (std::size_t k = 0; k < m_.apps.size(); ++k) {
      const std::size_t c = base_cols_ + k;
      if (values) {
        // d²/dϱ² of −w·U(ϱ/w) = α·(ϱ/w)^(−α−1) / w.
        const double w = m_.apps[k].weight;
        values[k] = obj_factor * alpha() * std::pow(x[c] / w, -alpha() - 1.0) / w;
      } else {
        irow[k] = jcol[k] = static_cast<Ipopt::Index>(c);
      }
    }
    return true;
  }

  void finalize_solution(Ipopt::SolverReturn status, Ipopt::Index n, const Ipopt::Number* x,
                         const Ipopt::Number*, const Ipopt::Number*, Ipopt::Index, const Ipopt::Number*,
                         const Ipopt::Number*, Ipopt::Number, const Ipopt::IpoptData*,
                         Ipopt::IpoptCalculatedQuantities*) override {
    status_ = status;
    x_.assign(x, x + n);
  }

  const SteadyStateVariables& var() const { return var_; }
  const std::vector<double>& x() const { return x_; }
  std::size_t base_cols() const { return base_cols_; }
  Ipopt::SolverReturn status() const { return status_; }

 private:
  double u(double rho) const { return utility(obj_, rho); }

  const PlatformModel& m_;
  FairnessObjective obj_;
  std::vector<double> start_;
  SteadyStateVariables var_;
  LpProblem lp_;
  std::size_t base_cols_ = 0, base_rows_ = 0;
  std::vector<std::vector<LpTerm>> rho_rows_;
  std::vector<double> x_;
  Ipopt::SolverReturn status_ = Ipopt::INTERNAL_ERROR;
};

}  // namespace

FairnessObjective FairnessObjective::parse(std::string_view text) {
  FairnessObjective o;
  if (text == "maxmin" || text == "max-min") {
    o.kind = Kind::max_min;
    return o;
  }
  if (text == "proportional") return o;
  if (text.rfind("alpha:", 0) == 0) {
    const std::string a(text.substr(6));
    char* end = nullptr;
    const double v = std::strtod(a.c_str(), &end);
    if (!a.empty() && end == a.c_str() + a.size() && std::isfinite(v) && v >= 0.0) {
      o.alpha = v;
      o.kind = v == 1.0 ? Kind::proportional : Kind::alpha_fair;
      return o;
    }
  }
  throw std::invalid_argument("objective '" + std::string(text) +
                              "': expected maxmin, proportional or alpha:A with A >= 0");
}

std::string FairnessObjective::name() const {
  switch (kind) {
    case Kind::max_min: return "maxmin";
    case Kind::proportional: return "proportional";
    case Kind::alpha_fair: {
      std::ostringstream s;
      s << "alpha:" << alpha;
      return s.str();
    }
  }
  return "?";
}

double utility(const FairnessObjective& o, double rate) {
  switch (o.kind) {
    case FairnessObjective::Kind::max_min: return rate;
    case FairnessObjective::Kind::proportional: return std::log(rate);
    case FairnessObjective::Kind::alpha_fair: return std::pow(rate, 1.0 - o.alpha) / (1.0 - o.alpha);
  }
  return 0.0;
}

double fairness_value(const PlatformModel& m, const FairnessObjective& o, const std::vector<double>& rates) {
  if (o.kind == FairnessObjective::Kind::max_min) {
    double v = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < m.apps.size(); ++k) v = std::min(v, rates.at(k) / m.apps[k].weight);
    return v;
  }
  double v = 0.0;
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    v += m.apps[k].weight * utility(o, rates.at(k) / m.apps[k].weight);
  }
  return v;
}

FairnessSolution solve_fairness(const PlatformModel& m, const FairnessObjective& o, const FairnessOptions& options) {
  validate(m);
  FairnessSolution s;
  s.objective = o;
  const Solution maxmin = solve(m);
  if (o.kind == FairnessObjective::Kind::max_min) {
    s.app_throughput = maxmin.app_throughput;
    s.alpha = maxmin.alpha;
    s.sent = maxmin.sent;
    s.solve_seconds = maxmin.solve_seconds;
    s.solver = "clp";
    s.value = maxmin.fair_throughput;
    return s;
  }
  if (maxmin.fair_throughput <= 0.0) {
    throw std::runtime_error("fairness optimum: the max-min throughput is 0, so some application gets no rate");
  }
  // Start from 0.9 × the max-min optimum: feasible, every ϱ_k > 0 (log defined).
  SteadyStateVariables var;
  (void)build_steady_state_lp(m, var);
  const std::size_t kk = m.apps.size();
  std::size_t ncols = var.fair + 1;
  for (const auto& row : var.alpha) for (auto c : row) if (c != none) ncols = std::max(ncols, c + 1);
  for (const auto& row : var.sent) for (auto c : row) if (c != none) ncols = std::max(ncols, c + 1);
  std::vector<double> start(ncols + kk, 0.0);
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    for (std::size_t k = 0; k < kk; ++k) {
      if (var.alpha[u][k] != none) start[var.alpha[u][k]] = 0.9 * maxmin.alpha[u][k];
      if (var.sent[u][k] != none) start[var.sent[u][k]] = 0.9 * maxmin.sent[u][k];
    }
  }
  for (std::size_t k = 0; k < kk; ++k) start[ncols + k] = 0.9 * maxmin.app_throughput[k];

  Ipopt::SmartPtr<FairNlp> nlp = new FairNlp(m, o, start);
  if (nlp->base_cols() != ncols) throw std::logic_error("fairness optimum: column count mismatch");
  Ipopt::SmartPtr<Ipopt::IpoptApplication> app = IpoptApplicationFactory();
  app->Options()->SetIntegerValue("print_level", 0);
  app->Options()->SetStringValue("sb", "yes");
  app->Options()->SetNumericValue("tol", options.tolerance);
  app->Options()->SetIntegerValue("max_iter", options.max_iterations);
  app->Options()->SetStringValue("mu_strategy", "adaptive");
  if (app->Initialize() != Ipopt::Solve_Succeeded) throw std::runtime_error("fairness optimum: Ipopt did not initialise");
  const auto t0 = std::chrono::steady_clock::now();
  const Ipopt::ApplicationReturnStatus st = app->OptimizeTNLP(Ipopt::SmartPtr<Ipopt::TNLP>(GetRawPtr(nlp)));
  s.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st != Ipopt::Solve_Succeeded && st != Ipopt::Solved_To_Acceptable_Level) {
    throw std::runtime_error("fairness optimum (" + o.name() + "): Ipopt returned status " +
                             std::to_string(static_cast<int>(st)));
  }
  s.iterations = static_cast<std::size_t>(app->Statistics()->IterationCount());
  s.solver = "ipopt";
  const auto& x = nlp->x();
  s.alpha.assign(m.nodes.size(), std::vector<double>(kk, 0.0));
  s.sent.assign(m.nodes.size(), std::vector<double>(kk, 0.0));
  s.app_throughput.assign(kk, 0.0);
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    for (std::size_t k = 0; k < kk; ++k) {
      if (var.alpha[u][k] != none) s.alpha[u][k] = std::max(0.0, x[var.alpha[u][k]]);
      if (var.sent[u][k] != none) s.sent[u][k] = std::max(0.0, x[var.sent[u][k]]);
      s.app_throughput[k] += s.alpha[u][k];
    }
  }
  s.value = fairness_value(m, o, s.app_throughput);
  return s;
}

nlohmann::json to_json(const PlatformModel& m, const FairnessSolution& s) {
  nlohmann::json j;
  j["fairness"] = s.objective.name();
  j["objective"] = s.value;
  j["solver"] = s.solver;
  j["iterations"] = s.iterations;
  j["solve_seconds"] = s.solve_seconds;
  j["comm_model"] = m.comm_model == model::CommModel::one_port ? "one-port" : "multi-port";
  j["apps"] = nlohmann::json::array();
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    j["apps"].push_back({{"name", m.apps[k].name}, {"weight", m.apps[k].weight},
                         {"throughput", s.app_throughput[k]}});
  }
  j["nodes"] = nlohmann::json::array();
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    nlohmann::json apps = nlohmann::json::object(), recv = nlohmann::json::object();
    for (std::size_t k = 0; k < m.apps.size(); ++k) {
      apps[m.apps[k].name] = s.alpha[u][k];
      recv[m.apps[k].name] = s.sent[u][k];
    }
    j["nodes"].push_back({{"name", m.nodes[u].name}, {"apps", apps}, {"received", recv}});
  }
  return j;
}

void print_report(std::ostream& out, const PlatformModel& m, const FairnessSolution& s) {
  out << "objective " << s.objective.name() << ": " << std::setprecision(9) << s.value << "  ("
      << s.solver << ", " << s.iterations << " iterations, " << std::setprecision(3) << s.solve_seconds
      << " s)\n";
  out << std::left << std::setw(20) << "application" << std::right << std::setw(10) << "weight"
      << std::setw(16) << "tasks/s" << "\n";
  for (std::size_t k = 0; k < m.apps.size(); ++k) {
    out << std::left << std::setw(20) << m.apps[k].name << std::right << std::setw(10) << m.apps[k].weight
        << std::setw(16) << std::setprecision(6) << s.app_throughput[k] << "\n";
  }
  out << "\n" << std::left << std::setw(20) << "node";
  for (const auto& a : m.apps) out << std::right << std::setw(14) << a.name;
  out << "\n";
  for (std::size_t u = 0; u < m.nodes.size(); ++u) {
    out << std::left << std::setw(20) << m.nodes[u].name;
    for (std::size_t k = 0; k < m.apps.size(); ++k) out << std::right << std::setw(14) << s.alpha[u][k];
    out << "\n";
  }
}

}  // namespace treefarm::lp
