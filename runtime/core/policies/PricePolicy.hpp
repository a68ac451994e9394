#pragma once
/// @file PricePolicy.hpp
/// The decentralized price-based scheduler of papers/bertin2008 §4 ("price"): on every
/// node, per application, the scheduler agent of Algorithm 3 and, per node and per link
/// to a child, the pricing agent of Algorithm 4. Every node only uses its own state and
/// the messages of its parent and children (event::PolicyMessage), over the same
/// transport as tasks. See docs/policies.md#price.
///
/// Resources are written with normalised capacities: the executor of node i computes
/// application k at r_{i,k} tasks/s (cores / seconds per task), so its constraint (2) is
/// Σ_k a_{i,k}·ϱ_{i,k} <= 1 with a_{i,k} = 1/r_{i,k} (seconds of the whole executor per
/// task); the link to child c is Σ_k (b_k/B_c)·σ_k^c <= 1 (multi-port, constraint (3));
/// under the one-port model the port of node i is Σ_c Σ_k (b_k/B_c)·σ_k^c <= 1. Prices
/// are per unit of capacity (price of the whole resource for one second): with W_i the
/// paper's flop/s and λ its price per flop, λ' = λ·W_i, so a_{i,k}·λ' = w_k·λ and eq. 10
/// is unchanged. The scaled updates eq. 17–18 are the same in these units; the unscaled
/// eq. 14–15 are applied to the normalised resources (capacity 1), and the initial prices
/// λ_init, μ_init are per unit of capacity too (the paper does not give its units).
///
/// Every `period` seconds (or half its slowest task or transfer time, if longer) a node
/// makes one update (asynchronous: with the latest values
/// its neighbours sent, no global round) — the root while the run has work, the others
/// when their parent sent something since their last update (so a finished run goes
/// quiet):
///  - eq. 10: p_k^i = η_k^i + a_{i,k}·λ_i (η_k^i: price per task of the path from the
///    root, received from the parent; 0 at the root);
///  - eq. 11 and 16: ϱ̃ and ϱ_{i,k}, with U_k(ϱ) = w_k·U(ϱ/w_k) (U = log, or the
///    α-utility): eq. 16 generalised is ϱ_{i,k} += … + γ_ϱ^(2)·(1 − (ϱ_k/w_k)^α·p_k^i);
///  - σ_k^i = ϱ_{i,k} + Σ_c σ_k^c (tasks/s of k into the subtree; Algorithm 3 line 7);
///    at the root ϱ_k = σ_k^root (eq. 13);
///  - Algorithm 4: λ_i and the price of each link to a child (or of the port), scaled
///    (eq. 17–18, default) or unscaled (eq. 14–15);
///  - messages: up, σ_k^i and the number of nodes of the subtree that can run k (the
///    denominator of eq. 18 counts routes); down to child c, η_k^c = η_k^i + (b_k/B_c)·μ_c,
///    the global ϱ_k (forwarded from the root, Algorithm 3 line 9) and the step sizes.
/// The tasks follow the rates: the executor at ϱ_{i,k}, child c at σ_k^c, the root draws
/// application k in proportion to ϱ_k (1D load balancing, PlanFollower), continuously.
/// Before a node has rates it schedules FCFS.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/policies/RatePlanPolicy.hpp"

namespace treefarm::core {

/// Step sizes and initial values of papers/bertin2008 Table 1 (the defaults), and the
/// policy's other settings; all can be set in the experiment's `[policy.price]`.
struct PriceParams {
  double gamma_rho_tilde = 0.02;  ///< γ_ϱ̃ (eq. 11)
  double gamma_rho1 = 0.02;       ///< γ_ϱ^(1) (eq. 16)
  double gamma_rho2 = 100.0;      ///< γ_ϱ^(2) (eq. 16), tasks/s
  double gamma_lambda = 5e-3;     ///< γ_λ (eq. 14/17)
  double gamma_mu = 5e-4;         ///< γ_μ (eq. 15/18)
  double rho_init = 6e5;          ///< ϱ_init, tasks/s (initial ϱ_{i,k} and ϱ̃_{i,k})
  double lambda_init = 2e-2;      ///< λ_init, price of a whole executor (per unit of capacity)
  double mu_init = 2e-2;          ///< μ_init, price of a whole link (per unit of capacity)
  double scaled = 1;              ///< 1: eq. 17–18 (default); 0: eq. 14–15
  double alpha = 1;               ///< Utility: 1 = proportional (log), else α-fair (α >= 0)
  double period = 0.1;            ///< seconds between two updates of a node (at least)
  /// tasks/s: the unit of rate the other values are written in (Table 1's are for the
  /// paper's platform). The steps are not unit-free: with rates c times larger the same
  /// iterates need γ_ϱ^(2) and ϱ_init × c and γ_λ, γ_μ, λ_init, μ_init / c, which is what
  /// rate_unit = c applies. 1 = Table 1 as written.
  double rate_unit = 1;
  /// 1 (default): per-application relative steps, the scaling bertin2008 §6 proposes
  /// ("a scaling on γ^(2) so that each update has the same order of magnitude as the
  /// corresponding ϱ_{i,k}"): γ_ϱ^(2) of application k is relative_gain·ϱ_k/n_k (n_k:
  /// the nodes that can run k, counted up the tree; ϱ_k/n_k the mean ϱ_{i,k}), eq. 17–18
  /// are scaled by the same steps (so relative_price_gain is the loop gain of their
  /// stability condition, unit-free), and every node starts from its own share of its
  /// executor instead of ϱ_init (initial prices 0). Needs scaled = 1. 0: Table 1's steps
  /// (γ_ϱ^(2), γ_λ, γ_μ, ϱ_init, λ_init, μ_init, rate_unit), as in the paper's §5.
  double relative = 1;
  double relative_gain = 0.05;       ///< g of γ_ϱ^(2)_k = g·ϱ_k/n_k (relative = 1), in (0, 1]
  double relative_price_gain = 0.01; ///< loop gain of eq. 17–18 with relative steps, in (0, 1]

  /// The names accepted in `[policy.price]` (the field names above).
  static std::vector<std::string> keys();
  /// Reads options; throws std::invalid_argument naming an unknown key (and listing the
  /// known ones) or a value out of range.
  static PriceParams from_options(const PolicyOptions& options);
  bool operator==(const PriceParams&) const = default;
};

class PricePolicy final : public RatePlanPolicy {
 public:
  explicit PricePolicy(PriceParams params = {});

  void start(const NodeState& state) override;
  void observe(const NodeState& state, const Event& event) override;
  std::optional<std::string> check_message(const NodeState& state, const event::PolicyMessage& message) const override;
  void take_messages(const NodeState& state, std::vector<Action>& out) override;
  std::optional<Seconds> next_deadline(const NodeState& state) const override;

  const PriceParams& params() const { return params_; }
  /// Updates made by this node so far (at the root: the iteration count).
  std::uint64_t iterations() const { return iterations_; }
  /// True once the node has rates (root: from the start; others: after the parent's
  /// first message).
  bool active() const { return active_; }
  /// ϱ_{i,k}: tasks/s of each application this node computes.
  const std::vector<double>& local_rates() const { return rho_; }
  /// ϱ_k as this node knows it (root: Σ of the subtree, eq. 13), tasks/s.
  const std::vector<double>& global_rates() const { return rho_global_; }
  /// σ_k^i: tasks/s of each application into this subtree.
  const std::vector<double>& subtree_rates() const { return sigma_; }
  /// λ_i: price of this node's executor (per unit of capacity).
  double compute_price() const { return lambda_; }
  /// μ of the link to each child, by child name (multi-port), per unit of capacity.
  std::map<std::string, double> link_prices(const NodeState& state) const;
  /// Price of the out-port (one-port model), per unit of capacity.
  double port_price() const { return port_price_; }

  enum class Kind : std::uint8_t { down = 1, up = 2 };
  /// Parent → child: kind, K, the parameters (15 doubles), then per application η_k, ϱ_k,
  /// n_k (nodes of the whole tree that can run k) and the path's capacity (min over the
  /// links from the root of bandwidth/b_k, tasks/s; +inf at the root's children if the
  /// capacity vector is empty) — 125 + 32·K bytes.
  static std::vector<std::uint8_t> encode_down(const PriceParams& p, const std::vector<double>& eta,
                                               const std::vector<double>& rho, const std::vector<double>& routes,
                                               const std::vector<double>& capacity = {});
  /// Child → parent: kind, K, then per application σ_k, the count of nodes of the
  /// subtree that can run k and the sum of the relative steps γ_ϱ^(2) (tasks/s) of those
  /// computing it (ϱ_{i,k} > 0) — 5 + 24·K bytes.
  static std::vector<std::uint8_t> encode_up(const std::vector<double>& sigma, const std::vector<double>& runnable,
                                             const std::vector<double>& active);

 private:
  /// No rates yet, or no planned choice feasible: FCFS.
  std::optional<Assignment> unplanned_select(const NodeState& state) override;
  struct Child {
    std::vector<double> sigma;     ///< σ_k^c, tasks/s (0 until it reports)
    std::vector<double> runnable;  ///< nodes of its subtree that can run k
    std::vector<double> active_steps;  ///< Σ of the relative steps of its nodes computing k
    double mu = 0;                 ///< price of the link to it
    bool mu_set = false;
  };
  void update(const NodeState& state);
  std::vector<double> compute_cost(const NodeState& state) const;  ///< a_{i,k}; 0 = unknown or cannot
  void adopt_plan(const NodeState& state);
  void initial_rates(const NodeState& state);
  double local_capacity(const std::vector<double>& a, std::size_t k) const;
  bool relative() const { return params_.relative != 0 && params_.scaled != 0; }
  bool wants_update(const NodeState& state) const;
  Seconds effective_period(const NodeState& state) const;

  PriceParams params_;
  bool active_ = false;
  std::uint64_t iterations_ = 0;
  std::vector<double> rho_, rho_tilde_, rho_global_, sigma_, eta_;
  std::vector<double> routes_;       ///< n_k: nodes of the tree that can run k (from the root)
  std::vector<double> path_cap_;     ///< tasks/s of k the links from the root to here carry at most
  double lambda_ = 0;
  bool lambda_set_ = false;
  double port_price_ = 0;
  bool port_set_ = false;
  std::map<ChildId, Child> children_;
  std::uint32_t cores_ = 0;          ///< executor slots seen (NodeConfig::cores, else learnt)
  Seconds last_update_ = 0;
  bool updated_once_ = false;
  bool fresh_ = false;               ///< non-root: a message from the parent since the last update
  bool busy_ = false;                ///< wants a Tick (next_deadline)
  Seconds period_ = 0.1;             ///< effective_period() at the last check
  std::vector<double> mix_;          ///< root: ϱ_k the draws follow
  std::vector<Action> outbox_;
};

}  // namespace treefarm::core
