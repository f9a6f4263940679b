// Vocabulary types of the broker core: time, quantities and checked arithmetic.
#ifndef TIDEGATE_BROKER_CORE_TYPES_H_
#define TIDEGATE_BROKER_CORE_TYPES_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "absl/strings/string_view.h"

namespace tidegate::core {

// Debian's Abseil 20220623 has its own absl::string_view (not an alias of
// std::string_view); this converts for lookups in Abseil containers.
inline absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Milliseconds since the Unix epoch (wall time in the service, virtual time in
// the simulator). The core never reads a clock: time is always an argument.
using Time = int64_t;
inline constexpr Time kMillisPerSecond = 1000;

// A resource quantity (GPUs, milli-CPUs, MiB). int64; overflow is an error.
using Quantity = int64_t;
inline constexpr Quantity kInfinite = std::numeric_limits<Quantity>::max();

// Checked arithmetic: nullopt on overflow, never a wrap.
inline std::optional<Quantity> CheckedMul(Quantity a, Quantity b) {
  Quantity out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<Quantity> CheckedAdd(Quantity a, Quantity b) {
  Quantity out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Saturating arithmetic for limits, where kInfinite means "no limit".
inline Quantity SatAdd(Quantity a, Quantity b) {
  Quantity out;
  if (__builtin_add_overflow(a, b, &out)) {
    return (a > 0) ? kInfinite : std::numeric_limits<Quantity>::min();
  }
  return out;
}
inline Quantity SatMul(Quantity a, Quantity b) {
  Quantity out;
  if (__builtin_mul_overflow(a, b, &out)) return ((a < 0) != (b < 0)) ? std::numeric_limits<Quantity>::min() : kInfinite;
  return out;
}
inline Quantity SatSub(Quantity a, Quantity b) {
  if (a == kInfinite) return kInfinite;
  Quantity out;
  if (__builtin_sub_overflow(a, b, &out)) {
    return (a > 0) ? kInfinite : std::numeric_limits<Quantity>::min();
  }
  return out;
}

}  // namespace tidegate::core

#endif  // TIDEGATE_BROKER_CORE_TYPES_H_
