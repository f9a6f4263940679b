// Record builders and a whole-store dump shared by the files of the Store
// conformance suite (store_conformance.h): store_conformance.cc and
// store_conformance_snapshots.cc.
#ifndef TIDEGATE_LEDGER_STORE_CONFORMANCE_SUPPORT_H_
#define TIDEGATE_LEDGER_STORE_CONFORMANCE_SUPPORT_H_

#include <cstdint>
#include <string>

#include "ledger/store.h"

namespace tidegate::ledger {

// Journal entry `seq` at 1000 * seq ms, payload "command SEQ" unless given,
// with its checksum.
JournalRecord Entry(int64_t seq, std::string payload = "");
// A batch of journal entries first..last.
Batch Entries(int64_t first, int64_t last);
// Everything the Store interface can show, as text, so "nothing changed" is
// one comparison with a readable diff.
std::string Dump(Store& store);

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_STORE_CONFORMANCE_SUPPORT_H_
