// The bearer tokens file, read by the broker (broker/service/auth_files.h)
// and written with `tidegate auth hash-token`: one `PRINCIPAL SHA256HEX` per
// line, `#` comments and blank lines allowed (docs/security.md). The hex is
// SHA-256 of the token, so the tokens themselves are never stored.
//
// Here, below the broker and the CLI, so the command that hashes a token and
// the broker that checks it cannot disagree. Pure; thread-safe.
#ifndef TIDEGATE_API_TOKENS_TOKEN_FILE_H_
#define TIDEGATE_API_TOKENS_TOKEN_FILE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace tidegate::tokens {

// Lower-case hex SHA-256 of `data`: a token as the tokens file lists it.
std::string Sha256Hex(const std::string& data);

// The text of a tokens file as sha256 hex -> principal. INVALID_ARGUMENT
// naming `source` and the line for a line that is not `PRINCIPAL SHA256HEX`
// (64 lower-case hex digits) or a hash listed twice.
absl::StatusOr<std::map<std::string, std::string>> ParseTokenFile(const std::string& text,
                                                                  const std::string& source);

}  // namespace tidegate::tokens

#endif  // TIDEGATE_API_TOKENS_TOKEN_FILE_H_
