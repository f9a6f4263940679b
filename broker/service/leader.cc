#include "broker/service/leader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "broker/service/leader_standby.h"
#include "broker/service/leader_tail.h"
#include "ledger/acked_seq.h"
#include "ledger/postgres_conn.h"
#include "ledger/postgres_store.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {
namespace {

int64_t RenewEveryMs(int64_t ttl_ms) { return std::max<int64_t>(ttl_ms / 4, 10); }

std::string HolderName() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::random_device random;
  return absl::StrCat(host, ":", getpid(), ":", random() % 100000);
}

std::optional<LedgerWriter> OpenSqliteWriter(const ServerOptions& options, int* exit_code) {
  // One broker per ledger file, whatever path names it (ledger/ledger_lock.h).
  // Held until RunServer returns, after every connection to the file closed.
  ledger::SqliteOptions sqlite;
  sqlite.synchronous_full = options.sync_full;
  sqlite.create = options.init;
  sqlite.init = options.init;
  auto opened = ledger::OpenLockedSqliteLedger(options.db_path, sqlite, "--init");
  if (!opened.ok()) {
    std::cerr << "tidegated: " << opened.status().message() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
  if (opened->lock.links() > 1) {
    spdlog::warn("ledger {} has {} hard links: SQLite names its WAL after the path, so open it by one path only",
                 options.db_path, opened->lock.links());
  }
  LedgerWriter out;
  out.lock.emplace(std::move(opened->lock));
  out.store = std::move(opened->store);
  return out;
}

// A failure worth waiting out (the database restarting) rather than exiting.
bool Transient(const absl::Status& status) { return absl::IsUnavailable(status); }

}  // namespace

LeaseKeeper::LeaseKeeper(std::unique_ptr<ledger::PgLease> lease, int64_t epoch, int64_t ttl_ms,
                         Clock::time_point valid_until)
    : lease_(std::move(lease)), epoch_(epoch), ttl_ms_(ttl_ms), valid_until_(valid_until) {}

LeaseKeeper::~LeaseKeeper() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;  // wakes Run's Await
  }
  if (thread_.joinable()) thread_.join();
  if (absl::Status released = lease_->Release(epoch_); released.ok()) {
    spdlog::info("leader: lease of epoch {} released", epoch_);
  } else {
    spdlog::warn("leader: could not release the lease of epoch {} (it expires by itself): {}", epoch_,
                 released.ToString());
  }
}

void LeaseKeeper::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaseKeeper::Run() {
  const absl::Duration period = absl::Milliseconds(RenewEveryMs(ttl_ms_));
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
    if (stopping_) return;
    // A process paused past its lease (SIGSTOP, a long GC-like stall, a
    // suspended VM) finds out here, before it would renew.
    const Clock::time_point sent = Clock::now();
    if (sent >= valid_until_) StepDown("the lease expired before it could be renewed");
    mu_.Unlock();  // renewing is a round trip to the database
    absl::StatusOr<bool> renewed = lease_->Renew(epoch_, ttl_ms_);
    mu_.Lock();
    if (renewed.ok() && *renewed) {
      valid_until_ = sent + std::chrono::milliseconds(ttl_ms_);
    } else if (renewed.ok()) {
      StepDown(absl::StrCat("the lease of epoch ", epoch_, " expired or was taken over"));
    } else {
      spdlog::warn("leader: cannot renew the lease (will retry until it expires): {}", renewed.status().ToString());
    }
  }
}

void LeaseKeeper::StepDown(const std::string& why) {
  spdlog::error("leader: stepping down, {}; restarting as a standby", why);
  // Everything (the core, the services, the connections) starts afresh: the
  // same argv, through /proc/self/exe, with the signal mask exec would keep
  // cleared.
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::stringstream text;
  text << cmdline.rdbuf();
  std::vector<std::string> args;
  std::string arg;
  for (char c : text.str()) {
    if (c == '\0') {
      args.push_back(arg);
      arg.clear();
    } else {
      arg.push_back(c);
    }
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  std::fflush(stdout);
  execv("/proc/self/exe", argv.data());
  spdlog::critical("leader: cannot re-execute ({}); exiting", std::strerror(errno));
  _exit(1);
}

// About 130 lines: with PostgreSQL, the steps before this broker may write —
// migrate the schema (retrying while the database is away), serve as a
// standby, loop on the lease until it is won, take the ledger over (recover,
// fence) — sharing the standby server, the reader and the lease; the steps
// are marked by comments.
std::optional<LedgerWriter> OpenLedgerWriter(const ServerOptions& options,
                                             std::shared_ptr<grpc::ServerCredentials> credentials,
                                             const sigset_t& signals, int* exit_code,
                                             const StandbySideFactory& standby_side,
                                             const auth::Authenticator* authenticator) {
  if (!ledger::IsPostgresLedger(options.db_path)) {
    if (!options.acked_file.empty()) {
      std::cerr << "tidegated: --acked-file " << options.acked_file
                << ": only for a PostgreSQL ledger; a SQLite ledger keeps its record beside the file ("
                << options.db_path << ".acked)\n";
      *exit_code = 2;
      return std::nullopt;
    }
    return OpenSqliteWriter(options, exit_code);
  }
  const std::string db = options.db_path;
  const std::string name = ledger::RedactConninfo(db);
  if (absl::EndsWith(options.listen, ":0")) {
    std::cerr << "tidegated: --listen " << options.listen
              << ": brokers sharing a PostgreSQL ledger need a fixed port (clients find the leader by its address)\n";
    *exit_code = 2;
    return std::nullopt;
  }
  const std::string advertise = options.advertise.empty() ? options.listen : options.advertise;
  const int64_t ttl_ms = options.lease_ms;
  const std::string holder = HolderName();
  // What this broker saw committed, kept across its restarts: the writer
  // store checks the journal against it when this broker takes the lease.
  std::optional<ledger::AckedSeqFile> seen_record;
  if (options.acked_file.empty()) {
    spdlog::warn("no --acked-file: a restart of this broker forgets the seq it saw committed, so it could take "
                 "the lease over a journal that lost acknowledged commits (docs/ha.md)");
  } else {
    absl::StatusOr<ledger::AckedSeqFile> opened = ledger::AckedSeqFile::OpenAt(options.acked_file, true, false);
    if (!opened.ok()) {
      std::cerr << "tidegated: --acked-file: " << opened.status().message() << "\n";
      *exit_code = 1;
      return std::nullopt;
    }
    spdlog::info("this broker saw seq {} committed ({})", opened->recorded(), options.acked_file);
    seen_record.emplace(*std::move(opened));
  }
  // --init creates the tables; otherwise a database without them is refused
  // (a ledger that vanished is never silently replaced).
  ledger::PostgresOptions setup;
  setup.create = options.init;
  for (;;) {
    absl::StatusOr<std::unique_ptr<ledger::Store>> migrated = ledger::OpenPostgresStore(db, setup);
    if (migrated.ok()) break;
    if (!Transient(migrated.status())) {
      std::cerr << "tidegated: " << migrated.status().message() << "\n";
      *exit_code = 1;
      return std::nullopt;
    }
    spdlog::warn("ledger: {}; retrying", std::string(migrated.status().message()));
    timespec wait{1, 0};
    if (int sig = sigtimedwait(&signals, nullptr, &wait); sig == SIGTERM || sig == SIGINT) {
      *exit_code = 0;
      return std::nullopt;
    }
  }
  auto standby = StandbyServer::Start(options.listen, credentials);
  if (!standby.ok()) {
    std::cerr << "tidegated: " << standby.status().message() << "\n";
    *exit_code = 1;
    return std::nullopt;
  }
  std::unique_ptr<SideServer> standby_http;
  if (standby_side) {
    auto started = standby_side(StandbyParts{standby->get(), authenticator});
    if (!started.ok()) {
      std::cerr << "tidegated: " << started.status().message() << "\n";
      *exit_code = 1;
      return std::nullopt;
    }
    standby_http = *std::move(started);
  }
  std::printf("tidegated listening on %s (standby)\n", options.listen.c_str());
  std::fflush(stdout);
  spdlog::info("standby on {} for ledger {} (lease {} ms, holder {})", options.listen, name, ttl_ms, holder);

  std::unique_ptr<ledger::PgLease> lease;
  std::unique_ptr<ledger::Store> reader;
  JournalTail tail;
  std::string problem;  // logged once until it changes
  const auto note = [&](const absl::Status& status) {
    if (std::string(status.message()) != problem) {
      problem = std::string(status.message());
      spdlog::warn("standby: {}", problem);
    }
  };
  for (;;) {
    absl::Status step = [&]() -> absl::Status {
      if (!lease) {
        auto opened = ledger::PgLease::Open(db);
        if (!opened.ok()) return opened.status();
        lease = *std::move(opened);
      }
      if (!reader) {
        ledger::PostgresOptions read_only;
        read_only.read_only = true;
        auto opened = ledger::OpenPostgresStore(db, read_only);
        if (!opened.ok()) return opened.status();
        reader = *std::move(opened);
      }
      return tail.Poll(*reader);
    }();
    if (!step.ok()) note(step);
    // A record left behind only weakens the check, so its failure is logged
    // and serving goes on.
    if (seen_record.has_value() && tail.seen_seq() > seen_record->recorded()) {
      if (absl::Status recorded = seen_record->Record(tail.seen_seq()); !recorded.ok()) note(recorded);
    }
    if (lease) {
      const auto sent = LeaseKeeper::Clock::now();
      absl::StatusOr<std::optional<int64_t>> epoch = lease->Acquire(holder, advertise, ttl_ms);
      if (epoch.ok() && epoch->has_value()) {
        const auto valid_until = sent + std::chrono::milliseconds(ttl_ms);
        const auto took = LeaseKeeper::Clock::now();
        auto keeper = std::make_unique<LeaseKeeper>(std::move(lease), **epoch, ttl_ms, valid_until);
        keeper->Start();
        ledger::PostgresOptions writer_options;
        writer_options.create = options.init;
        writer_options.fence_epoch = **epoch;
        writer_options.idle_transaction_timeout_ms = ttl_ms;
        writer_options.acked_record_path = options.acked_file;
        seen_record.reset();  // the writer store records from here on
        auto writer = ledger::OpenPostgresStore(db, writer_options);
        absl::StatusOr<std::optional<ledger_ops::RecoveredCore>> warm =
            writer.ok() ? tail.TakeOver(**writer) : absl::StatusOr<std::optional<ledger_ops::RecoveredCore>>(writer.status());
        if (!warm.ok()) {
          std::cerr << "tidegated: taking over as leader: " << warm.status().message() << "\n";
          *exit_code = 1;
          return std::nullopt;  // the keeper releases the lease
        }
        spdlog::info("leader: took the lease, epoch {} (caught up to seq {} in {} ms)", **epoch,
                     warm->has_value() ? (*warm)->seq : 0,
                     std::chrono::duration_cast<std::chrono::milliseconds>(LeaseKeeper::Clock::now() - took).count());
        standby_http.reset();  // frees the HTTP port for the leader's side server
        standby->reset();  // frees the port for the leader's server
        LedgerWriter out;
        out.store = *std::move(writer);
        out.warm = *std::move(warm);
        out.leadership = std::move(keeper);
        return out;
      }
      if (!epoch.ok()) {
        note(epoch.status());
        (*standby)->SetLeaseRound(0, std::string(epoch.status().message()));
      } else if (absl::StatusOr<ledger::LeaseInfo> info = lease->Read(); info.ok()) {
        (*standby)->SetLeader(info->held() ? info->address : "");
        (*standby)->SetLeaseRound(info->epoch, step.ok() ? "" : std::string(step.message()));
      } else {
        (*standby)->SetLeaseRound(0, std::string(info.status().message()));
      }
    } else {
      (*standby)->SetLeaseRound(0, std::string(step.message()));
    }
    timespec wait{0, static_cast<long>(RenewEveryMs(ttl_ms) * 1000000)};
    if (RenewEveryMs(ttl_ms) >= 1000) wait = timespec{RenewEveryMs(ttl_ms) / 1000, (RenewEveryMs(ttl_ms) % 1000) * 1000000};
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("signal {}: standby stopping", sig);
      *exit_code = 0;
      return std::nullopt;
    }
  }
}

}  // namespace tidegate::service
