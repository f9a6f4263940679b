#include "broker/service/pagination.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tidegate::service {

// Token = web-safe base64 of "v1:<length of query>:<query><last key>".
std::string PageToken(const std::string& query, const std::string& last_key) {
  return absl::WebSafeBase64Escape(absl::StrCat("v1:", query.size(), ":", query, last_key));
}

absl::StatusOr<PageRequest> ParsePage(int32_t page_size, const std::string& page_token, const std::string& query) {
  PageRequest page;
  if (page_size < 0) return absl::InvalidArgumentError(absl::StrCat("page_size: ", page_size, " must be >= 0"));
  page.size = page_size == 0 ? kDefaultPageSize : std::min(page_size, kMaxPageSize);
  if (page_token.empty()) return page;
  const auto bad = [] {
    return absl::InvalidArgumentError(
        "page_token: not a token of this list (send the next_page_token of the previous page, with the same filter)");
  };
  std::string raw;
  if (!absl::WebSafeBase64Unescape(page_token, &raw) || raw.rfind("v1:", 0) != 0) return bad();
  const size_t colon = raw.find(':', 3);
  size_t length = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(raw.substr(3, colon - 3), &length)) return bad();
  if (raw.size() - colon - 1 < length || raw.compare(colon + 1, length, query) != 0) return bad();
  page.after = raw.substr(colon + 1 + length);
  if (page.after.empty()) return bad();
  return page;
}

}  // namespace tidegate::service
