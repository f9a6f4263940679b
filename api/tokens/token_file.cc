#include "api/tokens/token_file.h"

#include <openssl/sha.h>

#include <cctype>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tidegate::tokens {
namespace {

bool IsSha256Hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseTokenFile(const std::string& text,
                                                                  const std::string& source) {
  std::map<std::string, std::string> token_principal;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (fields.size() != 2 || !IsSha256Hex(fields[1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line_no, ": expected `PRINCIPAL SHA256HEX` (64 lower-case hex digits, from "
          "`tidegate auth hash-token`)"));
    }
    if (!token_principal.emplace(fields[1], fields[0]).second) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line_no, ": the same token hash is listed twice"));
    }
  }
  return token_principal;
}

}  // namespace tidegate::tokens
