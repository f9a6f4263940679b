#include "api/text/config_diff.h"

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace tidegate::text {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Field path -> value, for every field that is set.
using Flat = std::map<std::string, std::string>;

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : absl::StrCat(prefix, " ", name);
}

// An enum value as the config file writes it: lower case, without the
// prefix its type adds (RECLAIM_ANY -> any).
std::string EnumName(const google::protobuf::EnumValueDescriptor* value) {
  std::string name = value->name();
  std::string type;
  for (char c : value->type()->name()) {
    if (absl::ascii_isupper(c) && !type.empty()) type += '_';
    type += absl::ascii_toupper(c);
  }
  if (name.rfind(type + "_", 0) == 0) name = name.substr(type.size() + 1);
  return absl::AsciiStrToLower(name);
}

std::string Scalar(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrCat(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrCat(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumName(rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f));
    case FieldDescriptor::CPPTYPE_STRING: {
      const std::string s = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      return absl::StrCat("\"", s, "\"");
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "?";
}

void Flatten(const Message& m, const std::string& prefix, Flat* out);

// A map field: its entries by key; the quota maps of a team drop their own
// name ("research gpu guaranteed", as a team lead would say it).
void FlattenMap(const Message& m, const FieldDescriptor* f, const std::string& prefix, Flat* out) {
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* key = f->message_type()->map_key();
  const FieldDescriptor* value = f->message_type()->map_value();
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    const Message& entry = r->GetRepeatedMessage(m, f, i);
    std::string k = Scalar(entry, key, -1);
    if (k.size() >= 2 && k.front() == '"') k = k.substr(1, k.size() - 2);
    const std::string path = Join(prefix, k);
    if (value->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Flatten(entry.GetReflection()->GetMessage(entry, value), path, out);
    } else {
      (*out)[path] = Scalar(entry, value, -1);
    }
  }
}

void Flatten(const Message& m, const std::string& prefix, Flat* out) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const bool team_quota = f->name() == "quota" && m.GetDescriptor()->name() == "Team";
    const std::string path = team_quota ? prefix : Join(prefix, f->name());
    if (f->is_map()) {
      FlattenMap(m, f, path, out);
    } else if (f->is_repeated()) {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) {
          Flatten(r->GetRepeatedMessage(m, f, i), absl::StrCat(path, "[", i, "]"), out);
        }
      } else {
        std::vector<std::string> values;
        for (int i = 0; i < r->FieldSize(m, f); ++i) values.push_back(Scalar(m, f, i));
        (*out)[path] = absl::StrCat("[", absl::StrJoin(values, ", "), "]");
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Flatten(r->GetMessage(m, f), path, out);
    } else {
      (*out)[path] = Scalar(m, f, -1);
    }
  }
}

void DiffFlat(const Flat& before, const Flat& after, std::vector<std::string>* out) {
  for (const auto& [path, old_value] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      out->push_back(absl::StrCat(path, " ", old_value, " -> unset"));
    } else if (it->second != old_value) {
      out->push_back(absl::StrCat(path, " ", old_value, " -> ", it->second));
    }
  }
  for (const auto& [path, new_value] : after) {
    if (!before.count(path)) out->push_back(absl::StrCat(path, " unset -> ", new_value));
  }
}

// "parent: serving; gpu guaranteed 8": a new entry's fields, after its name.
std::string Describe(const Message& m, const std::string& name) {
  Flat flat;
  Flatten(m, "", &flat);
  std::vector<std::string> parts;
  for (const auto& [path, value] : flat) {
    if (path == "name") continue;
    parts.push_back(absl::StrCat(path, " ", value));
  }
  return parts.empty() ? name : absl::StrCat(name, " (", absl::StrJoin(parts, "; "), ")");
}

template <typename T>
void DiffByName(const std::string& kind, const std::string& prefix,
                const google::protobuf::RepeatedPtrField<T>& before,
                const google::protobuf::RepeatedPtrField<T>& after, std::vector<std::string>* out) {
  std::map<std::string, const T*> old_by_name, new_by_name;
  for (const T& x : before) old_by_name[x.name()] = &x;
  for (const T& y : after) new_by_name[y.name()] = &y;
  for (const T& y : after) {
    auto it = old_by_name.find(y.name());
    if (it == old_by_name.end()) {
      out->push_back(absl::StrCat("+ ", kind, " ", Describe(y, y.name())));
      continue;
    }
    Flat a, b;
    Flatten(*it->second, Join(prefix, y.name()), &a);
    Flatten(y, Join(prefix, y.name()), &b);
    a.erase(Join(Join(prefix, y.name()), "name"));
    b.erase(Join(Join(prefix, y.name()), "name"));
    DiffFlat(a, b, out);
  }
  for (const T& x : before) {
    if (!new_by_name.count(x.name())) out->push_back(absl::StrCat("- ", kind, " ", x.name()));
  }
}

}  // namespace

std::vector<std::string> ConfigDiff(const v1::Config& before, const v1::Config& after) {
  std::vector<std::string> out;
  DiffByName("cluster", "cluster", before.clusters(), after.clusters(), &out);
  DiffByName("team", "", before.teams(), after.teams(), &out);
  Flat a, b;
  Flatten(before.policy(), "policy", &a);
  Flatten(after.policy(), "policy", &b);
  DiffFlat(a, b, &out);
  return out;
}

}  // namespace tidegate::text
