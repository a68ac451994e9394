#pragma once
/// @file ExperimentText.hpp
/// Questions about an experiment file's text before it is parsed.

#include <string>

namespace treefarm::model {

/// True if `text` (an experiment file's content) has a `[[node]]` table: an experiment
/// without one runs on a served tree as it is (docs/serve.md).
bool has_node_tables(const std::string& text);

}  // namespace treefarm::model
