// End to end: a job's life as a scheduler and a team lead see it, against the
// real tidegated (one server for the whole binary; each test uses its own job
// ids) and the real `tidegate` binary: ended jobs stay known, retries never
// start finished work again, bad input is INVALID_ARGUMENT naming the field
// (exit 2 in the CLI), and `admit --wait` ends at once for a job that cannot
// fit under today's config.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/cli_process.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Ran;

// research: 8 guaranteed + 4 borrow limit.
constexpr char kConfig[] = R"(
clusters:
  - {name: a, kind: kubernetes, capacity: {gpu: 16}}
teams:
  - {name: research, quota: {gpu: {guaranteed: 8, borrow_limit: 4}}}
  - {name: serving, quota: {gpu: {guaranteed: 8}}}
policy: {default_grace_s: 1, tick_s: 1}
)";

v1::JobSpec Job(const std::string& id, const std::string& team, int64_t gpus) {
  v1::JobSpec j;
  j.set_job(id);
  j.set_team(team);
  (*j.mutable_per_replica())["gpu"] = gpus;
  return j;
}

class JobsE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    const std::string config = dir_->File("tidegate.yaml");
    std::ofstream(config) << kConfig;
    server_ = new testing::ServerProcess(config, dir_->File("tidegate.db"));
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override { admission_ = v1::AdmissionService::NewStub(server_->Channel()); }

  grpc::Status Admit(const v1::JobSpec& spec, v1::AdmitResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AdmitRequest req;
    *req.mutable_job() = spec;
    return admission_->Admit(&ctx, req, resp);
  }
  grpc::Status Release(const std::string& id, v1::ReleaseResponse* resp = nullptr) {
    grpc::ClientContext ctx;
    v1::ReleaseRequest req;
    req.set_job(id);
    v1::ReleaseResponse ignored;
    return admission_->Release(&ctx, req, resp ? resp : &ignored);
  }
  grpc::Status GetJob(const std::string& id, v1::JobInfo* out) {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job(id);
    return admission_->GetJob(&ctx, req, out);
  }
  grpc::Status Checkpoint(const std::string& id) {
    grpc::ClientContext ctx;
    v1::ReportCheckpointRequest req;
    req.set_job(id);
    v1::ReportCheckpointResponse resp;
    return admission_->ReportCheckpoint(&ctx, req, &resp);
  }

  // One `tidegate` run against the server (or the one at `address`),
  // bounded by the CLI's own deadlines.
  Ran Cli(std::vector<std::string> args, const std::string& address = "") {
    args.insert(args.begin(), {"--server", address.empty() ? server_->address() : address});
    return testing::CliProcess(*dir_, std::move(args)).Wait(std::chrono::seconds(120));
  }

  static testing::TempDir* dir_;
  static testing::ServerProcess* server_;
  std::unique_ptr<v1::AdmissionService::Stub> admission_;
};

testing::TempDir* JobsE2eTest::dir_ = nullptr;
testing::ServerProcess* JobsE2eTest::server_ = nullptr;

TEST_F(JobsE2eTest, AReleasedJobStaysKnownAndARetryNeverStartsItAgain) {
  v1::AdmitResponse admitted;
  ASSERT_TRUE(Admit(Job("t1", "research", 2), &admitted).ok());
  ASSERT_EQ(admitted.decision(), v1::DECISION_ADMITTED);
  ASSERT_TRUE(Release("t1").ok());

  v1::JobInfo ended;
  ASSERT_TRUE(GetJob("t1", &ended).ok());
  EXPECT_EQ(ended.state(), v1::JOB_STATE_ENDED);
  EXPECT_EQ(ended.reason(), "finished");
  EXPECT_GT(ended.ended_at_ms(), 0);
  EXPECT_GT(ended.last_admitted_at_ms(), 0);

  // Release and checkpoint again: OK, nothing changes.
  v1::ReleaseResponse again;
  EXPECT_TRUE(Release("t1", &again).ok());
  EXPECT_EQ(again.job().state(), v1::JOB_STATE_ENDED);
  EXPECT_TRUE(Checkpoint("t1").ok());

  // The same spec again: its final state, nothing starts.
  v1::AdmitResponse retry;
  ASSERT_TRUE(Admit(Job("t1", "research", 2), &retry).ok());
  EXPECT_EQ(retry.decision(), v1::DECISION_ENDED);
  EXPECT_EQ(retry.job().state(), v1::JOB_STATE_ENDED);
  // Another spec: ALREADY_EXISTS.
  v1::AdmitResponse other;
  const grpc::Status conflict = Admit(Job("t1", "research", 3), &other);
  EXPECT_EQ(conflict.error_code(), grpc::StatusCode::ALREADY_EXISTS) << conflict.error_message();

  // The CLI: `jobs --state ended`, `job t1`, `release t1` again.
  Ran list = Cli({"jobs", "--state", "ended"});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("t1 "));
  EXPECT_THAT(list.out, HasSubstr("ended"));
  Ran show = Cli({"job", "t1"});
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("state"));
  EXPECT_THAT(show.out, HasSubstr("ended"));
  EXPECT_THAT(show.out, HasSubstr("finished"));
  EXPECT_THAT(show.out, HasSubstr("last at"));
  Ran release = Cli({"release", "t1"});
  EXPECT_EQ(release.code, 0) << release.err;
  EXPECT_THAT(release.out, HasSubstr("t1: already ended (finished); nothing to release"));
  Ran readmit = Cli({"admit", "--job", "t1", "--team", "research", "--per-replica", "gpu=2"});
  EXPECT_EQ(readmit.code, 1) << readmit.err;
  EXPECT_THAT(readmit.out, HasSubstr("t1: ENDED"));
}

// A reject is answered with its reason and not journalled, so a flood of
// them cannot grow the ledger (e2e_limits_test checks the journal); the
// service keeps it in memory for the retention window, so the caller and the
// team lead can still ask why (docs/jobs.md).
TEST_F(JobsE2eTest, ARejectedJobStaysQueryableWithItsReason) {
  v1::AdmitResponse resp;
  const grpc::Status s = Admit(Job("rej1", "nope", 1), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "team: 'nope' is not a team");
  v1::JobSpec simulated = Job("rej2", "research", 1);
  simulated.set_created_at(5);
  EXPECT_EQ(Admit(simulated, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::JobInfo job;
  ASSERT_TRUE(GetJob("rej1", &job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_REJECTED);
  EXPECT_EQ(job.reason(), "team: 'nope' is not a team");
  EXPECT_GT(job.ended_at_ms(), 0);
  Ran show = Cli({"job", "rej2"});
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("rejected"));
  EXPECT_THAT(show.out, HasSubstr("job.created_at: is for the simulator only"));
  Ran list = Cli({"jobs", "--state", "rejected", "--team", "research", "-o", "json"});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr(R"("job":"rej2")"));
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr(R"("job":"rej1")")));  // team nope is not research
  // Releasing it changes nothing; a good spec under the same id is judged afresh.
  EXPECT_TRUE(Release("rej2").ok());
  ASSERT_TRUE(Admit(Job("rej2", "research", 1), &resp).ok());
  EXPECT_EQ(resp.decision(), v1::DECISION_ADMITTED);
  list = Cli({"jobs", "--state", "rejected", "-o", "json"});
  EXPECT_THAT(list.out, HasSubstr(R"("job":"rej1")"));
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr(R"("job":"rej2")")));
  ASSERT_TRUE(Release("rej2").ok());
}

TEST_F(JobsE2eTest, BadInputIsInvalidArgumentNamingTheField) {
  struct Case {
    v1::JobSpec spec;
    std::string field;
  };
  v1::JobSpec zero = Job("z1", "research", 0);
  v1::JobSpec no_range = Job("z2", "research", 1);
  no_range.mutable_elastic();
  v1::JobSpec created = Job("z3", "research", 1);
  created.set_created_at(1);
  v1::JobSpec run = Job("z4", "research", 1);
  run.set_run_s(60);
  v1::JobSpec huge = Job("z5", "research", 9223372036854775807);
  v1::JobSpec long_id = Job(std::string(300, 'x'), "research", 1);
  v1::JobSpec newline_id = Job("a\nb", "research", 1);
  for (const Case& c : {Case{zero, "per_replica"}, Case{no_range, "elastic"}, Case{created, "job.created_at"},
                        Case{run, "job.run_s"}, Case{huge, "per_replica.gpu"}, Case{long_id, "job.job"},
                        Case{newline_id, "job.job"}}) {
    v1::AdmitResponse resp;
    const grpc::Status s = Admit(c.spec, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), StartsWith(c.field + ":"));
  }
  // Two jobs of 2^62 cannot be summed with each other.
  v1::AdmitResponse first, second;
  const grpc::Status big = Admit(Job("z6", "research", int64_t{1} << 62), &first);
  EXPECT_EQ(big.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << big.error_message();

  EXPECT_EQ(Release("").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext ctx;
  v1::ListJobsRequest list;
  list.set_state(static_cast<v1::JobState>(99));
  v1::ListJobsResponse jobs;
  const grpc::Status unknown_state = admission_->ListJobs(&ctx, list, &jobs);
  EXPECT_EQ(unknown_state.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(unknown_state.error_message(), HasSubstr("state: 99"));

  // The CLI says the same, with exit 2.
  Ran cli = Cli({"admit", "--job", "z7", "--team", "research", "--per-replica", "gpu=0"});
  EXPECT_EQ(cli.code, 2) << cli.out << cli.err;
  EXPECT_THAT(cli.err, HasSubstr("per_replica: every quantity is 0"));
}

TEST_F(JobsE2eTest, AdmitWaitEndsAtOnceForAJobThatExceedsItsTeamsMaximum) {
  // --wait-timeout only bounds the test: the answer must come at once.
  Ran r = Cli({"admit", "--job", "big1", "--team", "research", "--per-replica", "gpu=13", "--wait",
               "--wait-timeout", "20s"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("big1: QUEUED: exceeds_max: research would use 13 gpu > 12 (8 guaranteed + 4 borrow "
                               "limit)"));
  EXPECT_THAT(r.err, HasSubstr("stays queued until the config changes"));
  v1::JobInfo job;
  ASSERT_TRUE(GetJob("big1", &job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_QUEUED);
  ASSERT_TRUE(Release("big1").ok());
}

TEST_F(JobsE2eTest, AnElasticJobWithAPendingGrowShowsItsSizeNowAndTheRequest) {
  v1::JobSpec spec = Job("e1", "serving", 1);
  spec.mutable_elastic()->set_min(1);
  spec.mutable_elastic()->set_max(4);
  v1::AdmitResponse resp;
  ASSERT_TRUE(Admit(spec, &resp).ok());
  ASSERT_EQ(resp.decision(), v1::DECISION_ADMITTED);
  // No framework acks: the grow stays pending until its deadline (60 s).
  Ran show = Cli({"job", "e1"});
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, ::testing::ContainsRegex("resize pending: +epoch 1: 1 -> "));
  EXPECT_THAT(show.out, HasSubstr("(grow), ack by "));
  ASSERT_TRUE(Release("e1").ok());
}

// A team that may not reclaim and cannot fit anything is not tried each
// cycle, yet the reasons of all its jobs, not only its head's, follow usage:
// after another team's job ends the numbers say so. The everyday list (no
// state) leaves ended jobs out.
TEST_F(JobsE2eTest, AWaitingJobsNumbersFollowUsageAndEndedJobsLeaveTheLiveList) {
  testing::TempDir dir;
  const std::string config = dir.File("tidegate.yaml");
  std::ofstream(config) << R"(
clusters:
  - {name: k, capacity: {gpu: 8}}
teams:
  - {name: a, quota: {gpu: {guaranteed: 4}}, preemption: {reclaim: never}}
  - {name: b, quota: {gpu: {guaranteed: 4}}}
policy: {tick_s: 1}
)";
  testing::ServerProcess server(config, dir.File("tidegate.db"));
  ASSERT_TRUE(server.Start()) << server.Stderr();
  auto stub = v1::AdmissionService::NewStub(server.Channel());
  auto admit = [&](const std::string& id, const std::string& team, int64_t gpus) {
    grpc::ClientContext ctx;
    v1::AdmitRequest req;
    *req.mutable_job() = Job(id, team, gpus);
    v1::AdmitResponse resp;
    EXPECT_TRUE(stub->Admit(&ctx, req, &resp).ok()) << id;
  };
  auto reason = [&](const std::string& id) {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job(id);
    v1::JobInfo job;
    EXPECT_TRUE(stub->GetJob(&ctx, req, &job).ok());
    return job.reason();
  };
  admit("b1", "b", 4);
  admit("b2", "b", 3);
  admit("b3", "b", 1);
  admit("a1", "a", 2);
  admit("a2", "a", 3);
  EXPECT_THAT(reason("a1"), HasSubstr("k has 0 of 8 free"));
  EXPECT_THAT(reason("a2"), HasSubstr("k has 0 of 8 free"));
  {
    grpc::ClientContext ctx;
    v1::ReleaseRequest req;
    req.set_job("b3");
    v1::ReleaseResponse resp;
    ASSERT_TRUE(stub->Release(&ctx, req, &resp).ok());
  }
  EXPECT_THAT(reason("a1"), HasSubstr("capacity k gpu: the job needs 2; k has 1 of 8 free"));
  // Behind the head: the cycle did not try it, the numbers are those of now.
  EXPECT_EQ(reason("a2"), "capacity k gpu: the job needs 3; k has 1 of 8 free; it waits for jobs there to end");
  Ran show = Cli({"job", "a2", "-o", "json"}, server.address());
  EXPECT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr(R"("reason":"capacity k gpu: the job needs 3; k has 1 of 8 free; it waits for )"
                                  R"(jobs there to end")"));
  EXPECT_THAT(show.out, HasSubstr(R"("queue_position":2)"));
  grpc::ClientContext ctx;
  v1::ListJobsResponse live;
  ASSERT_TRUE(stub->ListJobs(&ctx, v1::ListJobsRequest(), &live).ok());
  for (const auto& j : live.jobs()) {
    EXPECT_NE(j.job(), "b3") << "an ended job in the live list";
    if (j.job() == "a2") {
      EXPECT_THAT(j.reason(), HasSubstr("k has 1 of 8 free"));
    }
  }
  EXPECT_EQ(live.jobs_size(), 4);
}

// SIGTERM while `admit --wait` and unary calls run: the stream ends
// UNAVAILABLE and the CLI reconnects; every unary call that fails, in flight
// or arriving during the shutdown, fails UNAVAILABLE (exit 5, safe to retry),
// never CANCELLED.
TEST_F(JobsE2eTest, AdmitWaitReconnectsWhenTheBrokerStopsInsteadOfFailingCancelled) {
  // A broker of its own, since this one is stopped.
  testing::TempDir dir;
  const std::string config = dir.File("tidegate.yaml");
  std::ofstream(config) << kConfig;
  testing::ServerProcess server(config, dir.File("tidegate.db"));
  ASSERT_TRUE(server.Start()) << server.Stderr();
  auto stub = v1::AdmissionService::NewStub(server.Channel());
  {
    grpc::ClientContext ctx;
    v1::AdmitRequest req;
    *req.mutable_job() = Job("fill", "research", 12);  // research at its 8 + 4 borrow limit: w1 queues.
    v1::AdmitResponse resp;
    ASSERT_TRUE(stub->Admit(&ctx, req, &resp).ok());
  }
  testing::CliProcess waiting(dir, {"--server", server.address(), "admit", "--job", "w1", "--team", "research",
                                    "--per-replica", "gpu=4", "--wait"});
  ASSERT_TRUE(waiting.WaitForStderr("waiting for w1")) << waiting.Stderr();
  // Callers that keep the broker busy with unary calls until it is gone.
  std::atomic<int> answered{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t, channel = server.Channel()] {
      auto caller = v1::AdmissionService::NewStub(channel);
      for (int i = 0;; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
        grpc::Status s;
        if (i % 2 == 0) {
          v1::AdmitRequest req;
          *req.mutable_job() = Job("u" + std::to_string(t) + "-" + std::to_string(i), "serving", 1);
          v1::AdmitResponse resp;
          s = caller->Admit(&ctx, req, &resp);
          if (s.ok()) {
            grpc::ClientContext release_ctx;
            release_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
            v1::ReleaseRequest release;
            release.set_job(req.job().job());
            v1::ReleaseResponse released;
            s = caller->Release(&release_ctx, release, &released);
          }
        } else {
          v1::ListJobsRequest req;
          v1::ListJobsResponse resp;
          s = caller->ListJobs(&ctx, req, &resp);
        }
        if (s.ok()) {
          ++answered;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(std::to_string(s.error_code()) + " " + s.error_message());
        return;  // the broker is going or gone.
      }
    });
  }
  testing::Eventually([&] { return answered >= 200; }, std::chrono::seconds(30));  // then stop it, busy or not
  EXPECT_EQ(server.Terminate(), 0);
  for (auto& c : callers) c.join();
  ASSERT_EQ(failures.size(), 4u);
  for (const auto& f : failures) {
    EXPECT_THAT(f, StartsWith(std::to_string(grpc::StatusCode::UNAVAILABLE) + " ")) << "never CANCELLED (1)";
  }
  EXPECT_TRUE(waiting.WaitForStderr("reconnecting")) << waiting.Stderr();
  waiting.Signal(SIGINT);
  const Ran stopped = waiting.Wait();
  EXPECT_THAT(stopped.err, ::testing::Not(HasSubstr("CANCELLED")));
  EXPECT_THAT(stopped.err, HasSubstr("UNAVAILABLE"));
}

}  // namespace
}  // namespace tidegate
