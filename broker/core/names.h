// Bounds on the names and labels callers give the broker: job ids, team and
// cluster names, labels. They end up in every table, log line and ledger row,
// so they are short and printable: at most 253 bytes of [A-Za-z0-9._:/-]
// (Kubernetes object names, plus ':' and '/' for ids like "slurm:42" and
// "k8s:ns/name", and '_', which Kueue-migrated scenarios and batch systems use).
#ifndef TIDEGATE_BROKER_CORE_NAMES_H_
#define TIDEGATE_BROKER_CORE_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/map.h"

namespace tidegate::core {

inline constexpr size_t kMaxNameBytes = 253;
inline constexpr size_t kMaxLabels = 64;
inline constexpr size_t kMaxLabelKeyBytes = 253;
inline constexpr size_t kMaxLabelValueBytes = 1024;

// OK, or INVALID_ARGUMENT "<field>: <what is wrong>" quoting the value
// (shortened and with unprintable bytes escaped, so the message itself stays
// printable and short).
absl::Status ValidateName(std::string_view field, std::string_view value);

// Labels: at most kMaxLabels entries; keys are names as above (at most
// kMaxLabelKeyBytes), values printable ASCII of at most kMaxLabelValueBytes.
absl::Status ValidateLabels(std::string_view field, const google::protobuf::Map<std::string, std::string>& labels);

// A value as error messages quote it: at most 64 bytes, C-escaped.
std::string QuoteForError(std::string_view value);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_NAMES_H_
