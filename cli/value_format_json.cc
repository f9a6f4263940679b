// ToJson and the JSON number helpers of value_format.h: a small printer over
// protobuf reflection, because the proto3 JSON mapping writes int64 as JSON
// strings ("16"), which scripts then have to convert; ours writes numbers.
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/value_format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace tidegate::cli {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendScalar(const Message& m, const FieldDescriptor* f, int index, std::string* out) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(out, rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
      return;
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(out, rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
      return;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(out, rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
      return;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(out, rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
      return;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      *out += JsonNumber(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
      return;
    case FieldDescriptor::CPPTYPE_FLOAT:
      *out += JsonNumber(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
      return;
    case FieldDescriptor::CPPTYPE_BOOL:
      *out += (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
      return;
    case FieldDescriptor::CPPTYPE_ENUM:
      *out += JsonString((rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f))->name());
      return;
    case FieldDescriptor::CPPTYPE_STRING:
      *out += JsonString(rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f));
      return;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return;
  }
}

void AppendMessage(const Message& m, std::string* out);

void AppendValue(const Message& m, const FieldDescriptor* f, int index, std::string* out) {
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    const Reflection* r = m.GetReflection();
    AppendMessage(index >= 0 ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), out);
  } else {
    AppendScalar(m, f, index, out);
  }
}

void AppendMessage(const Message& m, std::string* out) {
  const Reflection* r = m.GetReflection();
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  *out += '{';
  bool first = true;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    // Like the proto3 mapping with every primitive printed: unset messages,
    // unset `optional` fields and unset oneof members are left out.
    if (!f->is_repeated() && (f->has_presence()) && !r->HasField(m, f)) continue;
    if (!first) *out += ',';
    first = false;
    *out += JsonString(f->name());
    *out += ':';
    if (f->is_map()) {
      const FieldDescriptor* key = f->message_type()->map_key();
      const FieldDescriptor* value = f->message_type()->map_value();
      *out += '{';
      for (int j = 0; j < r->FieldSize(m, f); ++j) {
        const Message& entry = r->GetRepeatedMessage(m, f, j);
        if (j > 0) *out += ',';
        std::string k;
        AppendScalar(entry, key, -1, &k);
        *out += key->cpp_type() == FieldDescriptor::CPPTYPE_STRING ? k : JsonString(k);
        *out += ':';
        AppendValue(entry, value, -1, out);
      }
      *out += '}';
    } else if (f->is_repeated()) {
      *out += '[';
      for (int j = 0; j < r->FieldSize(m, f); ++j) {
        if (j > 0) *out += ',';
        AppendValue(m, f, j, out);
      }
      *out += ']';
    } else {
      AppendValue(m, f, -1, out);
    }
  }
  *out += '}';
}

}  // namespace

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonNumber(double value) {
  if (std::isnan(value)) return "\"NaN\"";
  if (std::isinf(value)) return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  if (value == 0) return "0";  // also -0
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest that reads back
  return ec == std::errc() ? std::string(buf, end) : absl::StrCat(value);
}

double RoundTo(double value, int decimals) {
  if (!std::isfinite(value)) return value;
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  AppendMessage(message, &out);
  return out;
}

}  // namespace tidegate::cli
