// Every RPC of the API against every role, through the real tidegated with
// TLS: allowed or denied as docs/security.md's table says. "Allowed" means
// the guard let the call through (whatever the handler then answered: OK,
// NOT_FOUND, FAILED_PRECONDITION for too little history, ...); "denied" is
// PERMISSION_DENIED. A principal without roles is denied everything and a
// caller without an identity is UNAUTHENTICATED everywhere.
#include <functional>
#include <map>

#include "gmock/gmock.h"
#include "tests/e2e_auth_fixture.h"
#include "tidegate/v1/forecast.grpc.pb.h"

namespace tidegate {
namespace {

using Call = std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&, const std::string& tag)>;

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

// The job every call is about: team ml, cluster a, id under the framework's
// prefix "fw:" (so each role's rule decides, not the id).
constexpr char kJob[] = "fw:table";

v1::SeriesSelector MlSeries() {
  v1::SeriesSelector s;
  s.set_team("ml");
  return s;
}

struct Row {
  const char* method;
  Call call;
  // Allowed for: admin, scheduler of ml, agent of a, viewer of ml, framework of fw:.
  bool admin, scheduler, agent, viewer, framework;
};

// About 200 lines: one row per RPC of the API, the call it makes and who may
// make it. The table is the specification (docs/security.md) and reads best
// whole; a row per function would only scatter it.
std::vector<Row> Table(const std::function<v1::AgentView()>& view_of_a) {
  using S = grpc::Status;
  using Ch = std::shared_ptr<grpc::Channel>;
  return {
      {"Admit",
       [](const Ch& ch, const std::string& tag) {
         auto ctx = Context();
         v1::AdmitRequest req;
         req.mutable_job()->set_job("fw:admit-" + tag);
         req.mutable_job()->set_team("ml");
         req.mutable_job()->set_cluster("a");
         (*req.mutable_job()->mutable_per_replica())["gpu"] = 1;
         v1::AdmitResponse resp;
         return v1::AdmissionService::NewStub(ch)->Admit(ctx.get(), req, &resp);
       },
       true, true, true, false, false},
      {"Release",
       [](const Ch& ch, const std::string& tag) {
         auto ctx = Context();
         v1::ReleaseRequest req;
         req.set_job("fw:release-" + tag);
         v1::ReleaseResponse resp;
         return v1::AdmissionService::NewStub(ch)->Release(ctx.get(), req, &resp);
       },
       true, true, true, false, false},
      {"ReportCheckpoint",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ReportCheckpointRequest req;
         req.set_job(kJob);
         v1::ReportCheckpointResponse resp;
         return v1::AdmissionService::NewStub(ch)->ReportCheckpoint(ctx.get(), req, &resp);
       },
       true, true, false, false, true},
      {"GetJob",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::GetJobRequest req;
         req.set_job(kJob);
         v1::JobInfo resp;
         return v1::AdmissionService::NewStub(ch)->GetJob(ctx.get(), req, &resp);
       },
       true, true, true, true, true},
      {"WaitAdmission",
       [](const Ch& ch, const std::string&) -> S {
         auto ctx = Context();
         v1::WaitAdmissionRequest req;
         req.set_job(kJob);
         auto reader = v1::AdmissionService::NewStub(ch)->WaitAdmission(ctx.get(), req);
         v1::WaitAdmissionResponse resp;
         if (reader->Read(&resp)) {  // the job is admitted: its state comes at once.
           ctx->TryCancel();
           reader->Finish();
           return S::OK;
         }
         return reader->Finish();
       },
       true, true, true, true, true},
      {"ListJobs",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ListJobsRequest req;
         req.set_team("ml");
         v1::ListJobsResponse resp;
         return v1::AdmissionService::NewStub(ch)->ListJobs(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"GetTeam",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::GetTeamRequest req;
         req.set_team("ml");
         v1::TeamInfo resp;
         return v1::QuotaService::NewStub(ch)->GetTeam(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"ListTeams",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ListTeamsResponse resp;
         return v1::QuotaService::NewStub(ch)->ListTeams(ctx.get(), v1::ListTeamsRequest(), &resp);
       },
       true, true, true, true, true},
      {"ListLoans",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ListLoansRequest req;
         req.set_team("ml");
         v1::ListLoansResponse resp;
         return v1::QuotaService::NewStub(ch)->ListLoans(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"GetUsage",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::GetUsageRequest req;
         req.set_team("ml");
         v1::GetUsageResponse resp;
         return v1::QuotaService::NewStub(ch)->GetUsage(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"ApplyConfig",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ApplyConfigRequest req;
         req.set_dry_run(true);
         EXPECT_TRUE(api::LoadYamlFile(AuthTest::File("config.yaml"), req.mutable_config()).ok());
         v1::ApplyConfigResponse resp;
         return v1::QuotaService::NewStub(ch)->ApplyConfig(ctx.get(), req, &resp);
       },
       true, false, false, false, false},
      {"Forecast",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ForecastRequest req;
         *req.mutable_series() = MlSeries();
         req.set_horizon_hours(24);
         v1::ForecastResponse resp;
         return v1::ForecastService::NewStub(ch)->Forecast(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"RecommendReservations",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::RecommendReservationsRequest req;
         *req.mutable_series() = MlSeries();
         v1::RecommendReservationsResponse resp;
         return v1::ForecastService::NewStub(ch)->RecommendReservations(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"ProposeTide",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::ProposeTideRequest req;
         *req.mutable_series() = MlSeries();
         v1::ProposeTideResponse resp;
         return v1::ForecastService::NewStub(ch)->ProposeTide(ctx.get(), req, &resp);
       },
       true, true, false, true, false},
      {"WatchResizes",
       [](const Ch& ch, const std::string&) -> S {
         auto ctx = Context();
         v1::WatchResizesRequest req;
         req.set_job(kJob);  // rigid: the broker answers FAILED_PRECONDITION at once.
         auto reader = v1::ElasticService::NewStub(ch)->WatchResizes(ctx.get(), req);
         v1::ResizeRequest resp;
         if (reader->Read(&resp)) {
           ctx->TryCancel();
           reader->Finish();
           return S::OK;
         }
         return reader->Finish();
       },
       true, false, false, false, true},
      {"AckResize",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::AckResizeRequest req;
         req.set_job(kJob);
         req.set_epoch(1);
         req.set_replicas(1);
         v1::AckResizeResponse resp;
         return v1::ElasticService::NewStub(ch)->AckResize(ctx.get(), req, &resp);
       },
       true, false, false, false, true},
      {"Ping",
       [](const Ch& ch, const std::string&) {
         auto ctx = Context();
         v1::PingResponse resp;
         return v1::DiagnosticsService::NewStub(ch)->Ping(ctx.get(), v1::PingRequest(), &resp);
       },
       true, true, true, true, true},
      // Last: a stream for cluster a replays the broker's own jobs of a as
      // the view, so the reconcile it causes ends nothing.
      {"AgentService/Connect",
       [view_of_a](const Ch& ch, const std::string&) -> S {
         auto ctx = Context();
         auto stream = v1::AgentService::NewStub(ch)->Connect(ctx.get());
         v1::AgentMessage hello;
         hello.mutable_hello()->set_cluster("a");
         hello.mutable_hello()->set_agent_id("table");
         v1::AgentMessage view;
         *view.mutable_view() = view_of_a();
         stream->Write(hello);
         stream->Write(view);
         v1::BrokerAction action;
         while (stream->Read(&action)) {
           if (action.has_synced()) {
             ctx->TryCancel();
             stream->Finish();
             return S::OK;
           }
         }
         return stream->Finish();
       },
       true, false, true, false, false},
  };
}

TEST_F(AuthTest, EveryRpcForEveryRoleAsTheTableSays) {
  auto root = Channel("root");
  // The job the calls are about, and one job per caller for Release.
  const std::vector<std::pair<std::string, std::shared_ptr<grpc::Channel>>> callers = {
      {"admin", root},
      {"scheduler", Channel("", "sched-token")},
      {"agent", Channel("", "agent-token")},
      {"viewer", Channel("lead-ml")},
      {"framework", Channel("", "trainer-token")},
      {"no-role", Channel("", "nobody-token")},
      {"no-identity", Channel("")},
  };
  ASSERT_TRUE(Admit(root, kJob, "ml", "a").ok());
  for (const auto& [tag, unused] : callers) ASSERT_TRUE(Admit(root, "fw:release-" + tag, "ml", "a").ok());
  auto view_of_a = [root] {
    v1::AgentView view;
    grpc::ClientContext ctx;
    v1::ListJobsRequest req;
    v1::ListJobsResponse resp;
    EXPECT_TRUE(v1::AdmissionService::NewStub(root)->ListJobs(&ctx, req, &resp).ok());
    for (const auto& job : resp.jobs()) {
      if (job.cluster() != "a") continue;
      v1::ObservedJob* o = view.add_jobs();
      *o->mutable_spec() = job.spec();
      o->set_running(job.state() != v1::JOB_STATE_QUEUED);
    }
    return view;
  };
  const std::vector<Row> table = Table(view_of_a);
  ASSERT_EQ(table.size(), service::auth::AllRules().size()) << "a row for every RPC with a rule";
  for (const Row& row : table) {
    const std::map<std::string, bool> allowed = {{"admin", row.admin},         {"scheduler", row.scheduler},
                                                 {"agent", row.agent},         {"viewer", row.viewer},
                                                 {"framework", row.framework}, {"no-role", false},
                                                 {"no-identity", false}};
    for (const auto& [tag, channel] : callers) {
      const grpc::Status s = row.call(channel, tag);
      const std::string where = std::string(row.method) + " as " + tag + ": " + std::to_string(s.error_code()) +
                                " " + s.error_message();
      if (tag == "no-identity") {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << where;
      } else if (allowed.at(tag)) {
        EXPECT_NE(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << where;
        EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << where;
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << where;
      }
    }
  }
}

}  // namespace
}  // namespace tidegate
