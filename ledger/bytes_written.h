// Bytes this process has handed to write(2) and its kin so far (wchar of
// /proc/self/io), for tests and benchmarks that count what a commit writes;
// -1 when the file cannot be read.
#ifndef TIDEGATE_LEDGER_BYTES_WRITTEN_H_
#define TIDEGATE_LEDGER_BYTES_WRITTEN_H_

#include <cstdint>
#include <fstream>
#include <string>

namespace tidegate::ledger {

inline int64_t BytesWrittenByThisProcess() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return -1;
}

}  // namespace tidegate::ledger

#endif  // TIDEGATE_LEDGER_BYTES_WRITTEN_H_
