// End to end through the command line: the real tidegated on 127.0.0.1 with a
// temporary ledger and the example config (deploy/examples/tidegate.yaml),
// driven by the real `tidegate` binary as a script or a person would, checking
// stdout, stderr and the documented exit codes (cli/exit_codes.h).
//
// The example tree: org 48 GPUs (ml 40, borrow limit 16: research 16,
// training 24 lending at most 16), serving 16 that never borrows; 64 GPUs.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/cli_process.h"
#include "tests/support/server_process.h"

namespace tidegate {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::CliProcess;
using testing::Ran;
using testing::SourceDir;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<testing::ServerProcess>(
        SourceDir() + "/deploy/examples/tidegate.yaml", dir_.File("t.db"));
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
  }

  std::vector<std::string> WithServer(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--server", server_->address()});
    return args;
  }
  Ran Cli(std::vector<std::string> args) { return CliProcess(dir_, WithServer(args)).Wait(); }

  // `admit` for GPUs only; expects exit 0 and returns stdout.
  std::string Admit(const std::string& job, const std::string& team, int replicas, int gpus,
                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"admit",      "--job", job, "--team", team, "--replicas",
                                     std::to_string(replicas), "--per-replica",
                                     "gpu=" + std::to_string(gpus)};
    args.insert(args.end(), extra.begin(), extra.end());
    Ran r = Cli(args);
    EXPECT_EQ(r.code, 0) << job << ": " << r.err;
    return r.out;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::ServerProcess> server_;
};

TEST_F(CliTest, AdmitWithinQuotaThenBorrowShowsInJobsQuotaAndTeams) {
  EXPECT_EQ(Admit("r1", "research", 2, 8), "r1: ADMITTED\n");  // 16 of research's 16.
  EXPECT_THAT(Admit("r2", "research", 2, 8),
              HasSubstr("r2: ADMITTED_BORROWING: borrowing gpu=16 (reclaimable)"));

  Ran jobs = Cli({"jobs", "--team", "research"});
  EXPECT_EQ(jobs.code, 0) << jobs.err;
  EXPECT_THAT(jobs.out, ContainsRegex("^job +team +cluster +state +replicas +demand +priority "
                                      "+age +reason\n"));
  EXPECT_THAT(jobs.out, ContainsRegex("\nr1 +research +a +admitted +2 +gpu=16 +0 +[0-9]+s *\n"));
  EXPECT_THAT(jobs.out, ContainsRegex("\nr2 +research +a +admitted +2 +gpu=16 +0 +[0-9]+s +borrowing"));

  Ran admitted = Cli({"jobs", "--state", "admitted"});
  EXPECT_EQ(admitted.code, 0);
  EXPECT_THAT(admitted.out, HasSubstr("r2 "));

  Ran job = Cli({"job", "r2"});
  EXPECT_EQ(job.code, 0) << job.err;
  EXPECT_THAT(job.out, HasSubstr("state:        admitted\n"));
  EXPECT_THAT(job.out, HasSubstr("borrowing:    yes, gpu=16 (reclaimable)\n"));
  EXPECT_THAT(job.out, HasSubstr("per replica:  gpu=8\n"));

  // research uses 32 of its 16: 16 borrowed, within ml's 40.
  Ran quota = Cli({"quota", "research"});
  EXPECT_EQ(quota.code, 0) << quota.err;
  EXPECT_THAT(quota.out, ContainsRegex("\nresearch +gpu +16 +unlimited +unlimited +0 +32 +16 +0 +0 "));
  Ran serving = Cli({"quota", "serving"});
  EXPECT_THAT(serving.out, ContainsRegex("\nserving +gpu +16 +0 +unlimited +0 +0 "));

  Ran teams = Cli({"teams"});
  EXPECT_EQ(teams.code, 0) << teams.err;
  EXPECT_THAT(teams.out, ContainsRegex("^team +parent +gpu guaranteed +gpu private +gpu used "
                                       "+gpu borrowed +gpu lent +gpu queued +share +running jobs "
                                       "+queued jobs\n"));
  EXPECT_THAT(teams.out, ContainsRegex("\nresearch +ml +16 +0 +32 +16 +0 +0 +[0-9.]+ +2 +0\n"));
  // ml: its jobs hold 32, training keeps 8 private: 40 of its 40, borrowing nothing.
  EXPECT_THAT(teams.out, ContainsRegex("\nml +org +40 +8 +32 +0 +0 +0 +[0-9.]+ +2 +0\n"));

  Ran release = Cli({"release", "r1"});
  EXPECT_EQ(release.code, 0) << release.err;
  EXPECT_EQ(release.out, "r1: released (was admitted, gpu=16)\n");
  EXPECT_THAT(Cli({"quota", "research"}).out, ContainsRegex("\nresearch +gpu +16 .* 16 +0 +0 +0 "));
}

TEST_F(CliTest, AQueuedJobSaysWhatItWaitsForAndItsPosition) {
  // serving never borrows: a third 8 does not fit its 16.
  Admit("s1", "serving", 1, 8);
  EXPECT_EQ(Admit("s2", "serving", 1, 8), "s2: ADMITTED\n");
  const std::string queued = Admit("s3", "serving", 1, 8);
  EXPECT_THAT(queued, ContainsRegex("^s3: QUEUED: .+ \\(position 1 in serving's queue\\)\n"));

  Ran job = Cli({"job", "s3"});
  EXPECT_EQ(job.code, 0) << job.err;
  EXPECT_THAT(job.out, HasSubstr("state:           queued\n"));
  EXPECT_THAT(job.out, ContainsRegex("waits for: +[^-\n]"));
  EXPECT_THAT(job.out, HasSubstr("queue position:  1 in serving's queue\n"));

  Ran jobs = Cli({"jobs", "--state", "queued"});
  EXPECT_THAT(jobs.out, ContainsRegex("\ns3 +serving +a +queued +1 +gpu=8 +0 +[0-9]+s +[^ ]"));
  EXPECT_THAT(jobs.out, Not(HasSubstr("s1 ")));
  EXPECT_THAT(Cli({"teams"}).out, ContainsRegex("\nserving +- +16 +0 +16 +0 +0 +8 "));
}

TEST_F(CliTest, WaitStreamsUntilTheJobIsAdmitted) {
  Admit("s1", "serving", 2, 8);
  CliProcess waiting(dir_, WithServer({"admit", "--job", "s2", "--team", "serving",
                                       "--per-replica", "gpu=8", "--wait"}));
  ASSERT_TRUE(waiting.WaitForStderr("waiting for s2 to be admitted"));
  EXPECT_EQ(Cli({"release", "s1"}).code, 0);
  Ran r = waiting.Wait();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("s2: "));
  EXPECT_THAT(r.out, HasSubstr("s2: admitted"));
}

TEST_F(CliTest, CtrlCStopsWaitingAndTheJobStaysQueued) {
  Admit("s1", "serving", 2, 8);
  CliProcess waiting(dir_, WithServer({"admit", "--job", "s2", "--team", "serving",
                                       "--per-replica", "gpu=8", "--wait"}));
  ASSERT_TRUE(waiting.WaitForStderr("waiting for s2"));
  waiting.Signal(SIGINT);
  Ran r = waiting.Wait();
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_THAT(r.err, HasSubstr("interrupted; s2 stays queued (`tidegate release s2` withdraws it)"));
  EXPECT_THAT(Cli({"job", "s2"}).out, HasSubstr("queued"));
}

TEST_F(CliTest, WaitTimeoutExitsOneAndAnAdmittedJobNeedsNoWait) {
  Admit("s1", "serving", 2, 8);
  Ran r = Cli({"admit", "--job", "s2", "--team", "serving", "--per-replica", "gpu=8", "--wait",
               "--wait-timeout", "1s"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("s2 is not admitted after --wait-timeout 1s"));

  Ran now = Cli({"admit", "--job", "r1", "--team", "research", "--per-replica", "gpu=8", "--wait"});
  EXPECT_EQ(now.code, 0) << now.err;
  EXPECT_EQ(now.out, "r1: ADMITTED\n");
}

TEST_F(CliTest, ErrorsExitWithTheDocumentedCodes) {
  Ran bad_flag = Cli({"admit", "--job", "x", "--team", "research", "--per-replica", "gpu=eight"});
  EXPECT_EQ(bad_flag.code, 2);
  EXPECT_THAT(bad_flag.err, HasSubstr("--per-replica 'gpu=eight'"));

  Ran unknown_team = Cli({"admit", "--job", "x", "--team", "nope", "--per-replica", "gpu=8"});
  EXPECT_EQ(unknown_team.code, 2) << unknown_team.err;
  EXPECT_THAT(unknown_team.err, HasSubstr("tidegate: INVALID_ARGUMENT: "));

  Ran missing = Cli({"job", "nope"});
  EXPECT_EQ(missing.code, 3);
  EXPECT_THAT(missing.err, HasSubstr("tidegate: NOT_FOUND: "));
  EXPECT_EQ(Cli({"release", "nope"}).code, 3);
  EXPECT_EQ(Cli({"quota", "nope"}).code, 3);
  EXPECT_EQ(Cli({"usage", "nope"}).code, 3);
  // A resource the config does not have is a typo, not an empty history.
  Ran typo = Cli({"usage", "research", "--resource", "gpus"});
  EXPECT_EQ(typo.code, 2) << typo.out;
  EXPECT_THAT(typo.err, HasSubstr("resource: 'gpus' is not a resource of the config (gpu)"));
  EXPECT_EQ(Cli({"usage", "research", "--resource", "gpu"}).code, 0);

  Admit("r1", "research", 1, 8);
  EXPECT_EQ(Admit("r1", "research", 1, 8), "r1: ADMITTED\n");  // the same spec: idempotent.
  Ran conflict = Cli({"admit", "--job", "r1", "--team", "research", "--replicas", "2",
                      "--per-replica", "gpu=8"});
  EXPECT_EQ(conflict.code, 4) << conflict.err;
  EXPECT_THAT(conflict.err, HasSubstr("tidegate: ALREADY_EXISTS: "));

  const std::string address = server_->address();
  EXPECT_EQ(server_->Terminate(), 0);
  Ran down = CliProcess(dir_, {"--server", address, "--timeout", "5s", "jobs"}).Wait();
  EXPECT_EQ(down.code, 5);
  EXPECT_THAT(down.err, HasSubstr("tidegate: UNAVAILABLE: "));
  EXPECT_THAT(down.err, HasSubstr("broker at " + address));
}

TEST_F(CliTest, JsonOutputUsesTheProtoFieldNames) {
  Admit("r1", "research", 2, 8);
  Ran admit = Cli({"admit", "--job", "r2", "--team", "research", "--per-replica", "gpu=8",
                   "-o", "json"});
  EXPECT_EQ(admit.code, 0);
  EXPECT_THAT(admit.out, HasSubstr(R"("decision":"DECISION_ADMITTED_BORROWING")"));
  EXPECT_THAT(admit.out, HasSubstr(R"("borrowed":{"gpu":8})"));

  Ran jobs = Cli({"jobs", "-o", "json"});
  EXPECT_EQ(jobs.code, 0);
  EXPECT_THAT(jobs.out, HasSubstr(R"({"jobs":[{"job":"r1","team":"research")"));
  EXPECT_THAT(jobs.out, HasSubstr(R"("queue_position":0)"));
  EXPECT_THAT(jobs.out, HasSubstr(R"("per_replica":{"gpu":8})"));

  Ran team = Cli({"quota", "research", "-o", "json"});
  EXPECT_THAT(team.out, HasSubstr(R"("name":"research","parent":"ml")"));
  EXPECT_THAT(team.out, HasSubstr(R"("running_jobs":2)"));
  EXPECT_THAT(team.out, HasSubstr(R"("used":24,"borrowed":8,"lent":0,"queued":0,"private":0)"));
  EXPECT_THAT(Cli({"loans", "-o", "json"}).out, HasSubstr(R"("loans")"));
  EXPECT_THAT(Cli({"usage", "research", "-o", "json"}).out, HasSubstr(R"("points")"));
}

TEST_F(CliTest, ConfigApplyShowsTheDiffAndDryRunChangesNothing) {
  const std::string example = SourceDir() + "/deploy/examples/tidegate.yaml";
  Ran same = Cli({"config", "apply", example, "--dry-run"});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.out, "no changes\n");

  // serving may now borrow 4.
  std::string text = ReadFile(example);
  const std::string from = "quota: {gpu: {guaranteed: 16, borrow_limit: 0}}";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "quota: {gpu: {guaranteed: 16, borrow_limit: 4}}");
  const std::string changed = dir_.File("changed.yaml");
  std::ofstream(changed) << text;

  Ran dry = Cli({"config", "apply", changed, "--dry-run"});
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_THAT(dry.out, HasSubstr("serving gpu borrow_limit 0 -> 4\n"));
  EXPECT_THAT(dry.out, HasSubstr("dry run: 1 change, nothing applied\n"));
  EXPECT_THAT(Cli({"quota", "serving"}).out, ContainsRegex("\nserving +gpu +16 +0 "));

  Ran applied = Cli({"config", "apply", changed});
  EXPECT_EQ(applied.code, 0) << applied.err;
  EXPECT_THAT(applied.out, HasSubstr("applied 1 change\n"));
  EXPECT_THAT(Cli({"quota", "serving"}).out, ContainsRegex("\nserving +gpu +16 +4 "));

  // research's 16 -> 30: ml's children would want 54 of its 40.
  const std::string bad = dir_.File("bad.yaml");
  std::string bad_text = text;
  const std::string research = "quota: {gpu: {guaranteed: 16}}\n    queueing";
  ASSERT_NE(bad_text.find(research), std::string::npos);
  bad_text.replace(bad_text.find(research), research.size(),
                   "quota: {gpu: {guaranteed: 30}}\n    queueing");
  std::ofstream(bad) << bad_text;
  Ran refused = Cli({"config", "apply", bad});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_THAT(refused.err, ContainsRegex("tidegate: INVALID_ARGUMENT: .*bad\\.yaml:[0-9]+: "));

  const std::string malformed = dir_.File("malformed.yaml");
  std::ofstream(malformed) << "teams:\n  - name: a\n    weight: heavy\n";
  Ran local = Cli({"config", "apply", malformed});
  EXPECT_EQ(local.code, 2);
  EXPECT_THAT(local.err, HasSubstr("malformed.yaml:3: teams[0].weight"));
}

TEST_F(CliTest, LoansAndUsageAnswerWithTheirColumns) {
  Admit("r1", "research", 3, 8);
  Ran loans = Cli({"loans", "--since", "7d"});
  EXPECT_EQ(loans.code, 0) << loans.err;
  EXPECT_THAT(loans.out, ContainsRegex("^borrower +lender +resource +day +hours\n"));
  Ran usage = Cli({"usage", "research", "--step", "1d"});
  EXPECT_EQ(usage.code, 0) << usage.err;
  EXPECT_THAT(usage.out, ContainsRegex("^time +resource +used h +borrowed h +lent h +queued h\n"));
  EXPECT_EQ(Cli({"loans", "--team", "nope"}).code, 3);
}

// An open broker lets every caller in as "anonymous" without checking roles;
// the journal still names who asked and from where.
TEST_F(CliTest, AnOpenBrokerJournalsItsCallersAsAnonymousWithTheirAddress) {
  Admit("o1", "research", 1, 1);
  ASSERT_EQ(Cli({"release", "o1"}).code, 0);
  Ran history = CliProcess(dir_, {"history", "--db", dir_.File("t.db"), "--job", "o1", "-o", "json"}).Wait();
  ASSERT_EQ(history.code, 0) << history.err;
  for (const char* kind : {"admit", "release"}) {
    EXPECT_THAT(history.out, ContainsRegex(std::string("\"kind\":\"") + kind +
                                           "\"[^}]*\"peer\":\"ipv4:127\\.0\\.0\\.1:[0-9]+\",\"principal\":\"anonymous\""))
        << history.out;
  }
}

}  // namespace
}  // namespace tidegate
