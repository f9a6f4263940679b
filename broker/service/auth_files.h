// The files behind auth.h: the roles file (YAML) and the tokens file, loaded
// at start-up and again on SIGHUP (docs/security.md).
//
// Roles file:
//   principals:
//     alice: [admin]
//     sched-ml: [{scheduler: [ml, vision]}]
//     agent-a: [{agent: a}]
//     lead: [{viewer: "*"}]
//     trainer: [{framework: "k8s:ml/"}]
//
// Tokens file: one `PRINCIPAL SHA256HEX` per line (# comments, blank lines);
// the hex is SHA-256 of the token (`tidegate auth hash-token`). The tokens
// themselves are never stored by the broker. Its format and the hash are in
// api/tokens/token_file.h, which the CLI shares.
#ifndef TIDEGATE_BROKER_SERVICE_AUTH_FILES_H_
#define TIDEGATE_BROKER_SERVICE_AUTH_FILES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/tokens/token_file.h"
#include "broker/service/auth.h"

namespace tidegate::service::auth {

struct Policy {
  std::map<std::string, std::vector<Role>> roles;     // principal -> roles
  std::map<std::string, std::string> token_principal;  // sha256 hex -> principal
};

// INVALID_ARGUMENT naming the file, the principal or line and the value on
// bad input; NOT_FOUND when a file cannot be read. An empty tokens_path means
// no tokens (certificates only).
absl::StatusOr<Policy> LoadPolicy(const std::string& roles_path, const std::string& tokens_path);

// Parses the text of a roles file; `source` names it in errors.
absl::StatusOr<std::map<std::string, std::vector<Role>>> ParseRoles(const std::string& text,
                                                                  const std::string& source);

// The hash `token_principal` is keyed by (api/tokens/token_file.h).
using tokens::Sha256Hex;

}  // namespace tidegate::service::auth

#endif  // TIDEGATE_BROKER_SERVICE_AUTH_FILES_H_
