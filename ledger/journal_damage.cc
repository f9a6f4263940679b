#include "ledger/journal_damage.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tidegate::ledger {
namespace {

constexpr char kDamageUrl[] = "type.tidegate.dev/tidegate.ledger.JournalDamage";
constexpr char kSnapshotDamageUrl[] = "type.tidegate.dev/tidegate.ledger.SnapshotDamage";

absl::Status Damaged(const std::string& message, JournalDamage damage) {
  absl::Status status = absl::DataLossError(message);
  // Two decimal integers, "seq resume_after": readable in a debugger too.
  status.SetPayload(kDamageUrl, absl::Cord(absl::StrCat(damage.seq, " ", damage.resume_after)));
  return status;
}

}  // namespace

absl::Status CheckStoredRecord(const JournalRecord& record, int64_t expected_seq) {
  if (record.seq > expected_seq) {
    const std::string missing = record.seq - 1 == expected_seq
                                    ? absl::StrCat("seq ", expected_seq)
                                    : absl::StrCat("seqs ", expected_seq, "..", record.seq - 1);
    return Damaged(
        absl::StrCat("journal ", missing, " missing (next stored entry is seq ", record.seq, ")"),
        {expected_seq, record.seq - 1});
  }
  const uint32_t actual = Checksum(record.payload);
  if (actual != record.checksum) {
    return Damaged(absl::StrCat("journal seq ", record.seq, ": stored checksum ", record.checksum,
                                " does not match its payload (crc32 ", actual, ")"),
                   {record.seq, record.seq});
  }
  return absl::OkStatus();
}

absl::Status CheckStoredSnapshot(const SnapshotRecord& snapshot, uint32_t stored_checksum) {
  const uint32_t actual = SnapshotChecksum(snapshot);
  if (actual == stored_checksum) return absl::OkStatus();
  absl::Status status = absl::DataLossError(
      absl::StrCat("snapshot at seq ", snapshot.seq, ": stored checksum ", stored_checksum,
                   " does not match its contents (crc32 ", actual, ")"));
  status.SetPayload(kSnapshotDamageUrl, absl::Cord(absl::StrCat(snapshot.seq)));
  return status;
}

absl::Status MissingSnapshotParts(int64_t seq, int64_t parts, int64_t found) {
  absl::Status status = absl::DataLossError(
      absl::StrCat("snapshot at seq ", seq, ": written in ", parts, " parts but only ", found, " of them are stored"));
  status.SetPayload(kSnapshotDamageUrl, absl::Cord(absl::StrCat(seq)));
  return status;
}

std::optional<int64_t> DamagedSnapshotSeq(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kDataLoss) return std::nullopt;
  auto payload = status.GetPayload(kSnapshotDamageUrl);
  int64_t seq = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &seq)) return std::nullopt;
  return seq;
}

std::optional<JournalDamage> DamageOf(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kDataLoss) return std::nullopt;
  auto payload = status.GetPayload(kDamageUrl);  // absl::optional in Debian's Abseil
  if (!payload.has_value()) return std::nullopt;
  std::vector<std::string> parts = absl::StrSplit(std::string(*payload), ' ');
  JournalDamage damage;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &damage.seq) ||
      !absl::SimpleAtoi(parts[1], &damage.resume_after)) {
    return std::nullopt;
  }
  return damage;
}

}  // namespace tidegate::ledger
