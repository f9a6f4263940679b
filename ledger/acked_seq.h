// A record of the last journal seq a writer committed, kept beside the
// ledger file (LEDGER.acked) and outside SQLite, so that a WAL that was
// deleted or damaged after commits were acknowledged is detected rather than
// silently dropping them: SQLite opens a database whose WAL is gone as if
// the lost commits never happened, and the journal itself then looks whole.
//
// The SQLite store compares it with the journal's end when it opens for
// writing; `tidegate ledger verify` reports a journal that ends before it.
// A broker on a PostgreSQL ledger keeps the same record in a file of its own
// (ReadAckedSeqAt, AckedSeqFile::OpenAt; tidegated --acked-file), for a
// database that failed over to a replica that missed commits.
//
// The record is kept off the commit's critical path (AckedSeqRecorder): a
// caller's acknowledgement waits only for the ledger's own commit (the WAL's
// fdatasync under synchronous = FULL, which is the durability); a background
// thread writes and fdatasyncs the record, coalescing: at most one sync in
// flight, each recording the latest committed seq, and at most one every
// kAckedRecordGap. So the record may lag the acknowledged seq by the commits
// of that gap and one sync (about 10 ms): a WAL lost or damaged later than
// that is still detected, one lost within that window is not. A clean
// shutdown flushes the record to the last committed seq. Syncing it inline
// doubled the syncs per commit, and the syncs bound the rate under I/O load;
// syncing it after every commit, off the path, still doubled the disk's
// flushes and woke a thread per commit.
//
// Format: two text slots of kSlotBytes, "acked <seq> <crc32>", written in
// turn, so a torn write (power loss mid-write) leaves the other slot intact;
// the higher valid seq counts. A missing file means "no record" (a ledger
// copied without it, or written by an older binary): nothing to check.
//
// Threading: AckedSeqFile has one writer; AckedSeqRecorder is that writer
// for the store, and its Advance may be called from any one thread.
#ifndef TIDEGATE_LEDGER_ACKED_SEQ_H_
#define TIDEGATE_LEDGER_ACKED_SEQ_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace tidegate::ledger {

// LEDGER.acked, next to the file the path resolves to (SQLite resolves
// symlinks too, so the record sits beside the WAL it vouches for).
std::string AckedSeqPath(const std::string& ledger_path);

// The recorded seq; nullopt when there is no record (or no intact slot).
absl::StatusOr<std::optional<int64_t>> ReadAckedSeq(const std::string& ledger_path);
// The same for a record at `record_path` itself: a broker on a PostgreSQL
// ledger keeps one of its own (tidegated --acked-file), as the database has
// no file to sit beside.
absl::StatusOr<std::optional<int64_t>> ReadAckedSeqAt(const std::string& record_path);

// The message for a journal that ends before the record, naming both seqs
// and the files involved.
std::string JournalBehindRecord(const std::string& ledger_path, int64_t last_seq, int64_t acked);

class AckedSeqFile {
 public:
  static constexpr int kSlotBytes = 64;

  // Opens (creating) the record. `reset`: start it at 0 (a new ledger: a
  // record left by an earlier ledger at this path no longer applies).
  // `sync`: fdatasync after each Record.
  static absl::StatusOr<AckedSeqFile> Open(const std::string& ledger_path, bool sync, bool reset);
  // The same for a record at `record_path` itself (ReadAckedSeqAt).
  static absl::StatusOr<AckedSeqFile> OpenAt(const std::string& record_path, bool sync, bool reset);
  AckedSeqFile(AckedSeqFile&& other) noexcept;
  AckedSeqFile& operator=(AckedSeqFile&&) = delete;
  AckedSeqFile(const AckedSeqFile&) = delete;
  ~AckedSeqFile();

  // Records `seq` (not below the last recorded one). A failure leaves the
  // previous record in place, which only weakens the check, never trips it.
  absl::Status Record(int64_t seq);
  int64_t recorded() const { return recorded_; }

 private:
  AckedSeqFile(int fd, bool sync, int64_t recorded) : fd_(fd), sync_(sync), recorded_(recorded) {}
  int fd_ = -1;
  bool sync_ = true;
  int64_t recorded_ = 0;
  int next_slot_ = 0;
};

// The shortest time from the end of one record to the start of the next:
// under a hundred syncs a second, whatever the commit rate.
inline constexpr std::chrono::milliseconds kAckedRecordGap{10};

// Records committed seqs in LEDGER.acked on its own thread, so a commit
// does not wait for the record's sync (see the top of this file).
class AckedSeqRecorder {
 public:
  // `record` writes one seq durably (AckedSeqFile::Record in the store; a
  // stand-in in tests). Its failures are dropped: a record left behind only
  // weakens the check, never trips it. A record starts at least `gap` after
  // the previous one ended; Close does not wait for the gap.
  explicit AckedSeqRecorder(std::function<absl::Status(int64_t)> record,
                            std::chrono::steady_clock::duration gap = kAckedRecordGap);
  explicit AckedSeqRecorder(AckedSeqFile file);
  AckedSeqRecorder(const AckedSeqRecorder&) = delete;
  AckedSeqRecorder& operator=(const AckedSeqRecorder&) = delete;
  // Close()s.
  ~AckedSeqRecorder();

  // `seq` is committed: record it (or a later one) soon. Never blocks on
  // I/O. False once Close has begun: the seq is then not recorded.
  bool Advance(int64_t seq);

  // Stops the thread and records the last advanced seq before returning
  // (the flush of a clean shutdown). Idempotent.
  void Close();

 private:
  void Run();

  std::function<absl::Status(int64_t)> record_;
  const std::chrono::steady_clock::duration gap_;
  std::mutex mu_;
  std::condition_variable wake_;          // a seq to record, or Close
  std::condition_variable closing_wake_;  // Close, during the gap
  int64_t latest_ = 0;  // the last seq advanced to
  int64_t taken_ = 0;   // the last seq handed to record_
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_ACKED_SEQ_H_
