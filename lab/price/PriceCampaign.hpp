#pragma once
/// @file PriceCampaign.hpp
/// `treefarm-lab campaign price`: the price policy's agents (papers/bertin2008 §5) on
/// random trees from gen-platform, each iterated beside its Ipopt optimum
/// (simulate::run_price_trace). docs/results/price.md reports it.

#include <cstdint>
#include <iosfwd>
#include <string>

#include "runtime/core/Policy.hpp"
#include "runtime/lp/PlatformModel.hpp"

namespace treefarm::lab::price {

/// The campaign's options: random trees from gen-platform, each iterated.
struct PriceCampaignOptions {
  std::uint32_t trees = 100;
  std::uint32_t min_nodes = 5, max_nodes = 50;   ///< nodes per tree, drawn uniformly
  std::uint32_t max_degree = 5;
  std::uint32_t apps = 3;
  std::uint64_t iterations = 500;                ///< budget per tree
  std::uint64_t seed = 2008;
  std::string comm_model = "multi-port";         ///< of the generated platforms
  core::PolicyOptions options;                   ///< [policy.price] of every tree
  /// Without `rate_unit` in `options`: per tree, auto_rate_unit() of its platform.
  bool cascade = false;                          ///< simulate::PriceNetwork::set_cascade
  std::string out_dir = "out/price-campaign";
  std::string command;                           ///< written into the report
};

/// A rate unit for Table 1's steps on `model` without knowing its optimum: the mean over
/// the computing nodes and applications of min(compute rate, rate the link from the
/// parent carries), tasks/s, divided by 5000 (on examples/bertin2008.toml: ≈ 0.001, the
/// value that works there). A heuristic of this study, not of the paper.
double auto_rate_unit(const lp::PlatformModel& model);

/// Runs the campaign; writes OUT/price-campaign.md (table) and OUT/price-campaign.csv
/// (one row per tree). Returns 0 (a tree whose optimum Ipopt cannot compute is reported
/// and left out).
int price_campaign(const PriceCampaignOptions& options, std::ostream& progress);

}  // namespace treefarm::lab::price
