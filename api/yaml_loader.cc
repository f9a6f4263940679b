#include "api/yaml_loader.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <type_traits>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <yaml-cpp/yaml.h>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace tidegate::api {
namespace {

// Debian's Abseil is built with its own absl::string_view, not std's (options.h:
// ABSL_OPTION_USE_STD_STRING_VIEW 0), so the public std::string_view is
// converted once at the boundary.
absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::OneofDescriptor;
using google::protobuf::Reflection;

// "FILE:LINE: PATH", leaving out what is unknown or empty.
std::string Locate(absl::string_view filename, int line, absl::string_view path) {
  std::string out(filename);
  if (line > 0) absl::StrAppend(&out, ":", line);
  if (!path.empty()) absl::StrAppend(&out, ": ", path);
  return out;
}

// yaml-cpp counts lines from 0 and marks "no position" with -1.
int LineOf(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

// A null's mark points at the token after it, often on the next line, so a
// null value is reported at its key.
YAML::Mark MarkOf(const YAML::Node& node, const YAML::Mark& fallback) {
  return node.IsNull() || node.Mark().is_null() ? fallback : node.Mark();
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return absl::StrCat("'", node.Scalar(), "'");
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

absl::Status Invalid(absl::string_view reason) { return absl::InvalidArgumentError(reason); }

// Strict decimal with an optional sign: no '1.5', '1e3', '0x10' or spaces.
template <typename T>
absl::StatusOr<T> ParseInteger(absl::string_view text, absl::string_view type_name) {
  absl::string_view digits = text;
  const bool negative = absl::StartsWith(digits, "-");
  if (negative || absl::StartsWith(digits, "+")) digits.remove_prefix(1);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit)) {
    return Invalid(absl::StrCat("'", text, "' is not an integer"));
  }
  // Signed types parse the '-' too, so that the most negative value fits.
  const char* begin = negative && std::is_signed_v<T> ? digits.data() - 1 : digits.data();
  T value{};
  const auto [end, ec] = std::from_chars(begin, digits.data() + digits.size(), value);
  if (ec != std::errc() || (negative && std::is_unsigned_v<T> && value != 0)) {
    return Invalid(absl::StrCat("'", text, "' is out of range for ", type_name));
  }
  return value;
}

template <typename T>
absl::StatusOr<T> ParseFloat(absl::string_view text, absl::string_view type_name) {
  absl::string_view number = text;
  if (absl::StartsWith(number, "+") && !absl::StartsWith(number, "+-")) number.remove_prefix(1);
  T value{};
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return Invalid(absl::StrCat("'", text, "' is out of range for ", type_name));
  }
  if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    return Invalid(absl::StrCat("'", text, "' is not a number"));
  }
  return value;
}

absl::StatusOr<bool> ParseBool(absl::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return Invalid(absl::StrCat("'", text, "' is not true or false"));
}

// The enum type's name in UPPER_SNAKE_CASE plus '_', the prefix its value
// names carry (FairSharingStrategy -> FAIR_SHARING_STRATEGY_).
std::string EnumPrefix(const EnumDescriptor* type) {
  const std::string& name = type->name();
  std::string prefix;
  for (size_t i = 0; i < name.size(); ++i) {
    const bool word_starts =
        i > 0 && absl::ascii_isupper(name[i]) &&
        (!absl::ascii_isupper(name[i - 1]) ||
         (i + 1 < name.size() && absl::ascii_islower(name[i + 1])));  // "HTTPCode" -> HTTP_CODE
    if (word_starts) prefix += '_';
    prefix += absl::ascii_toupper(name[i]);
  }
  return prefix + "_";
}

// The value as a file writes it: WITHIN_TEAM_LOWER_PRIORITY -> lower_priority.
std::string ShortName(const EnumValueDescriptor* value, absl::string_view prefix) {
  absl::string_view name = value->name();
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

// The values a file may name, in declaration order: all but *_UNSPECIFIED,
// which means "not written" and so cannot be written.
std::vector<const EnumValueDescriptor*> WritableValues(const EnumDescriptor* type) {
  const std::string prefix = EnumPrefix(type);
  std::vector<const EnumValueDescriptor*> values;
  for (int i = 0; i < type->value_count(); ++i) {
    if (ShortName(type->value(i), prefix) != "unspecified") values.push_back(type->value(i));
  }
  return values;
}

std::string WritableNames(const EnumDescriptor* type) {
  const std::string prefix = EnumPrefix(type);
  std::vector<std::string> names;
  for (const EnumValueDescriptor* value : WritableValues(type)) {
    names.push_back(ShortName(value, prefix));
  }
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<const EnumValueDescriptor*> ParseEnum(absl::string_view text,
                                                     const EnumDescriptor* type) {
  const std::string prefix = EnumPrefix(type);
  for (const EnumValueDescriptor* value : WritableValues(type)) {
    if (text == ShortName(value, prefix) || absl::EqualsIgnoreCase(text, value->name())) {
      return value;
    }
  }
  return Invalid(absl::StrCat("'", text, "' is not one of ", WritableNames(type)));
}

// What a scalar field wants, for "expected X, got Y".
std::string Expected(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return "an integer";
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return "a number";
    case FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return absl::StrCat("one of ", WritableNames(field->enum_type()));
    default:
      return "a string";
  }
}

std::string FieldNames(const Descriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->field_count(); ++i) names.push_back(type->field(i)->name());
  return absl::StrJoin(names, ", ");
}

// One load: walks the YAML tree and the message's descriptor together,
// recording each path's line. Each method maps one YAML node (reported at `at`)
// onto the field or message at `path`.
class Mapper {
 public:
  // `node_budget`: how many nodes the walk may visit (ExpandedNodeBound).
  Mapper(SourceMap* where, int64_t node_budget) : where_(where), budget_(node_budget), bound_(node_budget) {}

  absl::Status Fill(const YAML::Node& node, const YAML::Mark& at, const std::string& path,
                    Message* msg) {
    if (!Visit()) return TooLarge(at, path);
    if (node.IsNull()) return absl::OkStatus();  // `key:`: present and empty, like `key: {}`.
    if (!node.IsMap()) return Error(at, path, absl::StrCat("expected a map, got ", Describe(node)));
    const Descriptor* type = msg->GetDescriptor();
    std::set<std::string, std::less<>> seen;
    std::map<const OneofDescriptor*, std::string> oneof_member;
    for (const auto& entry : node) {
      const YAML::Node& key = entry.first;
      const YAML::Mark key_at = MarkOf(key, at);
      if (!key.IsScalar()) {
        return Error(key_at, path, absl::StrCat("expected a field name, got ", Describe(key)));
      }
      const std::string& name = key.Scalar();
      const FieldDescriptor* field = type->FindFieldByName(name);
      if (field == nullptr) {
        return Error(key_at, path,
                     absl::StrCat("unknown field '", name, "' (known: ", FieldNames(type), ")"));
      }
      if (!seen.insert(name).second) {
        return Error(key_at, path, absl::StrCat("duplicate key '", name, "'"));
      }
      // real_: proto3 `optional` fields sit in synthetic one-member oneofs.
      if (const OneofDescriptor* oneof = field->real_containing_oneof()) {
        const auto [other, first] = oneof_member.emplace(oneof, name);
        if (!first) {
          return Error(key_at, path,
                       absl::StrCat("'", other->second, "' and '", name,
                                    "' cannot both be set (one of '", oneof->name(), "')"));
        }
      }
      const std::string field_path = path.empty() ? name : absl::StrCat(path, ".", name);
      Record(field_path, key_at);
      absl::Status status = FillField(entry.second, MarkOf(entry.second, key_at), field_path, msg,
                                      field);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status FillField(const YAML::Node& value, const YAML::Mark& at, const std::string& path,
                         Message* msg, const FieldDescriptor* field) {
    if (field->is_map()) return FillMap(value, at, path, msg, field);
    if (field->is_repeated()) return FillRepeated(value, at, path, msg, field);
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      return Fill(value, at, path, msg->GetReflection()->MutableMessage(msg, field));
    }
    return FillScalar(value, at, path, msg, field);
  }

  absl::Status FillRepeated(const YAML::Node& value, const YAML::Mark& at,
                            const std::string& path, Message* msg, const FieldDescriptor* field) {
    if (value.IsNull()) return absl::OkStatus();
    if (!value.IsSequence()) {
      return Error(at, path, absl::StrCat("expected a sequence, got ", Describe(value)));
    }
    size_t index = 0;
    for (const YAML::Node& element : value) {
      const std::string element_path = absl::StrCat(path, "[", index++, "]");
      const YAML::Mark element_at = MarkOf(element, at);
      if (!Visit()) return TooLarge(element_at, element_path);
      Record(element_path, element_at);
      absl::Status status =
          field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE
              ? Fill(element, element_at, element_path,
                     msg->GetReflection()->AddMessage(msg, field))
              : FillScalar(element, element_at, element_path, msg, field);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // A proto map is a repeated entry message {key, value}; YAML keys become
  // path components as written ("quota.mig-1g.10gb").
  absl::Status FillMap(const YAML::Node& value, const YAML::Mark& at, const std::string& path,
                       Message* msg, const FieldDescriptor* field) {
    if (value.IsNull()) return absl::OkStatus();
    if (!value.IsMap()) {
      return Error(at, path, absl::StrCat("expected a map, got ", Describe(value)));
    }
    const FieldDescriptor* key_field = field->message_type()->map_key();
    const FieldDescriptor* value_field = field->message_type()->map_value();
    std::set<std::string, std::less<>> seen;
    for (const auto& item : value) {
      const YAML::Mark key_at = MarkOf(item.first, at);
      if (!item.first.IsScalar()) {
        return Error(key_at, path, absl::StrCat("expected a key, got ", Describe(item.first)));
      }
      const std::string& key = item.first.Scalar();
      if (!Visit()) return TooLarge(key_at, path);
      if (!seen.insert(key).second) {
        return Error(key_at, path, absl::StrCat("duplicate key '", key, "'"));
      }
      const std::string entry_path = absl::StrCat(path, ".", key);
      Record(entry_path, key_at);
      Message* entry = msg->GetReflection()->AddMessage(msg, field);
      absl::Status status = FillScalar(item.first, key_at, entry_path, entry, key_field);
      if (status.ok()) {
        status =
            FillField(item.second, MarkOf(item.second, key_at), entry_path, entry, value_field);
      }
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

  // Sets a singular field or appends to a repeated one, from the raw scalar
  // text (not yaml-cpp's as<T>, which would take `yes` for true and `1e3` for
  // an int).
  absl::Status FillScalar(const YAML::Node& value, const YAML::Mark& at, const std::string& path,
                          Message* msg, const FieldDescriptor* field) {
    if (!value.IsScalar()) {
      return Error(at, path,
                   absl::StrCat("expected ", Expected(field), ", got ", Describe(value)));
    }
    const std::string& text = value.Scalar();
    const Reflection* reflection = msg->GetReflection();
    auto put = [&](auto parsed, auto set, auto add) -> absl::Status {
      if (!parsed.ok()) return Error(at, path, parsed.status().message());
      (reflection->*(field->is_repeated() ? add : set))(msg, field, *std::move(parsed));
      return absl::OkStatus();
    };
    const char* type_name = field->cpp_type_name();
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return put(ParseInteger<int32_t>(text, type_name), &Reflection::SetInt32,
                   &Reflection::AddInt32);
      case FieldDescriptor::CPPTYPE_INT64:
        return put(ParseInteger<int64_t>(text, type_name), &Reflection::SetInt64,
                   &Reflection::AddInt64);
      case FieldDescriptor::CPPTYPE_UINT32:
        return put(ParseInteger<uint32_t>(text, type_name), &Reflection::SetUInt32,
                   &Reflection::AddUInt32);
      case FieldDescriptor::CPPTYPE_UINT64:
        return put(ParseInteger<uint64_t>(text, type_name), &Reflection::SetUInt64,
                   &Reflection::AddUInt64);
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return put(ParseFloat<double>(text, type_name), &Reflection::SetDouble,
                   &Reflection::AddDouble);
      case FieldDescriptor::CPPTYPE_FLOAT:
        return put(ParseFloat<float>(text, type_name), &Reflection::SetFloat,
                   &Reflection::AddFloat);
      case FieldDescriptor::CPPTYPE_BOOL:
        return put(ParseBool(text), &Reflection::SetBool, &Reflection::AddBool);
      case FieldDescriptor::CPPTYPE_ENUM:
        return put(ParseEnum(text, field->enum_type()), &Reflection::SetEnum,
                   &Reflection::AddEnum);
      case FieldDescriptor::CPPTYPE_STRING:
        return put(absl::StatusOr<std::string>(text), &Reflection::SetString,
                   &Reflection::AddString);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        break;  // Handled by the callers.
    }
    return absl::InternalError(absl::StrCat(path, ": no scalar mapping for ", type_name));
  }

  // Counts one node; false once the budget is spent. An alias is walked
  // (and counted) every time it is used, so a small file of nested aliases
  // ("billion laughs") stops here instead of expanding exponentially.
  bool Visit() { return --budget_ >= 0; }
  absl::Status TooLarge(const YAML::Mark& at, absl::string_view path) const {
    return Error(at, path,
                 absl::StrCat("the document expands to more than ", bound_,
                              " nodes (aliases count each time they are used; the bound is ",
                              kMinExpandedNodes, " + ", kExpandedNodesPerByte, " per byte of the file)"));
  }

  void Record(std::string path, const YAML::Mark& at) {
    where_->Record(std::move(path), LineOf(at));
  }

  absl::Status Error(const YAML::Mark& at, absl::string_view path, absl::string_view reason) const {
    return Invalid(absl::StrCat(Locate(where_->filename(), LineOf(at), path), ": ", reason));
  }

  SourceMap* where_;
  int64_t budget_;
  const int64_t bound_;
};

absl::Status Load(absl::string_view text, Message* out, SourceMap* where) {
  const std::string& filename = where->filename();
  try {
    const std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
    if (documents.empty()) {
      return Invalid(absl::StrCat(filename, ": no YAML document; expected a map of fields"));
    }
    if (documents.size() > 1) {
      return Invalid(absl::StrCat(Locate(filename, LineOf(documents[1].Mark()), ""),
                                  ": expected one YAML document, found ", documents.size()));
    }
    const YAML::Node& root = documents[0];
    if (!root.IsMap()) {
      return Invalid(absl::StrCat(Locate(filename, LineOf(root.Mark()), ""),
                                  ": expected a map of fields, got ", Describe(root)));
    }
    return Mapper(where, ExpandedNodeBound(text.size())).Fill(root, root.Mark(), "", out);
  } catch (const YAML::Exception& e) {
    return Invalid(absl::StrCat(Locate(filename, LineOf(e.mark), ""), ": invalid YAML: ", e.msg));
  }
}

}  // namespace

int64_t ExpandedNodeBound(size_t text_bytes) {
  return kMinExpandedNodes + kExpandedNodesPerByte * static_cast<int64_t>(text_bytes);
}

namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

}  // namespace

void SourceMap::Clear(std::string_view filename) {
  filename_ = filename.empty() ? "<input>" : std::string(filename);
  lines_.clear();
}

int SourceMap::LineOf(std::string_view path) const {
  while (true) {
    if (const auto it = lines_.find(path); it != lines_.end()) return it->second;
    const size_t cut = path.find_last_of(".[");
    if (cut == std::string_view::npos) return 0;
    path = path.substr(0, cut);
  }
}

std::string SourceMap::Locate(std::string_view path) const {
  return api::Locate(filename_, LineOf(path), AsAbsl(path));
}

absl::Status LoadYamlString(std::string_view text, std::string_view filename, Message* out,
                            SourceMap* where) {
  out->Clear();
  SourceMap lines;
  lines.Clear(filename);
  absl::Status status = Load(AsAbsl(text), out, &lines);
  if (!status.ok()) {
    out->Clear();
    lines.Clear(filename);
  }
  if (where != nullptr) *where = std::move(lines);
  return status;
}

absl::Status LoadYamlFile(const std::string& path, Message* out, SourceMap* where) {
  out->Clear();
  if (where != nullptr) where->Clear(path);
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, n);
  if (std::ferror(file.get())) {  // e.g. a directory: fopen succeeds, fread fails.
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  return LoadYamlString(text, path, out, where);
}

}  // namespace tidegate::api
