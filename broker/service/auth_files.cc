#include "broker/service/auth_files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "api/tokens/token_file.h"
#include "yaml-cpp/yaml.h"

namespace tidegate::service::auth {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::set<std::string>> TeamList(const YAML::Node& node, const std::string& where) {
  std::set<std::string> teams;
  if (node.IsScalar()) {
    teams.insert(node.as<std::string>());
  } else if (node.IsSequence()) {
    for (const auto& t : node) {
      if (!t.IsScalar()) return absl::InvalidArgumentError(absl::StrCat(where, ": a team must be a name"));
      teams.insert(t.as<std::string>());
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a team or a list of teams"));
  }
  if (teams.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": names no team"));
  return teams;
}

absl::StatusOr<Role> ParseRole(const YAML::Node& node, const std::string& where) {
  Role role;
  if (node.IsScalar()) {
    if (node.as<std::string>() != "admin") {
      return absl::InvalidArgumentError(absl::StrCat(where, ": role '", node.as<std::string>(),
                                                     "' needs a value (only admin stands alone)"));
    }
    role.kind = RoleKind::kAdmin;
    return role;
  }
  if (!node.IsMap() || node.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": a role is `admin` or one `kind: value` pair"));
  }
  const std::string kind = node.begin()->first.as<std::string>();
  const YAML::Node value = node.begin()->second;
  const std::string at = absl::StrCat(where, ".", kind);
  if (kind == "scheduler" || kind == "viewer") {
    role.kind = kind == "scheduler" ? RoleKind::kScheduler : RoleKind::kViewer;
    if (kind == "viewer" && value.IsScalar() && value.as<std::string>() == "*") {
      role.all_teams = true;
      return role;
    }
    auto teams = TeamList(value, at);
    if (!teams.ok()) return teams.status();
    role.teams = *std::move(teams);
    return role;
  }
  if (kind == "agent" || kind == "framework") {
    if (!value.IsScalar() || value.as<std::string>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": expected a ",
                                                     kind == "agent" ? "cluster name" : "job id or prefix"));
    }
    role.kind = kind == "agent" ? RoleKind::kAgent : RoleKind::kFramework;
    (kind == "agent" ? role.cluster : role.job_prefix) = value.as<std::string>();
    return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": unknown role '", kind, "' (admin, scheduler, agent, viewer, framework)"));
}

}  // namespace

absl::StatusOr<std::map<std::string, std::vector<Role>>> ParseRoles(const std::string& text,
                                                                  const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  std::map<std::string, std::vector<Role>> out;
  const YAML::Node principals = root["principals"];
  if (!principals || !principals.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": expected a `principals:` map of name -> roles"));
  }
  try {
    for (const auto& entry : principals) {
      const std::string name = entry.first.as<std::string>();
      const std::string where = absl::StrCat(source, ": principals.", name);
      if (!entry.second.IsSequence()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": expected a list of roles"));
      }
      std::vector<Role> roles;
      for (const auto& r : entry.second) {
        auto role = ParseRole(r, where);
        if (!role.ok()) return role.status();
        roles.push_back(*std::move(role));
      }
      out[name] = std::move(roles);
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  return out;
}

absl::StatusOr<Policy> LoadPolicy(const std::string& roles_path, const std::string& tokens_path) {
  Policy policy;
  auto roles_text = ReadFile(roles_path);
  if (!roles_text.ok()) return roles_text.status();
  auto roles = ParseRoles(*roles_text, roles_path);
  if (!roles.ok()) return roles.status();
  policy.roles = *std::move(roles);
  if (tokens_path.empty()) return policy;
  auto tokens_text = ReadFile(tokens_path);
  if (!tokens_text.ok()) return tokens_text.status();
  auto token_principal = tokens::ParseTokenFile(*tokens_text, tokens_path);
  if (!token_principal.ok()) return token_principal.status();
  policy.token_principal = *std::move(token_principal);
  return policy;
}

}  // namespace tidegate::service::auth
