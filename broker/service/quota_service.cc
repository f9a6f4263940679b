#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "api/text/config_diff.h"
#include "api/yaml_loader.h"
#include "broker/core/config.h"
#include "broker/service/pagination.h"
#include "broker/service/services.h"
#include "google/protobuf/util/message_differencer.h"

namespace tidegate::service {
namespace {

grpc::Status NotFound(const std::string& what) { return grpc::Status(grpc::StatusCode::NOT_FOUND, what); }

std::string Day(int64_t ms) {
  return absl::FormatTime("%Y-%m-%d", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

}  // namespace

grpc::ServerUnaryReactor* QuotaServiceImpl::GetTeam(grpc::CallbackServerContext* ctx, const v1::GetTeamRequest* req,
                                                    v1::TeamInfo* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (auto team = loop_->Published()->TeamWithFigures(req->team())) {
    *resp = *std::move(team);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  reactor->Finish(NotFound(absl::StrCat("team '", req->team(), "' is not a team")));
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ListTeams(grpc::CallbackServerContext* ctx, const v1::ListTeamsRequest*,
                                                      v1::ListTeamsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  for (auto& t : loop_->Published()->Teams()) *resp->add_teams() = std::move(t);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ListLoans(grpc::CallbackServerContext* ctx,
                                                      const v1::ListLoansRequest* req, v1::ListLoansResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!req->team().empty() && !loop_->Published()->FindTeam(req->team())) {
    reactor->Finish(NotFound(absl::StrCat("team '", req->team(), "' is not a team")));
    return reactor;
  }
  if (req->since_ms() < 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat("since_ms: ", req->since_ms(), " must be >= 0")));
    return reactor;
  }
  const std::string query = absl::StrCat("loans/", req->since_ms(), "/", req->team());
  auto page = ParsePage(req->page_size(), req->page_token(), query);
  if (!page.ok()) {
    reactor->Finish(ToGrpc(page.status()));
    return reactor;
  }
  absl::StatusOr<std::vector<ledger::LoanRow>> rows;
  {
    absl::MutexLock lock(&reader_mu_);
    rows = reader_->Loans(req->team(), Day(req->since_ms()));
  }
  if (!rows.ok()) {
    reactor->Finish(ToGrpc(rows.status()));
    return reactor;
  }
  // Rows come ordered by (day, borrower, lender, resource); joined with NUL,
  // which no name holds, the key orders the same way.
  auto key = [](const ledger::LoanRow& r) { return absl::StrCat(r.day, std::string(1, '\0'), r.borrower,
                                                                  std::string(1, '\0'), r.lender,
                                                                  std::string(1, '\0'), r.resource); };
  const ledger::LoanRow* last = nullptr;
  for (const auto& row : *rows) {
    if (!page->after.empty() && key(row) <= page->after) continue;
    if (resp->loans_size() == page->size) {
      resp->set_next_page_token(PageToken(query, key(*last)));
      break;
    }
    last = &row;
    v1::Loan* loan = resp->add_loans();
    loan->set_borrower(row.borrower);
    loan->set_lender(row.lender);
    loan->set_resource(row.resource);
    loan->set_day(row.day);
    loan->set_hours(row.amount / 3600.0);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::GetUsage(grpc::CallbackServerContext* ctx, const v1::GetUsageRequest* req,
                                                     v1::GetUsageResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const auto model = loop_->Published();
  if (!model->FindTeam(req->team())) {
    reactor->Finish(NotFound(absl::StrCat("team '", req->team(), "' is not a team")));
    return reactor;
  }
  // A config never drops a resource, so every resource usage was kept for
  // is in it: any other name is a typo, not an empty history.
  if (!req->resource().empty()) {
    std::set<std::string> known;
    for (const v1::Cluster& cluster : model->config().clusters()) {
      for (const auto& [name, capacity] : cluster.capacity()) known.insert(name);
    }
    if (!known.count(req->resource())) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   absl::StrCat("resource: '", req->resource(), "' is not a resource of the config (",
                                                absl::StrJoin(known, ", "), ")")));
      return reactor;
    }
  }
  const int64_t step_s = req->step_s() == 0 ? 3600 : req->step_s();
  if (step_s < 0 || step_s % 3600 != 0) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat("step_s: ", req->step_s(), " must be a positive multiple of 3600")));
    return reactor;
  }
  absl::StatusOr<std::vector<ledger::UsageRow>> rows;
  {
    absl::MutexLock lock(&reader_mu_);
    rows = reader_->Usage(req->team(), req->since_ms());
  }
  if (!rows.ok()) {
    reactor->Finish(ToGrpc(rows.status()));
    return reactor;
  }
  const int64_t step_ms = step_s * 1000;
  std::map<std::pair<int64_t, std::string>, v1::UsagePoint> points;
  for (const auto& row : *rows) {
    if (!req->resource().empty() && row.resource != req->resource()) continue;
    const int64_t start = row.hour_start_ms - (((row.hour_start_ms % step_ms) + step_ms) % step_ms);
    v1::UsagePoint& p = points[{start, row.resource}];
    p.set_start_ms(start);
    p.set_resource(row.resource);
    p.set_used(p.used() + row.used);
    p.set_borrowed(p.borrowed() + row.borrowed);
    p.set_lent(p.lent() + row.lent);
    p.set_queued(p.queued() + row.queued);
  }
  for (auto& [key, p] : points) *resp->add_points() = std::move(p);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* QuotaServiceImpl::ApplyConfig(grpc::CallbackServerContext* ctx,
                                                        const v1::ApplyConfigRequest* req,
                                                        v1::ApplyConfigResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  auto compiled = core::CompileConfig(req->config());
  if (!compiled.ok()) {
    reactor->Finish(ToGrpc(compiled.status().code() == absl::StatusCode::kUnimplemented
                               ? compiled.status()
                               : absl::InvalidArgumentError(compiled.status().message())));
    return reactor;
  }
  for (const auto& w : compiled->warnings) resp->add_warnings(w);
  if (std::string w = StartupFileWarning(req->config()); !w.empty()) resp->add_warnings(std::move(w));
  for (auto& line : text::ConfigDiff(loop_->Published()->config(), req->config())) resp->add_diff(std::move(line));
  // A dry run goes through the very checks of the real apply (the core's, on
  // a copy of the state), so it exits as the apply would.
  internal::v1::Command cmd;
  *cmd.mutable_apply_config() = req->config();
  const bool dry_run = req->dry_run();
  auto done = [reactor, resp, dry_run](absl::StatusOr<Applied> applied) {
    if (!applied.ok()) {
      reactor->Finish(ToGrpc(applied.status()));
      return;
    }
    for (const auto& e : applied->events) {
      if (e.type == core::EventType::kError) {
        reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, e.reason));
        return;
      }
    }
    resp->set_applied(!dry_run);
    reactor->Finish(grpc::Status::OK);
  };
  if (dry_run) {
    loop_->DryRun(std::move(cmd), std::move(done));
  } else {
    loop_->Submit(std::move(cmd), std::move(done));
  }
  return reactor;
}

std::string QuotaServiceImpl::StartupFileWarning(const v1::Config& next) const {
  if (startup_config_path_.empty()) return "";
  v1::Config file;
  if (absl::Status s = api::LoadYamlFile(startup_config_path_, &file); !s.ok()) {
    return absl::StrCat("tidegated was started with --config ", startup_config_path_,
                        ", which cannot be read now (", s.message(),
                        "); a restart needs that file to hold this config");
  }
  if (google::protobuf::util::MessageDifferencer::Equivalent(file, next)) return "";
  const std::vector<std::string> diff = text::ConfigDiff(next, file);
  return absl::StrCat("tidegated was started with --config ", startup_config_path_,
                      ", which this config contradicts (", diff.size(),
                      diff.size() == 1 ? " difference" : " differences",
                      diff.empty() ? "" : absl::StrCat(", e.g. ", diff.front()),
                      "); at its next restart the broker applies that file again: put this "
                      "config in it too");
}

}  // namespace tidegate::service
