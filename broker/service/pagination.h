// Pages of list answers (ListJobs, ListLoans), as Kubernetes lists page: a
// default and a maximum page size, an opaque token that resumes after the
// last key served, and a stable order (docs/limits.md). The token names the
// query it belongs to, so it cannot be replayed against another filter.
//
// Threading: pure functions.
#ifndef TIDEGATE_BROKER_SERVICE_PAGINATION_H_
#define TIDEGATE_BROKER_SERVICE_PAGINATION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tidegate::service {

inline constexpr int32_t kDefaultPageSize = 1000;
inline constexpr int32_t kMaxPageSize = 5000;

struct PageRequest {
  int32_t size = kDefaultPageSize;  // 1..kMaxPageSize
  std::string after;                // resume after this key; empty = from the start.
};

// page_size 0 = the default, above the maximum = the maximum, negative =
// INVALID_ARGUMENT; a token that does not parse or was made for another
// `query` = INVALID_ARGUMENT naming page_token.
absl::StatusOr<PageRequest> ParsePage(int32_t page_size, const std::string& page_token, const std::string& query);
// The token that resumes `query` after `last_key`.
std::string PageToken(const std::string& query, const std::string& last_key);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_PAGINATION_H_
