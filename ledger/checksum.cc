// CRC-32 of journal payloads (store.h). zlib's crc32 is the IEEE polynomial,
// so `python3 -c 'import zlib; print(zlib.crc32(b"..."))'` gives the same value
// when checking a ledger by hand.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ledger/store.h"

namespace tidegate::ledger {

uint32_t Checksum(const std::string& payload) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* data = reinterpret_cast<const Bytef*>(payload.data());
  size_t left = payload.size();
  // crc32 takes a uInt length; feed large payloads in pieces.
  while (left > 0) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, data, piece);
    data += piece;
    left -= piece;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace tidegate::ledger
