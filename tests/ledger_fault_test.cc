// The ledger's faults against the real tidegated (docs/operations.md): a
// missing or empty ledger, a second broker on a hard link or symlink, a
// read-only file system, a full disk that is freed again, a flipped bit in
// a snapshot, a deleted WAL. Disk full and read-only use a small tmpfs
// mount (the tests skip when mounting is not allowed).
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "gtest/gtest.h"
#include "ledger/acked_seq.h"
#include "ledger/sqlite_test_support.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;

constexpr char kConfig[] = R"(
clusters:
  - {name: a, capacity: {gpu: 64}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 64}}}
policy: {default_grace_s: 0, tick_s: 1}
)";

// gRPC health (grpc.health.v1.Health/Check for `service`, "" = the whole
// server), read from the raw response: field 1, varint; 1 = SERVING, 2 =
// NOT_SERVING.
int HealthStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& service = "") {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  std::string raw_request;
  if (!service.empty()) raw_request = std::string("\x0a") + static_cast<char>(service.size()) + service;
  grpc::Slice request_slice(raw_request);
  grpc::ByteBuffer request(&request_slice, 1);
  grpc::ByteBuffer response;
  const grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(channel.get(), method, &ctx,
                                                                                       request, &response);
  if (!s.ok()) {
    ADD_FAILURE() << "health check of '" << service << "': " << s.error_code() << " " << s.error_message();
    return -1;
  }
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const auto& slice : slices) bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return bytes.size() == 2 && bytes[0] == 0x08 ? bytes[1] : 0;
}
constexpr int kServing = 1;
constexpr int kNotServing = 2;

grpc::Status Admit(const std::shared_ptr<grpc::Channel>& channel, const std::string& job) {
  auto stub = v1::AdmissionService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::AdmitRequest req;
  req.mutable_job()->set_job(job);
  req.mutable_job()->set_team("red");
  req.mutable_job()->set_replicas(1);
  (*req.mutable_job()->mutable_per_replica())["gpu"] = 1;
  v1::AdmitResponse resp;
  return stub->Admit(&ctx, req, &resp);
}

grpc::Status GetJob(const std::shared_ptr<grpc::Channel>& channel, const std::string& job) {
  auto stub = v1::AdmissionService::NewStub(channel);
  grpc::ClientContext ctx;
  v1::GetJobRequest req;
  req.set_job(job);
  v1::JobInfo info;
  return stub->GetJob(&ctx, req, &info);
}

// `tidegate ledger verify --db DB`: exit code and stdout.
std::pair<int, std::string> Verify(const testing::TempDir& dir, const std::string& db) {
  const std::string out = dir.File("verify.out");
  const std::string cmd = testing::ServerProcess::BinDir() + "/tidegate ledger verify --db " + db + " > " + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

// `tidegate ledger import-usage --db DB [--create] CSV --column gpus`: exit
// code and output.
std::pair<int, std::string> ImportUsage(const testing::TempDir& dir, const std::string& db, bool create) {
  const std::string csv = dir.File("usage.csv");
  std::ofstream(csv) << "team,hour_start_s,gpus\nred,1699999200,2\n";
  const std::string out = dir.File("import.out");
  const std::string cmd = testing::ServerProcess::BinDir() + "/tidegate ledger import-usage --db " + db +
                          (create ? " --create " : " ") + csv + " --column gpus > " + out + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

class LedgerFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.File("tidegate.yaml");
    std::ofstream(config_) << kConfig;
    db_ = dir_.File("tidegate.db");
  }
  void TearDown() override {
    if (!mounted_.empty()) umount2(mounted_.c_str(), MNT_DETACH);
  }
  // A tmpfs of `kib` KiB at dir/mnt; false when mounting is not allowed.
  bool MountTmpfs(int kib) {
    const std::string at = dir_.File("mnt");
    std::filesystem::create_directory(at);
    const std::string options = "size=" + std::to_string(kib) + "k";
    if (mount("tmpfs", at.c_str(), "tmpfs", 0, options.c_str()) != 0) return false;
    mounted_ = at;
    db_ = at + "/tidegate.db";
    return true;
  }
  bool Remount(bool read_only) {
    return mount("tmpfs", mounted_.c_str(), "tmpfs", MS_REMOUNT | (read_only ? MS_RDONLY : 0), nullptr) == 0;
  }

  testing::TempDir dir_;
  std::string config_, db_, mounted_;
};

TEST_F(LedgerFaultTest, AMissingLedgerIsRefusedUnlessInitAsksForOne) {
  testing::ServerProcess refused(config_, db_);
  refused.set_init(false);
  EXPECT_FALSE(refused.Start());
  EXPECT_EQ(refused.exit_code(), 1);
  EXPECT_THAT(refused.Stderr(), HasSubstr("ledger " + db_ + " does not exist; pass --init"));
  EXPECT_FALSE(std::filesystem::exists(db_));

  testing::ServerProcess created(config_, db_);  // --init
  ASSERT_TRUE(created.Start()) << created.Stderr();
  EXPECT_TRUE(Admit(created.Channel(), "j1").ok());
}

// A deleted ledger must not come back empty through import-usage: without
// --create it refuses the missing file; with it, the acknowledged-seq record
// still vouches for the lost journal; and a file import-usage made holds no
// broker state, which tidegated opens only with --init.
TEST_F(LedgerFaultTest, ImportUsageCannotTurnALostLedgerIntoANewOne) {
  {
    testing::ServerProcess broker(config_, db_);
    ASSERT_TRUE(broker.Start()) << broker.Stderr();
    ASSERT_TRUE(Admit(broker.Channel(), "j1").ok());
    ASSERT_TRUE(Admit(broker.Channel(), "j2").ok());
    ASSERT_EQ(broker.Terminate(), 0);
  }
  const std::string acked = ReadFile(db_ + ".acked");
  ASSERT_THAT(acked, HasSubstr("acked "));
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_ + suffix);

  auto [missing_code, missing_out] = ImportUsage(dir_, db_, /*create=*/false);
  EXPECT_EQ(missing_code, 2) << missing_out;
  EXPECT_THAT(missing_out, HasSubstr("pass --create"));
  EXPECT_FALSE(std::filesystem::exists(db_));
  auto [created_code, created_out] = ImportUsage(dir_, db_, /*create=*/true);
  EXPECT_EQ(created_code, 2) << created_out;
  EXPECT_THAT(created_out, HasSubstr("was acknowledged"));
  EXPECT_EQ(ReadFile(db_ + ".acked"), acked);  // the record is neither reset nor rewritten lower
  testing::ServerProcess refused(config_, db_);
  refused.set_init(false);
  EXPECT_FALSE(refused.Start());
  EXPECT_EQ(refused.exit_code(), 1);
  EXPECT_THAT(refused.Stderr(), HasSubstr("seq 2 was acknowledged"));

  // A fresh path: the imported history opens only with --init.
  const std::string fresh = dir_.File("fresh.db");
  auto [fresh_code, fresh_out] = ImportUsage(dir_, fresh, /*create=*/true);
  ASSERT_EQ(fresh_code, 0) << fresh_out;
  testing::ServerProcess no_init(config_, fresh);
  no_init.set_init(false);
  EXPECT_FALSE(no_init.Start());
  EXPECT_EQ(no_init.exit_code(), 1);
  EXPECT_THAT(no_init.Stderr(), HasSubstr("holds no broker state"));
  EXPECT_THAT(no_init.Stderr(), HasSubstr("pass --init"));
  testing::ServerProcess init(config_, fresh);
  ASSERT_TRUE(init.Start()) << init.Stderr();
  EXPECT_TRUE(Admit(init.Channel(), "j1").ok());
}

TEST_F(LedgerFaultTest, AnEmptyLedgerFileIsRefusedUnlessInitAsksForOne) {
  std::ofstream(db_).close();  // 0 bytes, as a truncated or `touch`ed file
  testing::ServerProcess refused(config_, db_);
  refused.set_init(false);
  EXPECT_FALSE(refused.Start());
  EXPECT_EQ(refused.exit_code(), 1);
  EXPECT_THAT(refused.Stderr(), HasSubstr("ledger " + db_ + " is empty (0 bytes); pass --init"));
  EXPECT_EQ(std::filesystem::file_size(db_), 0u);
}

TEST_F(LedgerFaultTest, ASecondBrokerOnAHardLinkOrSymlinkIsRefused) {
  testing::ServerProcess first(config_, db_);
  ASSERT_TRUE(first.Start()) << first.Stderr();
  const std::string hard = dir_.File("hard-link.db"), soft = dir_.File("symlink.db");
  std::filesystem::create_hard_link(db_, hard);
  std::filesystem::create_symlink(db_, soft);
  for (const std::string& other : {hard, soft}) {
    testing::ServerProcess second(config_, other);
    second.set_init(false);
    EXPECT_FALSE(second.Start()) << other;
    EXPECT_EQ(second.exit_code(), 1);
    EXPECT_THAT(second.Stderr(), HasSubstr(other + " is in use by a running tidegated"));
  }
  EXPECT_TRUE(Admit(first.Channel(), "j1").ok());
}

TEST_F(LedgerFaultTest, AReadOnlyFileSystemIsReportedAsSuchThenTheBrokerStartsOnceWritable) {
  if (!MountTmpfs(16 * 1024)) GTEST_SKIP() << "cannot mount a tmpfs here";
  {
    testing::ServerProcess broker(config_, db_);
    ASSERT_TRUE(broker.Start()) << broker.Stderr();
    ASSERT_TRUE(Admit(broker.Channel(), "j1").ok());
    ASSERT_EQ(broker.Terminate(), 0);
  }
  ASSERT_TRUE(Remount(/*read_only=*/true));
  testing::ServerProcess refused(config_, db_);
  EXPECT_FALSE(refused.Start());
  EXPECT_EQ(refused.exit_code(), 1);
  EXPECT_THAT(refused.Stderr(), HasSubstr("Read-only file system"));
  EXPECT_THAT(refused.Stderr(), Not(HasSubstr("in use")));

  ASSERT_TRUE(Remount(/*read_only=*/false));
  testing::ServerProcess again(config_, db_);
  ASSERT_TRUE(again.Start()) << again.Stderr();
  EXPECT_TRUE(GetJob(again.Channel(), "j1").ok());
  EXPECT_TRUE(Admit(again.Channel(), "j2").ok());
}

TEST_F(LedgerFaultTest, AFullDiskStopsWritesNotReadsAndWritesResumeWhenSpaceIsFreed) {
  if (!MountTmpfs(4 * 1024)) GTEST_SKIP() << "cannot mount a tmpfs here";
  testing::ServerProcess broker(config_, db_);
  ASSERT_TRUE(broker.Start()) << broker.Stderr();
  auto channel = broker.Channel();
  ASSERT_TRUE(Admit(channel, "before").ok());
  EXPECT_EQ(HealthStatus(channel), kServing);

  // Fill the file system.
  const std::string filler = mounted_ + "/filler";
  {
    const int fd = open(filler.c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    const std::string chunk(64 * 1024, 'x');
    while (write(fd, chunk.data(), chunk.size()) > 0) {
    }
    const std::string byte(1, 'x');
    while (write(fd, byte.data(), 1) > 0) {
    }
    close(fd);
  }
  // The WAL grows with each commit; the first one that needs a page fails.
  std::string refused_job;
  grpc::Status refused;
  for (int i = 0; i < 300 && refused.ok(); ++i) {
    refused_job = "full-" + std::to_string(i);
    refused = Admit(channel, refused_job);
  }
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("disk is full"));
  EXPECT_EQ(HealthStatus(channel), kNotServing);
  // Per service: the ones that write are out, the read-only ones serve on.
  for (const char* writer : {"tidegate.v1.AdmissionService", "tidegate.v1.ElasticService", "tidegate.v1.AgentService"}) {
    EXPECT_EQ(HealthStatus(channel, writer), kNotServing) << writer;
  }
  for (const char* reader : {"tidegate.v1.QuotaService", "tidegate.v1.ForecastService"}) {
    EXPECT_EQ(HealthStatus(channel, reader), kServing) << reader;
  }
  EXPECT_TRUE(GetJob(channel, "before").ok());  // reads go on
  EXPECT_EQ(GetJob(channel, refused_job).error_code(), grpc::StatusCode::NOT_FOUND);

  std::filesystem::remove(filler);
  // The broker retries the ledger once a second: 15 s is many retries.
  ASSERT_TRUE(testing::Eventually([&] { return HealthStatus(channel) == kServing; }, std::chrono::seconds(15)))
      << broker.Stderr();
  EXPECT_EQ(HealthStatus(channel, "tidegate.v1.AdmissionService"), kServing);
  EXPECT_TRUE(Admit(channel, refused_job).ok());
  EXPECT_TRUE(GetJob(channel, refused_job).ok());
  EXPECT_THAT(broker.Stderr(), HasSubstr("health: NOT_SERVING: the ledger cannot be written: "));
  channel.reset();  // an open client channel holds up the shutdown by seconds
  EXPECT_EQ(broker.Terminate(), 0) << broker.Stderr();  // it never aborted
}

// Flips one bit of a job id inside the newest snapshot's payload, as a bad
// disk sector would, leaving the stored checksum as it was.
void FlipABitInTheLatestSnapshot(const std::string& db, const std::string& needle) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> conn(raw, sqlite3_close);
  sqlite3_stmt* read = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT seq, payload FROM snapshots ORDER BY seq DESC LIMIT 1", -1, &read, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(read), SQLITE_ROW);
  const int64_t seq = sqlite3_column_int64(read, 0);
  std::string payload(static_cast<const char*>(sqlite3_column_blob(read, 1)), sqlite3_column_bytes(read, 1));
  sqlite3_finalize(read);
  const size_t at = payload.find(needle);
  ASSERT_NE(at, std::string::npos);
  payload[at] ^= 0x01;  // 'j' -> 'k'
  sqlite3_stmt* write = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "UPDATE snapshots SET payload = ?1 WHERE seq = ?2", -1, &write, nullptr), SQLITE_OK);
  sqlite3_bind_blob(write, 1, payload.data(), static_cast<int>(payload.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(write, 2, seq);
  ASSERT_EQ(sqlite3_step(write), SQLITE_DONE);
  sqlite3_finalize(write);
}

TEST_F(LedgerFaultTest, AFlippedBitInASnapshotIsFoundAndAnOlderSnapshotIsReplayed) {
  {
    testing::ServerProcess broker(config_, db_, {"--snapshot-every", "3"});
    ASSERT_TRUE(broker.Start()) << broker.Stderr();
    for (int i = 0; i < 7; ++i) ASSERT_TRUE(Admit(broker.Channel(), "j" + std::to_string(i)).ok());
    ASSERT_EQ(broker.Terminate(), 0);
  }
  FlipABitInTheLatestSnapshot(db_, "j6");

  testing::ServerProcess broker(config_, db_);
  ASSERT_TRUE(broker.Start()) << broker.Stderr();
  EXPECT_THAT(broker.Stderr(), HasSubstr("does not match its contents"));
  EXPECT_THAT(broker.Stderr(), HasSubstr("recovering from an older snapshot"));
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(GetJob(broker.Channel(), "j" + std::to_string(i)).ok()) << i;
  EXPECT_EQ(GetJob(broker.Channel(), "k6").error_code(), grpc::StatusCode::NOT_FOUND);
  broker.Kill();
  auto [code, out] = Verify(dir_, db_);
  EXPECT_EQ(code, 1) << out;
  EXPECT_THAT(out, HasSubstr("does not match its contents"));
  // The journal itself is whole: its replay is still compared.
  EXPECT_THAT(out, ::testing::Not(HasSubstr("replay: stopped")));
}

// A damaged journal entry that the latest snapshot already covers is not
// read at start-up, so the broker starts; `ledger verify` names it once,
// rather than also listing every later change the replay could not make.
TEST_F(LedgerFaultTest, ADamagedEntryBeforeTheLatestSnapshotIsListedOnceByVerify) {
  {
    testing::ServerProcess broker(config_, db_);
    ASSERT_TRUE(broker.Start()) << broker.Stderr();
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(Admit(broker.Channel(), "j" + std::to_string(i)).ok()) << i;
    ASSERT_EQ(broker.Terminate(), 0);  // a clean stop writes a snapshot after the last entry
  }
  ASSERT_TRUE(ledger::RawDb(db_).Exec("UPDATE journal SET payload = payload || x'21' WHERE seq = 3").ok());

  testing::ServerProcess broker(config_, db_);
  ASSERT_TRUE(broker.Start()) << broker.Stderr();
  EXPECT_TRUE(GetJob(broker.Channel(), "j29").ok());
  broker.Kill();
  auto [code, out] = Verify(dir_, db_);
  EXPECT_EQ(code, 1) << out;
  EXPECT_THAT(out, HasSubstr("journal seq 3: stored checksum"));
  EXPECT_THAT(out, HasSubstr("replay: stopped at the problem above"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << out;  // the summary, two problems, the verdict
}

TEST_F(LedgerFaultTest, ABadSnapshotJournalRatioIsRefusedNamingTheFlagAndValueAndTouchesNoLedger) {
  for (const std::string bad : {"-1", "nan", "101", "lots"}) {
    testing::ServerProcess broker(config_, db_, {"--snapshot-journal-ratio", bad});
    EXPECT_FALSE(broker.Start()) << bad;
    EXPECT_EQ(broker.exit_code(), 2) << bad;
    EXPECT_THAT(broker.Stderr(), HasSubstr("--snapshot-journal-ratio: must be a number from 0 to 100, got " + bad));
  }
  EXPECT_FALSE(std::filesystem::exists(db_));  // refused before --init made one
}

// A SQLite ledger keeps its own record beside the file; a broker's record
// (--acked-file) is for a PostgreSQL ledger, and a flag that would do
// nothing is refused rather than trusted.
TEST_F(LedgerFaultTest, AnAckedFileForASqliteLedgerIsRefusedAndTouchesNoLedger) {
  const std::string record = db_ + ".broker-acked";
  testing::ServerProcess broker(config_, db_, {"--acked-file", record});
  EXPECT_FALSE(broker.Start());
  EXPECT_EQ(broker.exit_code(), 2);
  EXPECT_THAT(broker.Stderr(), HasSubstr("--acked-file " + record + ": only for a PostgreSQL ledger"));
  EXPECT_FALSE(std::filesystem::exists(db_));
  EXPECT_FALSE(std::filesystem::exists(record));
}

// gRPC would serve 99999 as port 34463 and a bare name on a port of its
// choosing; an address that cannot be meant is refused before anything opens.
TEST_F(LedgerFaultTest, AListenAddressWithoutAValidPortIsRefusedAndTouchesNoLedger) {
  for (const std::string bad : {"127.0.0.1:99999", "notanaddress", "127.0.0.1:", "127.0.0.1:-1"}) {
    testing::ServerProcess broker(config_, db_);
    broker.set_listen(bad);
    EXPECT_FALSE(broker.Start()) << bad;
    EXPECT_EQ(broker.exit_code(), 2) << bad;
    EXPECT_THAT(broker.Stderr(), HasSubstr("--listen '" + bad + "': expected HOST:PORT with a port from 0 to 65535"));
  }
  EXPECT_FALSE(std::filesystem::exists(db_));
}

// The journal's last seq, read beside the running broker (read-only: the
// connection must not checkpoint the WAL when it closes).
int64_t LastJournalSeq(const std::string& db) {
  sqlite3* raw = nullptr;
  int64_t seq = -1;
  if (sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* read = nullptr;
    if (sqlite3_prepare_v2(raw, "SELECT coalesce(max(seq), 0) FROM journal", -1, &read, nullptr) == SQLITE_OK &&
        sqlite3_step(read) == SQLITE_ROW) {
      seq = sqlite3_column_int64(read, 0);
    }
    sqlite3_finalize(read);
  }
  sqlite3_close(raw);
  return seq;
}

TEST_F(LedgerFaultTest, ADeletedWalIsDetectedRatherThanLosingAcknowledgedWork) {
  {
    testing::ServerProcess broker(config_, db_);
    ASSERT_TRUE(broker.Start()) << broker.Stderr();
    ASSERT_TRUE(Admit(broker.Channel(), "checkpointed").ok());
    ASSERT_EQ(broker.Terminate(), 0);  // a clean stop folds the WAL into the file
  }
  {
    testing::ServerProcess broker(config_, db_);
    ASSERT_TRUE(broker.Start()) << broker.Stderr();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(Admit(broker.Channel(), "acked-" + std::to_string(i)).ok());
    // LEDGER.acked is written off the commit's path and may lag by a sync:
    // the loss is detected once the record caught up with the commits.
    const int64_t committed = LastJournalSeq(db_);
    ASSERT_GT(committed, 0);
    ASSERT_TRUE(testing::Eventually(
        [&] {
          absl::StatusOr<std::optional<int64_t>> acked = ledger::ReadAckedSeq(db_);
          return acked.ok() && acked->value_or(0) >= committed;
        },
        std::chrono::seconds(15)));
    broker.Kill();  // the acknowledged admits are only in the WAL
  }
  ASSERT_TRUE(std::filesystem::remove(db_ + "-wal"));
  std::filesystem::remove(db_ + "-shm");

  testing::ServerProcess refused(config_, db_);
  EXPECT_FALSE(refused.Start());
  EXPECT_EQ(refused.exit_code(), 1);
  EXPECT_THAT(refused.Stderr(), HasSubstr("was acknowledged"));
  EXPECT_THAT(refused.Stderr(), HasSubstr(db_ + "-wal"));
  auto [code, out] = Verify(dir_, db_);
  EXPECT_EQ(code, 1) << out;
  EXPECT_THAT(out, HasSubstr("was acknowledged"));
}

// Acknowledged commits vanish from under a running broker, as when a
// database fails over to a replica that missed them: the next commit finds
// the journal short, and the broker refuses every write from then on rather
// than go on from the older state, keeps answering reads as acknowledged,
// and a stop writes nothing and exits 1.
TEST_F(LedgerFaultTest, ALedgerThatLostAcknowledgedCommitsIsNeverWrittenOnAgain) {
  testing::ServerProcess broker(config_, db_);
  ASSERT_TRUE(broker.Start()) << broker.Stderr();
  auto channel = broker.Channel();
  ASSERT_TRUE(Admit(channel, "kept").ok());
  ASSERT_TRUE(Admit(channel, "lost").ok());
  ledger::RawDb raw(db_);  // a connection of its own, beside the broker's
  ASSERT_TRUE(raw.Exec("DELETE FROM journal WHERE seq = (SELECT max(seq) FROM journal)").ok());
  const std::string journal_end = raw.Query("SELECT max(seq) FROM journal");

  const grpc::Status refused = Admit(channel, "after");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("acknowledged commits are missing"));
  EXPECT_EQ(HealthStatus(channel), kNotServing);
  EXPECT_TRUE(GetJob(channel, "lost").ok()) << "readers keep the acknowledged state";
  EXPECT_EQ(Admit(channel, "after-2").error_code(), grpc::StatusCode::UNAVAILABLE);
  channel.reset();  // an open client channel holds up the shutdown by seconds
  EXPECT_EQ(broker.Terminate(), 1) << broker.Stderr();
  EXPECT_THAT(broker.Stderr(), HasSubstr("stopped without writing to the ledger"));
  EXPECT_EQ(raw.Query("SELECT max(seq) FROM journal"), journal_end);
  EXPECT_EQ(raw.Query("SELECT count(*) FROM snapshots WHERE seq > " + journal_end), "0")
      << "no snapshot was written at the stop";
}

}  // namespace
}  // namespace tidegate
