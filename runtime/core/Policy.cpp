#include "runtime/core/Policy.hpp"

#include <stdexcept>
#include <string>
#include <typeinfo>

#include "runtime/core/policies/CgbcPolicy.hpp"
#include "runtime/core/policies/DataCentricPolicy.hpp"
#include "runtime/core/policies/FcfsPolicy.hpp"
#include "runtime/core/policies/LpPolicy.hpp"
#include "runtime/core/policies/PbcPolicy.hpp"
#include "runtime/core/policies/PricePolicy.hpp"

namespace treefarm::core {

void Policy::start(const NodeState& state) {
  std::vector<double> weights;
  for (const auto& app : state.config.apps) weights.push_back(app.weight);
  root_mix_ = LoadBalancer1D(std::move(weights));
}

std::size_t Policy::root_stock(const NodeState& state) const { return state.config.buffer; }

std::optional<AppId> Policy::next_source_app(const NodeState& state) {
  auto k = root_mix_.next([&](std::size_t i) {
    return state.source_remaining(AppId{static_cast<std::uint32_t>(i)}) > 0;
  });
  if (!k) return std::nullopt;
  return AppId{static_cast<std::uint32_t>(*k)};
}

std::optional<AppId> Policy::draw_fitting(const NodeState& state, const std::function<bool(AppId)>& allowed) {
  LoadBalancer1D& mix = fitting_mix_;
  if (mix.size() != state.config.apps.size()) {
    std::vector<double> weights;
    for (const auto& app : state.config.apps) weights.push_back(app.weight);
    mix = LoadBalancer1D(std::move(weights));
  }
  auto k = mix.next([&](std::size_t i) {
    const AppId a{static_cast<std::uint32_t>(i)};
    return state.source_remaining(a) > 0 && allowed(a);
  });
  if (!k) return std::nullopt;
  return AppId{static_cast<std::uint32_t>(*k)};
}

void Policy::observe(const NodeState&, const Event&) {}
void Policy::assigned(const NodeState&, const Target&, TaskRef) {}
std::optional<std::string> Policy::check_message(const NodeState&, const event::PolicyMessage&) const { return std::nullopt; }
void Policy::take_messages(const NodeState&, std::vector<Action>&) {}
std::optional<Seconds> Policy::next_deadline(const NodeState&) const { return std::nullopt; }
void Policy::replan(const NodeState&, NodePlan) {}

namespace {

template <class P>
std::unique_ptr<Policy> create(std::string_view name, const PolicyOptions& options) {
  if (!options.empty())
    throw std::invalid_argument("policy '" + std::string(name) + "' takes no options, got '" + options.begin()->first + "'");
  return std::make_unique<P>();
}

std::unique_ptr<Policy> create_price(std::string_view, const PolicyOptions& options) {
  return std::make_unique<PricePolicy>(PriceParams::from_options(options));
}
std::vector<std::string> no_keys() { return {}; }
/// lp's options (docs/live-model.md): `replan` = 1 re-plans from the run's online
/// estimates, 0 (default) follows the first plan to the end; without a calibration, the
/// tightness rule of the first plan: `plan_ci` (relative half-width of the 95% interval,
/// in (0, 1)), `plan_samples` (whole, >= 2), `plan_wait` (seconds, > 0); runtime/lp/EstimatePlan.
std::vector<std::string> lp_keys() { return {"replan", "plan_ci", "plan_samples", "plan_wait"}; }
std::unique_ptr<Policy> create_lp(std::string_view, const PolicyOptions& options) {
  if (const auto it = options.find("replan"); it != options.end() && it->second != 0 && it->second != 1)
    throw std::invalid_argument("replan must be 0 or 1");
  if (const auto it = options.find("plan_ci"); it != options.end() && !(it->second > 0 && it->second < 1))
    throw std::invalid_argument("plan_ci must be in (0, 1) (a relative half-width)");
  if (const auto it = options.find("plan_samples"); it != options.end() && !(it->second >= 2 && it->second <= 1e6 && it->second == static_cast<double>(static_cast<long>(it->second))))
    throw std::invalid_argument("plan_samples must be a whole number of samples >= 2");
  if (const auto it = options.find("plan_wait"); it != options.end() && !(it->second > 0 && it->second < 1e300))
    throw std::invalid_argument("plan_wait must be > 0 seconds");
  return std::make_unique<LpPolicy>();
}

/// The one list of policies (papers/beaumont2006 §4, in the paper's order): the experiment
/// parser, the tools and make_policy all read it.
struct RegistryEntry {
  std::string_view name;
  const std::type_info* type;  ///< The class, for Policy::name().
  std::unique_ptr<Policy> (*create)(std::string_view, const PolicyOptions&);
  std::vector<std::string> (*keys)();
};
const RegistryEntry registry[] = {
    {"fcfs", &typeid(FcfsPolicy), &create<FcfsPolicy>, &no_keys},
    {"cgbc", &typeid(CgbcPolicy), &create<CgbcPolicy>, &no_keys},
    {"pbc", &typeid(PbcPolicy), &create<PbcPolicy>, &no_keys},
    {"lp", &typeid(LpPolicy), &create_lp, &lp_keys},
    {"data-centric", &typeid(DataCentricPolicy), &create<DataCentricPolicy>, &no_keys},
    {"price", &typeid(PricePolicy), &create_price, &PriceParams::keys},  // papers/bertin2008 §4
};

}  // namespace

std::string_view Policy::name() const {
  for (const auto& entry : registry)
    if (*entry.type == typeid(*this)) return entry.name;
  return "unregistered";  // a policy class not in the registry (only a test's own)
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& entry : registry) names.emplace_back(entry.name);
  return names;
}

bool is_policy_name(std::string_view name) {
  for (const auto& entry : registry)
    if (entry.name == name) return true;
  return false;
}

bool policy_needs_calibration(std::string_view name) { return make_policy(name)->needs_calibration(); }

std::vector<std::string> policy_option_keys(std::string_view name) {
  for (const auto& entry : registry)
    if (entry.name == name) return entry.keys();
  return {};
}

std::unique_ptr<Policy> make_policy(std::string_view name, const PolicyOptions& options) {
  for (const auto& entry : registry)
    if (entry.name == name) return entry.create(name, options);
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown policy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace treefarm::core
