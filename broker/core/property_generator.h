// The property tests' generator: seeded random quota trees and command
// streams chosen from the live state, and RunSeed, which runs one seed
// through a Checker.
#ifndef TIDEGATE_BROKER_CORE_PROPERTY_GENERATOR_H_
#define TIDEGATE_BROKER_CORE_PROPERTY_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "broker/core/property_support.h"

namespace tidegate::core::property {

// ---------------------------------------------------------------- generator

struct Step {
  internal::v1::Command cmd;
  Time now;
};

struct Options {
  bool adopt = false;    // mix in adopt batches (skips checks: no feasibility)
  bool elastic = false;  // ~30% of jobs elastic, and ack_resize commands
};

// A random config: 1-3 levels, 1-2 resources, 1-2 clusters, random
// guarantees, limits and policies.
v1::Config RandomConfig(Rng& rng, const Options& opt);

// Runs one seed, choosing each command from the live state. Stops at the
// first failure (returned), recording the config, the steps taken and the
// event stream. `check`: check every property (else only record).
std::string RunSeed(uint64_t seed, const Options& opt, bool check, v1::Config* config, std::vector<Step>* steps,
                    std::vector<std::string>* stream);

// Replays `steps` on a fresh Checker; "" or the first property broken, and
// then (when `last_events` is given) the events of the step that broke it.
std::string Replay(const v1::Config& config, const std::vector<Step>& steps, const Options& opt,
                   std::string* last_events = nullptr);

}  // namespace tidegate::core::property

#endif  // TIDEGATE_BROKER_CORE_PROPERTY_GENERATOR_H_
