#pragma once
/// @file FittedExponent.hpp
/// The exponent of a cost against a size, as every scaling benchmark prints it.

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace treefarm::bench {

/// The exponent p of cost ≈ a·size^p: the least-squares slope of log(cost) on log(size)
/// over the points with size > 0 and cost > 0. 1 means the cost grows in proportion to the
/// size, 0 that it stays flat. @throws std::invalid_argument with fewer than two such
/// points of distinct sizes, or sizes and costs of different lengths.
inline double fitted_exponent(const std::vector<double>& sizes, const std::vector<double>& costs) {
  if (sizes.size() != costs.size())
    throw std::invalid_argument("fitted_exponent: " + std::to_string(sizes.size()) + " sizes but " +
                                std::to_string(costs.size()) + " costs");
  std::vector<std::pair<double, double>> points;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] > 0 && costs[i] > 0) points.emplace_back(std::log(sizes[i]), std::log(costs[i]));
  if (points.size() < 2) throw std::invalid_argument("fitted_exponent: fewer than two points with size > 0 and cost > 0");
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) {
    mx += x;
    my += y;
  }
  mx /= static_cast<double>(points.size());
  my /= static_cast<double>(points.size());
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
  }
  if (sxx <= 0) throw std::invalid_argument("fitted_exponent: all sizes are equal");
  return sxy / sxx;
}

}  // namespace treefarm::bench
