// bench_ledger: the SQLite ledger's commit, as tidegated makes it under the
// load generator (bench/loadgen.cc): 32 clients each admit jobs "lg-C-N" into
// one of four teams and release their oldest, a commit carries 15 commands,
// each a journal entry and its job's row. A real file, synchronous = FULL.
//
// Reported per command (one command is one decision): `cpu_us`, the process's
// CPU during Commit (user and system, so the WAL's pwrite and fdatasync count,
// and the LEDGER.acked thread), and `written_B`, the bytes written to the
// ledger's files (WAL frames, checkpoints, LEDGER.acked; /proc/self/io).
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "ledger/bytes_written.h"
#include "ledger/store.h"

namespace tidegate::ledger {
namespace {

constexpr int kClients = 32;
constexpr int kCommandsPerCommit = 15;

class LoadgenPattern {
 public:
  // One commit's batch, seqs from `seq` on.
  Batch Next(int64_t* seq) {
    Batch batch;
    now_ms_ += 3;
    for (int i = 0; i < kCommandsPerCommit; ++i) {
      const int c = static_cast<int>(rng_() % kClients);
      ++*seq;
      JobRow row;
      std::string payload(55, '\0');
      for (char& ch : payload) ch = static_cast<char>(rng_());
      if (!live_[c].empty() && rng_() % 2 == 0) {
        row = std::move(live_[c].front());
        live_[c].pop_front();
        row.state = "ended";
        row.ended_at_ms = now_ms_;
        row.reason = "released";
        batch.journal.push_back(JournalRecord{*seq, now_ms_, "finish", payload, Checksum(payload)});
      } else {
        row = JobRow{absl::StrCat("lg-", c, "-", next_[c]++), absl::StrCat("t", rng_() % 4), "a", "admitted",
                     now_ms_, now_ms_, 0, "", std::string(32, 's')};
        live_[c].push_back(row);
        batch.journal.push_back(JournalRecord{*seq, now_ms_, "submit", payload, Checksum(payload)});
      }
      batch.jobs.push_back(std::move(row));
    }
    return batch;
  }

 private:
  std::mt19937_64 rng_{1};
  int64_t now_ms_ = 1'795'693'026'871;
  std::deque<JobRow> live_[kClients];
  int next_[kClients] = {};
};

double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Arg: the commands already in the ledger (it keeps every job ever run),
// written first without syncs.
void BM_SqliteCommit(benchmark::State& state) {
  std::string dir = (std::filesystem::temp_directory_path() / "tidegate-bench-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  const std::string path = dir + "/ledger.db";
  LoadgenPattern pattern;
  int64_t seq = 0;
  {
    SqliteOptions prefill;
    prefill.init = true;
    prefill.synchronous_full = false;
    auto store = OpenSqliteStore(path, prefill);
    while (store.ok() && seq < state.range(0)) {
      if (!(*store)->Commit(pattern.Next(&seq)).ok()) state.SkipWithError("prefill commit failed");
    }
  }
  {
    auto store = OpenSqliteStore(path, SqliteOptions{});
    if (!store.ok()) {
      state.SkipWithError(std::string(store.status().message()).c_str());
      return;
    }
    const int64_t written0 = BytesWrittenByThisProcess();
    int64_t commands = 0;
    double cpu = 0;
    for (auto _ : state) {
      Batch batch = pattern.Next(&seq);
      const double cpu0 = ProcessCpuSeconds();
      if (!(*store)->Commit(batch).ok()) state.SkipWithError("commit failed");
      cpu += ProcessCpuSeconds() - cpu0;
      commands += kCommandsPerCommit;
    }
    state.SetItemsProcessed(commands);
    state.counters["cpu_us"] = benchmark::Counter(cpu / static_cast<double>(commands) * 1e6);
    state.counters["written_B"] = benchmark::Counter(static_cast<double>(BytesWrittenByThisProcess() - written0) / commands);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SqliteCommit)->ArgName("jobs")->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMicrosecond)->MinTime(3);

}  // namespace
}  // namespace tidegate::ledger

BENCHMARK_MAIN();
