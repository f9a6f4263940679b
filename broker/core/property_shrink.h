// Shrinking a failing property case, and its report.
#ifndef TIDEGATE_BROKER_CORE_PROPERTY_SHRINK_H_
#define TIDEGATE_BROKER_CORE_PROPERTY_SHRINK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "broker/core/property_generator.h"

namespace tidegate::core::property {

// Removes chunks of steps, and leaf teams no step names, while the same kind
// of failure as `err` persists.
void Shrink(v1::Config* config, std::vector<Step>* steps, const Options& opt, const std::string& err);

// The case as text: seed, config and commands (TIDEGATE_PROPERTY_VERBOSE=1:
// with every step's events).
std::string Report(uint64_t seed, const v1::Config& config, const std::vector<Step>& steps, const Options& opt);

}  // namespace tidegate::core::property

#endif  // TIDEGATE_BROKER_CORE_PROPERTY_SHRINK_H_
