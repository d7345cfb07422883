// truth_summary.h: the few lines gapwatch-sim prints about the truth it wrote.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace gapwatch_sim {

void print_summary(std::ostream& out, const nlohmann::ordered_json& truth, const std::string& expected_dominant);

}  // namespace gapwatch_sim
