#pragma once
/// @file Gnuplot.hpp
/// Running gnuplot (Debian package gnuplot-nox): every PNG treefarm draws — report,
/// compare, sweep, simulate --trace, the lab's campaigns, the scaling benchmarks — is a
/// gnuplot script written next to it and run through here.

#include <filesystem>
#include <string>

namespace treefarm::plot {

/// `s` as a gnuplot single-quoted string (a ' inside is doubled), e.g. a file name.
std::string quote(const std::string& s);

/// Whether a program `gnuplot` is on PATH.
bool gnuplot_available();

/// Runs `gnuplot SCRIPT`, its output and errors into `log` (discarded when empty). Returns
/// "" when it exited 0, else why not: "gnuplot is not installed (...)" or "gnuplot failed
/// on SCRIPT (exit N[, see LOG])".
std::string run_gnuplot(const std::filesystem::path& script, const std::filesystem::path& log = {});

}  // namespace treefarm::plot
