// CRC-32 of journal payloads (store.h). zlib's crc32 is the IEEE polynomial,
// so `python3 -c 'import zlib; print(zlib.crc32(b"..."))'` gives the same value
// when checking a ledger by hand.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "ledger/store.h"

namespace tidegate::ledger {

namespace {

uLong Extend(uLong crc, std::string_view payload) {
  const auto* data = reinterpret_cast<const Bytef*>(payload.data());
  size_t left = payload.size();
  // crc32 takes a uInt length; feed large payloads in pieces.
  while (left > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, data, piece);
    data += piece;
    left -= piece;
  }
  return crc;
}

}  // namespace

uint32_t Checksum(const std::string& payload) {
  return static_cast<uint32_t>(Extend(crc32(0L, Z_NULL, 0), payload));
}

uint32_t SnapshotChecksum(const SnapshotRecord& snapshot) {
  return SnapshotChecksum(snapshot.payload, snapshot.seq, snapshot.at_ms);
}

uint32_t SnapshotChecksum(std::string_view payload, int64_t seq, int64_t at_ms) {
  const uLong crc = Extend(crc32(0L, Z_NULL, 0), payload);
  return static_cast<uint32_t>(Extend(crc, " " + std::to_string(seq) + " " + std::to_string(at_ms)));
}

}  // namespace tidegate::ledger
