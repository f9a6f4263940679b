#include "cli/config_command.h"

#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/value_format.h"

namespace tidegate::cli {
namespace {

// The field path a refusal message is about, or "" when it names none.
std::string PathOf(const std::string& message, const v1::Config& config) {
  constexpr std::string_view kTeam = "team '";
  if (message.rfind(kTeam, 0) == 0) {
    const size_t end = message.find('\'', kTeam.size());
    if (end == std::string::npos) return "";
    const std::string name = message.substr(kTeam.size(), end - kTeam.size());
    for (int i = 0; i < config.teams_size(); ++i) {
      if (config.teams(i).name() == name) return absl::StrCat("teams[", i, "].name");
    }
    return "";
  }
  const size_t colon = message.find(": ");
  if (colon == std::string::npos) return "";
  const std::string path = message.substr(0, colon);
  if (path.empty() || path.find(' ') != std::string::npos) return "";
  return path;
}

}  // namespace

std::string LocateConfigError(const std::string& message, const v1::Config& config,
                              const api::SourceMap& where) {
  const std::string path = PathOf(message, config);
  const int line = path.empty() ? 0 : where.LineOf(path);
  if (line > 0) return absl::StrCat(where.filename(), ":", line, ": ", message);
  return absl::StrCat(where.filename(), ": ", message);
}

void PrintApplyResult(const v1::ApplyConfigResponse& response, bool dry_run, std::ostream& out,
                      std::ostream& err) {
  for (const std::string& warning : response.warnings()) {
    err << "tidegate: warning: " << warning << "\n";
  }
  for (const std::string& line : response.diff()) out << line << "\n";
  const int n = response.diff_size();
  const std::string changes = absl::StrCat(n, n == 1 ? " change" : " changes");
  if (n == 0) {
    out << "no changes\n";
  } else if (dry_run) {
    out << "dry run: " << changes << ", nothing applied\n";
  } else if (response.applied()) {
    out << "applied " << changes << "\n";
  } else {
    out << changes << ", not applied\n";
  }
}

namespace {

struct ApplyOptions {
  std::string file;
  bool dry_run = false;
  std::string output = "table";
};

int RunApply(const ApplyOptions& options, const ClientOptions& client_options, const Io& io) {
  v1::ApplyConfigRequest request;
  api::SourceMap where;
  if (absl::Status s = api::LoadYamlFile(options.file, request.mutable_config(), &where);
      !s.ok()) {
    *io.err << "tidegate config apply: " << s.message() << "\n";
    return kExitBadInput;
  }
  request.set_dry_run(options.dry_run);

  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(client_options);
  if (!client.ok()) {
    *io.err << "tidegate: " << client.status().message() << "\n";
    return kExitBadInput;
  }
  v1::ApplyConfigResponse response;
  grpc::ClientContext context;
  (*client)->SetDeadline(&context);
  grpc::Status status = (*client)->quota().ApplyConfig(&context, request, &response);
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
    status = grpc::Status(status.error_code(),
                          LocateConfigError(status.error_message(), request.config(), where));
  }
  if (!status.ok()) return (*client)->Fail(status, *io.err);
  if (options.output == "json") {
    *io.out << ToJson(response) << '\n';
  } else {
    PrintApplyResult(response, options.dry_run, *io.out, *io.err);
  }
  io.out->flush();
  return kExitOk;
}

}  // namespace

void AddConfigCommand(CLI::App& app, const Io& io, const ClientOptions& client, int* exit_code) {
  CLI::App* config = app.add_subcommand("config", "Change the broker's configuration");
  config->require_subcommand(1);
  config->fallthrough();
  config->footer(BrokerCommandFooter());

  auto options = std::make_shared<ApplyOptions>();
  CLI::App* apply = config->add_subcommand(
      "apply", "Validate a config file and replace the broker's quota tree and policy with it; "
               "prints the changes");
  apply->add_option("FILE", options->file, "The config (YAML, like deploy/examples/tidegate.yaml)")
      ->required();
  apply->add_flag("--dry-run", options->dry_run,
                  "Validate and show the changes; apply nothing");
  AddOutputOption(*apply, &options->output);
  apply->footer(BrokerCommandFooter());
  apply->callback(
      [options, io, &client, exit_code] { *exit_code = RunApply(*options, client, io); });
}

}  // namespace tidegate::cli
