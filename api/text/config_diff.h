// What a config change changes, field by field, for people: one line per
// changed value, in the words of the config file.
//
//   research gpu guaranteed 16 -> 8
//   serving gpu borrow_limit 0 -> 4
//   training preemption reclaim any -> never
//   cluster a capacity gpu 64 -> 80
//   policy tick_s 10 -> 5
//   + team inference (gpu guaranteed 8; parent "serving")
//   - team old
//
// A field that is not set reads "unset" (e.g. a borrow limit removed:
// "serving gpu borrow_limit 0 -> unset"). Teams and clusters are matched by
// name, so a reordered file has no changes. Lines are ordered: clusters,
// teams (in the new config's order, removed ones last), policy.
//
// Pure; thread-compatible.
#ifndef TIDEGATE_API_TEXT_CONFIG_DIFF_H_
#define TIDEGATE_API_TEXT_CONFIG_DIFF_H_

#include <string>
#include <vector>

#include "tidegate/v1/config.pb.h"

namespace tidegate::text {

std::vector<std::string> ConfigDiff(const v1::Config& before, const v1::Config& after);

}  // namespace tidegate::text

#endif  // TIDEGATE_API_TEXT_CONFIG_DIFF_H_
