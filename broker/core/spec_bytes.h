// A job spec as the core keeps it: serialized, not as a message. A JobSpec
// message with its two maps and heap strings costs about 0.6 KB a job; its
// bytes a tenth of that, and the read model and the ledger's job rows take
// them as they are.
//
// The serialization is deterministic (map entries sorted by key), so two
// equal specs give equal bytes whatever order their maps were filled in, and
// comparing bytes answers what MessageDifferencer::Equals answered for
// JobSpec: proto3 fields left at their default are written by neither, an
// `optional` field set to its default is written and compared by both, an
// empty map is nothing to both, and there are no floats (where -0.0 and NaN
// would tell them apart). The one difference: unknown fields are compared in
// the order they came, which the service scrubs before the core sees a spec.
#ifndef TIDEGATE_BROKER_CORE_SPEC_BYTES_H_
#define TIDEGATE_BROKER_CORE_SPEC_BYTES_H_

#include <string>

#include "tidegate/v1/config.pb.h"

namespace tidegate::core {

// `spec` serialized deterministically, in a string of exactly its size.
std::string SpecBytes(const v1::JobSpec& spec);
// The message of SpecBytes(spec); an empty spec for bytes that do not parse
// (the core only keeps bytes it made).
v1::JobSpec ParseSpecBytes(const std::string& bytes);

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_SPEC_BYTES_H_
