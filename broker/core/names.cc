#include "broker/core/names.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "broker/core/types.h"

namespace tidegate::core {
namespace {

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == ':' ||
         c == '/' || c == '-' || c == '_';
}

}  // namespace

std::string QuoteForError(std::string_view value) {
  constexpr size_t kShown = 64;
  const std::string_view shown = value.substr(0, kShown);
  std::string out = absl::StrCat("'", absl::CEscape(absl::string_view(shown.data(), shown.size())), "'");
  if (value.size() > kShown) absl::StrAppend(&out, "... (", value.size(), " bytes)");
  return out;
}

absl::Status ValidateName(std::string_view field_in, std::string_view value) {
  const absl::string_view field = AbslView(field_in);
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  if (value.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", QuoteForError(value), " is ", value.size(), " bytes; at most ", kMaxNameBytes));
  }
  for (char c : value) {
    if (!NameChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", QuoteForError(value),
                                                     " may hold only letters, digits and . _ : / - (found ",
                                                     QuoteForError(std::string_view(&c, 1)), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateLabels(std::string_view field_in, const google::protobuf::Map<std::string, std::string>& labels) {
  const absl::string_view field = AbslView(field_in);
  if (labels.size() > kMaxLabels) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", labels.size(), " labels; at most ", kMaxLabels));
  }
  for (const auto& [key, value] : labels) {
    if (auto s = ValidateName(std::string(absl::StrCat(field, " key")), key); !s.ok()) return s;
    const std::string where = absl::StrCat(field, ".", key);
    if (value.size() > kMaxLabelValueBytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the value is ", value.size(), " bytes; at most ",
                                                     kMaxLabelValueBytes));
    }
    for (char c : value) {
      if (c < 0x20 || c > 0x7e) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", QuoteForError(value), " may hold only printable ASCII"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tidegate::core
