// The in-memory Store (NewMemoryStore, declared in store.h) keeps everything
// in ordered maps and behaves like the SQLite store in every way the
// conformance suite checks (store_conformance.h). Thread-safe: one mutex.
//
// This header only adds test hooks that make the memory store show the damage
// a disk can do, so the DATA_LOSS tests run against both implementations.
#ifndef TIDEGATE_LEDGER_MEMORY_STORE_H_
#define TIDEGATE_LEDGER_MEMORY_STORE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ledger/store.h"

namespace tidegate::ledger {

// Flips the stored payload of entry `seq` without updating its checksum.
// INVALID_ARGUMENT when `store` is not from NewMemoryStore; NOT_FOUND when
// there is no such entry.
absl::Status CorruptMemoryJournalForTest(Store& store, int64_t seq);

// Removes entry `seq`, leaving a gap. Same errors as above.
absl::Status DropMemoryJournalEntryForTest(Store& store, int64_t seq);

// Changes the payload of the snapshot at `seq` without updating its
// checksum. Same errors as above.
absl::Status CorruptMemorySnapshotForTest(Store& store, int64_t seq);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_MEMORY_STORE_H_
