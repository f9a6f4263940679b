// Brokers on one PostgreSQL ledger under load, against real processes and a
// real server (tests/postgres/with_postgres.sh): the leader SIGKILLed at
// random moments, a leader paused past its lease, PostgreSQL restarted.
// After each: every acknowledged decision is in the ledger; replaying the
// journal admits no job twice and never over-commits the cluster at any
// position; lease epochs never go back along the journal (no deposed leader
// committed); `tidegate ledger verify` passes.
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/core/broker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/acked_seq.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_lease.h"
#include "ledger/postgres_store.h"
#include "tests/postgres/cluster.h"
#include "tests/support/server_process.h"
#include "tidegate/internal/v1/journal.pb.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::testing {
namespace {

using ::testing::HasSubstr;

// Short, so that the test fails over quickly; TIDEGATE_TEST_LEASE_MS=2000
// measures the default lease (docs/ha.md).
int LeaseMs() {
  const char* ms = std::getenv("TIDEGATE_TEST_LEASE_MS");
  return ms == nullptr ? 500 : std::atoi(ms);
}
constexpr int kCapacity = 16;
constexpr char kConfig[] = R"(clusters:
  - {name: a, capacity: {gpu: 16}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 8, borrow_limit: 0}}}
  - {name: blue, quota: {gpu: {guaranteed: 8, borrow_limit: 0}}}
policy: {default_grace_s: 0, tick_s: 1}
)";

std::string Pg() {
  const char* pg = std::getenv("TIDEGATE_PG");
  return pg == nullptr ? "" : pg;
}

int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output->append(buf, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Every check of the ledger against what clients were told.
void CheckLedger(const std::vector<Ack>& acked, const std::string& when) {
  SCOPED_TRACE(when);
  ledger::PostgresOptions read_only;
  read_only.read_only = true;
  read_only.single_snapshot = true;
  auto store = ledger::OpenPostgresStore(Pg(), read_only).value();
  // 1. Every acknowledged decision is present.
  for (const Ack& ack : acked) {
    auto row = store->Job(ack.job).value();
    ASSERT_TRUE(row.has_value()) << "acknowledged job " << ack.job << " is missing from the ledger";
    // A Release whose answer was lost may still have been applied.
    if (ack.released) {
      EXPECT_EQ(row->state, "ended") << ack.job;
    }
    if (ack.admitted) {
      EXPECT_THAT(row->state, ::testing::AnyOf("admitted", "ended")) << ack.job;
    }
  }
  // 2. Replaying the journal: no job admitted twice, never over-committed.
  auto first = store->EarliestSnapshot().value();
  ASSERT_TRUE(first.has_value());
  internal::v1::CoreSnapshot snapshot;
  ASSERT_TRUE(snapshot.ParseFromString(first->payload));
  auto broker = core::Broker::Restore(snapshot).value();
  std::map<std::string, int64_t> demand;  // gpus of each submitted job
  std::set<std::string> running, ever_admitted;
  int64_t entries = 0;
  absl::Status read = store->ReadJournal(first->seq, [&](const ledger::JournalRecord& rec) -> absl::Status {
    internal::v1::Command command;
    if (!command.ParseFromString(rec.payload)) return absl::DataLossError("does not parse");
    if (command.has_submit()) {
      const auto& spec = command.submit();
      demand[spec.job()] = spec.replicas() * spec.per_replica().at("gpu");
    }
    for (const core::Event& e : broker->Apply(command, rec.at_ms)) {
      if (e.type == core::EventType::kAdmit) {
        if (!ever_admitted.insert(e.job).second) {
          return absl::InternalError(absl::StrCat("job ", e.job, " admitted twice (seq ", rec.seq, ")"));
        }
        running.insert(e.job);
      } else if (e.type == core::EventType::kEnd || e.type == core::EventType::kPreempt ||
                 e.type == core::EventType::kReclaim) {
        running.erase(e.job);
      }
    }
    int64_t used = 0;
    for (const std::string& job : running) used += demand[job];
    if (used > kCapacity || broker->ClusterUsed("a", "gpu") > kCapacity) {
      return absl::InternalError(absl::StrCat("cluster a over-committed at seq ", rec.seq, ": ", used, " gpus"));
    }
    ++entries;
    return absl::OkStatus();
  });
  EXPECT_TRUE(read.ok()) << read;
  // 3. Epochs never go back: nothing was committed by a deposed leader.
  auto epochs = ledger::ReadJournalEpochs(Pg()).value();
  for (size_t i = 1; i < epochs.size(); ++i) {
    ASSERT_GE(epochs[i].second, epochs[i - 1].second) << "seq " << epochs[i].first << " written by a deposed leader";
  }
  // 4. The operator's check.
  std::string out;
  EXPECT_EQ(RunCommand(ServerProcess::BinDir() + "/tidegate ledger verify --db '" + Pg() + "'", &out), 0) << out;
}

class FailoverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string config = dir_->File("tidegate.yaml");
    std::ofstream(config) << kConfig;
    const std::vector<int> ports = FreePorts(3);
    for (int port : ports) {
      brokers_.push_back(std::make_unique<Broker>(dir_->path(), config, Pg(), port, LeaseMs()));
      // As deployed: what each saw committed outlives its restarts, so every
      // failover here also shows the record never refuses a whole ledger.
      brokers_.back()->AddArgs({"--acked-file", dir_->File(absl::StrCat("broker-", port, ".acked"))});
      // Without TIDEGATE_PG they exit at once; SetUp skips the tests.
      if (!brokers_.back()->Start() && !Pg().empty()) FAIL() << brokers_.back()->Stderr();
      addresses_.push_back(brokers_.back()->address());
    }
  }
  static void TearDownTestSuite() {
    brokers_.clear();
    delete dir_;
  }
  void SetUp() override {
    if (Pg().empty()) GTEST_SKIP() << "TIDEGATE_PG is not set: run under tests/postgres/with_postgres.sh";
    // The brokers create the tables (--init) as they start.
    ASSERT_TRUE(Eventually(
        [&] {
          auto opened = ledger::PgLease::Open(Pg());
          if (opened.ok()) lease_ = *std::move(opened);
          return opened.ok();
        },
        std::chrono::seconds(20)));
  }

  // The broker that holds the lease now, once it has renewed it while
  // watched (same epoch, a later expiry): a holder that was just killed, or
  // whose lease is about to pass to another, renews no more and is not taken
  // for the leader.
  Broker* Leader() {
    Broker* found = nullptr;
    int64_t epoch = -1;
    SteadyClock::time_point first_expiry{};
    Eventually(
        [&] {
          auto info = lease_->Read();
          if (!info.ok() || !info->held()) {
            epoch = -1;
            return false;
          }
          // By this process's clock; a renewal moves it a quarter lease on.
          const auto expiry = SteadyClock::now() + std::chrono::milliseconds(info->expires_in_ms);
          if (info->epoch != epoch) {
            epoch = info->epoch;
            first_expiry = expiry;
            return false;
          }
          if (expiry < first_expiry + std::chrono::milliseconds(LeaseMs() / 10)) return false;
          found = nullptr;
          for (auto& b : brokers_) {
            if (b->address() == info->address) found = b.get();
          }
          return found != nullptr;
        },
        std::chrono::seconds(20));
    return found;
  }
  int64_t Epoch() { return lease_->Read().value().epoch; }
  // The brokers' logs and the server's sessions, for a failure message.
  static std::string Logs() {
    std::string out;
    if (auto db = ledger::PgConnection::Open(Pg(), ""); db.ok()) {
      auto rows = (*db)->Exec(
          "SELECT pid, state, coalesce(wait_event_type, '') || ':' || coalesce(wait_event, ''), "
          "left(query, 80) FROM pg_stat_activity WHERE datname = current_database()");
      for (int i = 0; rows.ok() && i < rows->size(); ++i) {
        absl::StrAppend(&out, "\nsession ", rows->Text(i, 0), " ", rows->Text(i, 1), " ", rows->Text(i, 2), " ",
                        rows->Text(i, 3));
      }
    }
    for (auto& b : brokers_) absl::StrAppend(&out, "\n==== ", b->address(), "\n", b->Stderr());
    return out;
  }

  static TempDir* dir_;
  static std::vector<std::unique_ptr<Broker>> brokers_;
  static std::vector<std::string> addresses_;
  std::unique_ptr<ledger::PgLease> lease_;
};
TempDir* FailoverTest::dir_ = nullptr;
std::vector<std::unique_ptr<Broker>> FailoverTest::brokers_;
std::vector<std::string> FailoverTest::addresses_;

TEST_F(FailoverTest, TheLeaderKilledAtRandomMomentsLosesNothingAcknowledged) {
  Clients clients(addresses_, 4, kCapacity);
  std::mt19937 rng(42);
  std::vector<double> failover_ms;
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    Broker* leader = Leader();
    ASSERT_NE(leader, nullptr) << "no leader";
    // A random moment: after a random number of further acknowledged decisions.
    const int64_t until = clients.acks() + 5 + static_cast<int64_t>(rng() % 40);
    ASSERT_TRUE(Eventually([&] { return clients.acks() >= until; }, std::chrono::seconds(20)))
        << "no progress; leader log:\n" << leader->Stderr();
    const int64_t epoch = Epoch();
    const auto killed = SteadyClock::now();
    leader->Kill();
    const std::string old = leader->address();
    ASSERT_TRUE(Eventually([&] { return clients.last_admit_ack_not_by(old) > killed; }, std::chrono::seconds(20)))
        << "no new leader answered an Admit" << Logs();
    failover_ms.push_back(
        std::chrono::duration<double, std::milli>(clients.last_admit_ack_not_by(old) - killed).count());
    EXPECT_GT(Epoch(), epoch);
    ASSERT_TRUE(leader->Start()) << leader->Stderr();  // back as a standby
    CheckLedger(clients.Acked(), absl::StrCat("after round ", round));
    if (HasFatalFailure()) return;
  }
  clients.Stop();
  CheckLedger(clients.Acked(), "at the end");
  std::sort(failover_ms.begin(), failover_ms.end());
  std::printf("failover (leader SIGKILLed -> an Admit answered by the new leader), lease %d ms, %zu rounds: "
              "median %.0f ms, max %.0f ms\n",
              LeaseMs(), failover_ms.size(), failover_ms[failover_ms.size() / 2], failover_ms.back());
}

TEST_F(FailoverTest, ClientsGivenEveryBrokerFindTheLeader) {
  const std::string all = addresses_[0] + "," + addresses_[1] + "," + addresses_[2];
  Broker* leader = Leader();
  ASSERT_NE(leader, nullptr);
  // The CLI: a standby alone refuses, naming the leader; the list works.
  Broker* standby = nullptr;
  for (auto& b : brokers_) {
    if (b.get() != leader) standby = b.get();
  }
  std::string out;
  EXPECT_EQ(RunCommand(ServerProcess::BinDir() + "/tidegate --server " + standby->address() + " jobs", &out), 5);
  EXPECT_THAT(out, HasSubstr("the leader is at " + leader->address()));
  out.clear();
  EXPECT_EQ(RunCommand(ServerProcess::BinDir() + "/tidegate --server " + all + " jobs -o json", &out), 0) << out;
  // `tidegate leader` names it, with the epoch.
  out.clear();
  EXPECT_EQ(RunCommand(ServerProcess::BinDir() + "/tidegate leader -o json --db '" + Pg() + "'", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("\"address\":\"" + leader->address() + "\""));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("\"epoch\":", Epoch())));
  out.clear();
  EXPECT_EQ(RunCommand(ServerProcess::BinDir() + "/tidegate leader --db ledger.db", &out), 2) << out;
  EXPECT_THAT(out, HasSubstr("--db ledger.db: not a PostgreSQL ledger"));
  // The Python client's choice (deploy/examples/elastic/trainer.py).
  const char* source = TIDEGATE_SOURCE_ROOT;
  out.clear();
  const std::string python =
      std::string("/usr/bin/python3 -c \"import sys, argparse, grpc; sys.path.insert(0, '") + source +
      "/deploy/examples/elastic'); import trainer; print(trainer.find_leader(grpc, argparse.Namespace(server='" +
      all + "', token=None, token_file=None, tls=False, ca=None, cert=None, key=None)))\"";
  EXPECT_EQ(RunCommand(python, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr(leader->address())) << out;
  // After the leader is gone, the list finds the next one (within --timeout).
  leader->Kill();
  out.clear();
  EXPECT_EQ(RunCommand(ServerProcess::BinDir() + "/tidegate --timeout 10s --server " + all + " jobs", &out), 0) << out;
  ASSERT_TRUE(leader->Start()) << leader->Stderr();
}

TEST_F(FailoverTest, ImportUsageRefusesWhileABrokerLeadsAndImportsIntoALedgerWithout) {
  const std::string csv = dir_->File("usage.csv");
  std::ofstream(csv) << "team,hour_start_s,gpu\nred,1699999200,2\nred,1700002800,3\n";
  ASSERT_NE(Leader(), nullptr);
  const std::string bin = ServerProcess::BinDir() + "/tidegate ledger import-usage --column gpu ";
  std::string out;
  EXPECT_EQ(RunCommand(bin + "--db '" + Pg() + "' " + csv, &out), 4) << out;
  EXPECT_THAT(out, HasSubstr("a broker leads"));
  // A ledger of its own (a schema no broker uses): created, imported, readable.
  auto raw = ledger::PgConnection::Open(Pg(), "").value();
  ASSERT_TRUE(raw->ExecScript("DROP SCHEMA IF EXISTS imported CASCADE; CREATE SCHEMA imported").ok());
  const std::string other = Pg() + " options='-csearch_path=imported'";
  out.clear();
  EXPECT_EQ(RunCommand(bin + "--db \"" + other + "\" " + csv, &out), 2) << out;  // no tables, no --create
  out.clear();
  EXPECT_EQ(RunCommand(bin + "--create --db \"" + other + "\" " + csv, &out), 0) << out;
  ledger::PostgresOptions read_only;
  read_only.read_only = true;
  auto usage = ledger::OpenPostgresStore(other, read_only).value()->Usage("red", 0).value();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].used, 2 * 3600);
  // The import released the lease it took: the next one is refused only for
  // importing the same hours again.
  out.clear();
  EXPECT_EQ(RunCommand(bin + "--db \"" + other + "\" " + csv, &out), 4) << out;
  EXPECT_THAT(out, HasSubstr("already has gpu usage of team red"));
}

// The database lost its newest commits (it failed over to a replica that
// missed them; the DELETE stands in for that). The leader finds out at its
// next commit and stops writing; brokers restarted since still remember what
// they saw committed (--acked-file): neither the one that led nor the one
// that stood by takes the lease over the shorter journal, until an operator
// accepts the loss by removing the records.
TEST_F(FailoverTest, RestartedBrokersRefuseToLeadAJournalThatLostWhatTheySaw) {
  auto raw = ledger::PgConnection::Open(Pg(), "").value();
  ASSERT_TRUE(raw->ExecScript("DROP SCHEMA IF EXISTS remembered CASCADE; CREATE SCHEMA remembered").ok());
  const std::string db = Pg() + " options='-csearch_path=remembered'";  // the other tests' brokers go on
  const std::vector<int> ports = FreePorts(2);
  std::vector<std::unique_ptr<Broker>> brokers;
  std::vector<std::string> addresses, records;
  for (int port : ports) {
    records.push_back(dir_->File(absl::StrCat("remembered-", port, ".acked")));
    brokers.push_back(std::make_unique<Broker>(dir_->path(), dir_->File("tidegate.yaml"), db, port, LeaseMs()));
    brokers.back()->AddArgs({"--acked-file", records.back()});
    ASSERT_TRUE(brokers.back()->Start()) << brokers.back()->Stderr();
    addresses.push_back(brokers.back()->address());
  }
  const auto recorded = [&](size_t i) { return ledger::ReadAckedSeqAt(records[i]).value().value_or(0); };
  {
    Clients clients(addresses, 2, kCapacity);
    ASSERT_TRUE(Eventually([&] { return clients.acks() >= 20; }, std::chrono::seconds(20)));
  }
  ledger::PostgresOptions read_only;
  read_only.read_only = true;
  const int64_t last = ledger::OpenPostgresStore(db, read_only).value()->LastSeq().value();
  // The leader recorded what it committed, the standby what it read.
  ASSERT_TRUE(Eventually([&] { return recorded(0) >= last && recorded(1) >= last; }, std::chrono::seconds(20)))
      << recorded(0) << " " << recorded(1) << " of " << last;
  const int64_t cut = last - 5;
  ASSERT_TRUE(raw->ExecScript(absl::StrCat("SET search_path = remembered; DELETE FROM journal WHERE seq > ", cut,
                                           "; DELETE FROM snapshot_parts WHERE seq > ", cut,
                                           "; DELETE FROM snapshots WHERE seq > ", cut))
                  .ok());
  // The leader finds the loss at its next commit: it refuses writes, and
  // stopped, it writes nothing and exits 1.
  const ledger::LeaseInfo lease = ledger::PgLease::Open(db).value()->Read().value();
  const size_t leader = lease.address == addresses[0] ? 0 : 1;
  ASSERT_EQ(lease.address, addresses[leader]);
  const grpc::Status refused = AdmitOneGpu(lease.address, "after-the-loss");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("acknowledged commits are missing"));
  EXPECT_EQ(brokers[leader]->Terminate(), 1) << brokers[leader]->Stderr();
  EXPECT_THAT(brokers[leader]->Stderr(), HasSubstr("stopped without writing to the ledger"));
  brokers[1 - leader]->Kill();
  for (size_t i = 0; i < brokers.size(); ++i) {
    SCOPED_TRACE(records[i]);
    ASSERT_TRUE(brokers[i]->Start()) << brokers[i]->Stderr();
    EXPECT_EQ(brokers[i]->Wait(), 1) << brokers[i]->Stderr();
    EXPECT_THAT(brokers[i]->Stderr(), HasSubstr(absl::StrCat("the journal ends at seq ", cut, " but this broker saw seq ",
                                                             recorded(i), " committed (", records[i], ")")));
  }
  EXPECT_EQ(ledger::OpenPostgresStore(db, read_only).value()->LastSeq().value(), cut);  // nobody wrote on
  // Accepting the loss: without its record a broker leads the shorter journal.
  ASSERT_EQ(std::remove(records[0].c_str()), 0);
  ASSERT_TRUE(brokers[0]->Start()) << brokers[0]->Stderr();
  Clients clients({addresses[0]}, 1, kCapacity);
  ASSERT_TRUE(Eventually([&] { return clients.acks() >= 1; }, std::chrono::seconds(20))) << brokers[0]->Stderr();
  clients.Stop();
  EXPECT_TRUE(Eventually([&] { return recorded(0) > cut; }, std::chrono::seconds(20))) << recorded(0);
}

TEST_F(FailoverTest, APausedLeaderCommitsNothingAfterItsLeaseAndStepsDown) {
  Clients clients(addresses_, 4, kCapacity);
  Broker* leader = Leader();
  ASSERT_NE(leader, nullptr);
  const int64_t start = clients.acks();
  ASSERT_TRUE(Eventually([&] { return clients.acks() >= start + 10; }, std::chrono::seconds(20)));
  const int64_t epoch = Epoch();
  leader->Signal(SIGSTOP);
  const auto paused = SteadyClock::now();
  // Paused longer than its lease: another broker leads and answers.
  ASSERT_TRUE(Eventually([&] { return Epoch() > epoch && clients.last_admit_ack_not_by(leader->address()) > paused; },
                         std::chrono::seconds(20)))
      << Logs();
  const int64_t acked_by_new = clients.acks();
  ASSERT_TRUE(Eventually([&] { return clients.acks() >= acked_by_new + 10; }, std::chrono::seconds(20))) << Logs();
  leader->Signal(SIGCONT);
  // It steps down (restarts as a standby) rather than go on leading.
  ASSERT_TRUE(Eventually([&] { return leader->Stderr().find("stepping down") != std::string::npos; },
                         std::chrono::seconds(20)))
      << leader->Stderr();
  const int64_t after = clients.acks();
  ASSERT_TRUE(Eventually([&] { return clients.acks() >= after + 10; }, std::chrono::seconds(20)));
  clients.Stop();
  CheckLedger(clients.Acked(), "after the pause");
}

// The fence alone (the lease check in every commit's transaction): the
// leader's renewal is held up at the database (a session holds the lease
// row) until the lease has expired there, so the leader cannot know. An
// Admit it takes then must not be committed: its fence waits for the lease
// row and, once the row is free, finds the lease expired (or taken) and
// refuses. The journal's primary key cannot stand in: no other broker has
// written since.
TEST_F(FailoverTest, ALeaderWhoseLeaseExpiredUnseenCommitsNothing) {
  Broker* leader = Leader();
  ASSERT_NE(leader, nullptr);
  const int64_t epoch = Epoch();
  auto step_downs = [&] { return std::vector<std::string>(absl::StrSplit(leader->Stderr(), "stepping down")).size(); };
  const size_t stepped_down_before = step_downs();
  auto blocker = ledger::PgConnection::Open(Pg(), "").value();
  // An update, as a takeover's: a fence already waiting for the row checks
  // the lease again once this commits.
  ASSERT_TRUE(blocker->ExecScript("BEGIN; UPDATE leader_lease SET expires_at = expires_at WHERE id = 1").ok());
  ASSERT_TRUE(Eventually(
      [&] {
        auto expired = blocker->Exec("SELECT 1 FROM leader_lease WHERE id = 1 AND expires_at <= clock_timestamp()");
        return expired.ok() && expired->size() == 1;
      },
      std::chrono::seconds(10)));
  // The leader answers once its commit is through or refused; meanwhile its
  // fence (or the renewal, or a standby's takeover) waits for the row.
  auto answer = std::async(std::launch::async, [&] { return AdmitOneGpu(leader->address(), "unfenced"); });
  ASSERT_TRUE(Eventually(
      [&] {
        if (answer.wait_for(std::chrono::seconds(0)) == std::future_status::ready) return true;
        auto fence = blocker->Exec(
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT 1 FROM "
            "leader_lease WHERE id = 1 AND epoch = % FOR SHARE'");
        return fence.ok() && fence->size() > 0;
      },
      std::chrono::seconds(10)))
      << Logs();
  ASSERT_TRUE(blocker->ExecScript("COMMIT").ok());
  const grpc::Status status = answer.get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message() << " (epoch " << epoch
                                                                  << ", leader " << leader->address() << ")" << Logs();
  ledger::PostgresOptions read_only;
  read_only.read_only = true;
  EXPECT_FALSE(ledger::OpenPostgresStore(Pg(), read_only).value()->Job("unfenced").value().has_value())
      << "a leader whose lease had expired committed";
  // It steps down; a standby leads under a later epoch.
  ASSERT_TRUE(Eventually([&] { return step_downs() > stepped_down_before; }, std::chrono::seconds(10)))
      << leader->Stderr();
  Broker* next = Leader();
  ASSERT_NE(next, nullptr);
  EXPECT_GT(Epoch(), epoch);
}

TEST_F(FailoverTest, APostgresRestartUnderLoadLosesNothingAcknowledged) {
  const char* ctl = std::getenv("TIDEGATE_PG_CTL");
  const char* data = std::getenv("TIDEGATE_PG_DATA");
  const char* dir = std::getenv("TIDEGATE_PG_DIR");
  const char* port = std::getenv("TIDEGATE_PG_PORT");
  if (ctl == nullptr || data == nullptr || dir == nullptr || port == nullptr) GTEST_SKIP() << "no pg_ctl given";
  Clients clients(addresses_, 4, kCapacity);
  ASSERT_NE(Leader(), nullptr);
  const int64_t start = clients.acks();
  ASSERT_TRUE(Eventually([&] { return clients.acks() >= start + 20; }, std::chrono::seconds(20)));
  const std::string as_pg = getuid() == 0 ? "runuser -u postgres -- " : "";
  std::string out;
  // A crash (immediate: no shutdown checkpoint), then a start.
  ASSERT_EQ(RunCommand(as_pg + ctl + " -D " + data + " stop -m immediate", &out), 0) << out;
  const auto restarted = SteadyClock::now();
  ASSERT_EQ(RunCommand(as_pg + ctl + " -D " + data + " -w -t 30 -l " + dir + "/log -o \"-p " + port + " -k " + dir +
                           " -c listen_addresses=''\" start",
                       &out),
            0)
      << out;
  lease_ = ledger::PgLease::Open(Pg()).value();
  // The brokers wait for the server and go on.
  ASSERT_TRUE(Eventually([&] { return clients.last_admit_ack() > restarted; }, std::chrono::seconds(30)));
  const int64_t after = clients.acks();
  ASSERT_TRUE(Eventually([&] { return clients.acks() >= after + 10; }, std::chrono::seconds(20)));
  clients.Stop();
  CheckLedger(clients.Acked(), "after the restart");
}

}  // namespace
}  // namespace tidegate::testing
