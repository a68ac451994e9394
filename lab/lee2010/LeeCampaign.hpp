#pragma once
/// @file LeeCampaign.hpp
/// `treefarm experiment lee2010`: the sweeps of papers/lee2010 slides 21–23 over the
/// job-level simulation of lab/lee2010/LeeStudy — average wait time of every scheme against
/// the offered load (slide 21) and against the job constraint ratio (slide 23), and the
/// message cost (slide 22). Writes lee2010.csv, lee2010.md and, when gnuplot is on PATH,
/// lee2010-load.png and lee2010-ratio.png into the output directory.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "lab/lee2010/LeeStudy.hpp"

namespace treefarm::lab::lee2010 {

struct LeeCampaignOptions {
  LeeStudyOptions base;                        ///< nodes, jobs, period, neighbours, balance
  std::vector<double> loads = {0.5, 0.7, 0.9, 1.1};   ///< offered loads of the load sweep
  double ratio_at_loads = 0.5;                 ///< constraint ratio of the load sweep
  std::vector<double> ratios = {0.2, 0.4, 0.6, 0.8};  ///< constraint ratios of the ratio sweep
  double load_at_ratios = 0.9;                 ///< offered load of the ratio sweep
  std::uint32_t seeds = 2;                     ///< grids per point (seeds base.seed, base.seed + 1, …)
  std::vector<LeeScheme> schemes = all_lee_schemes();
  std::string out_dir = "out/lee2010";
  std::string command;                         ///< the command line, written into lee2010.md
};

/// Runs both sweeps, prints a table per sweep to `out`, writes the files. Returns 0.
int lee_campaign(const LeeCampaignOptions& options, std::ostream& out);

}  // namespace treefarm::lab::lee2010
