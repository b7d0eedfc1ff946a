#pragma once
// Replays the memory-format oracle cases (ORACLE.md format, recorded from PyTorch 1.13) against
// strider: builds each input by replaying its recipe with strider's own ops, checks the input
// metadata, runs the op, and compares shape, strides, predicates, aliasing, dtype and values.
#include <string>

#include <nlohmann/json.hpp>

namespace strider::oracle {

enum class Outcome { Pass, Fail, Skip };

struct CaseResult {
  Outcome outcome = Outcome::Pass;
  std::string detail;  // why it failed or was skipped
};

CaseResult replay_case(const nlohmann::json& c);

}  // namespace strider::oracle
