// A record of the last journal seq a writer committed, kept beside the
// ledger file (LEDGER.acked) and outside SQLite, so that a WAL that was
// deleted or damaged after commits were acknowledged is detected rather than
// silently dropping them: SQLite opens a database whose WAL is gone as if
// the lost commits never happened, and the journal itself then looks whole.
//
// The SQLite store writes it after every commit that adds journal entries
// (fdatasync'd under synchronous = FULL, so it is as durable as the commit)
// and compares it with the journal's end when it opens for writing;
// `tidegate ledger verify` reports a journal that ends before it.
//
// Format: two text slots of kSlotBytes, "acked <seq> <crc32>", written in
// turn, so a torn write (power loss mid-write) leaves the other slot intact;
// the higher valid seq counts. A missing file means "no record" (a ledger
// copied without it, or written by an older binary): nothing to check.
//
// Threading: one writer (the store's thread).
#ifndef TIDEGATE_LEDGER_ACKED_SEQ_H_
#define TIDEGATE_LEDGER_ACKED_SEQ_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tidegate::ledger {

// LEDGER.acked, next to the file the path resolves to (SQLite resolves
// symlinks too, so the record sits beside the WAL it vouches for).
std::string AckedSeqPath(const std::string& ledger_path);

// The recorded seq; nullopt when there is no record (or no intact slot).
absl::StatusOr<std::optional<int64_t>> ReadAckedSeq(const std::string& ledger_path);

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

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_ACKED_SEQ_H_
