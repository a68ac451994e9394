#pragma once
/// @file CampaignReport.hpp
/// The outputs of the paper campaign: the histograms of Figures 2 and 3 of
/// papers/beaumont2006 (gnuplot), campaign.json and the Markdown report
/// paper-campaign.md. Internal to tools/sim (Campaign.cpp).

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "lab/campaign/CampaignPlan.hpp"
#include "lab/campaign/CampaignStats.hpp"

namespace treefarm::lab::campaign {

/// What the report tells of a finished campaign.
struct CampaignRun {
  const CampaignOptions& options;
  std::uint32_t parallel = 1;              ///< Simulations at once.
  std::time_t started = 0;                 ///< When the campaign started (UTC).
  double wall_seconds = 0;                 ///< Wall time of the whole campaign, seconds.
  const std::vector<Platform>& platforms;
  const std::vector<Job>& jobs;
  const CampaignStats& stats;
  std::string interrupted;                 ///< "" or why the campaign covers fewer simulations than planned
};

/// printf of one number; "–" when it is not finite.
std::string fmt(const char* format, double x);

/// The command line of the report when CampaignOptions::command is empty.
std::string default_command(const CampaignOptions& o, std::uint32_t jobs);

/// Writes OUT/data/ (histogram data and gnuplot script) and runs gnuplot for
/// OUT/ln-ratio.png and OUT/deviation.png. Returns "" or why there is no picture.
std::string plot_histograms(const std::filesystem::path& out, const CampaignRun& run);

/// Writes OUT/campaign.json. Throws std::runtime_error when it cannot.
void write_json(const std::filesystem::path& out, const CampaignRun& run);

/// Writes OUT/paper-campaign.md (`plot_error`: plot_histograms' answer). Throws
/// std::runtime_error when it cannot.
void write_report(const std::filesystem::path& out, const CampaignRun& run, const std::string& plot_error);

}  // namespace treefarm::lab::campaign
