// A tiny deterministic JSON writer: the simulator's JSON-lines output
// (docs/design.md §9) and the forecast commands' `-o json`. Same calls =>
// byte-identical text: no locale, no platform-dependent float formatting
// (doubles use std::to_chars' shortest round-trip form), keys in the order
// they are written.
//
// Usage:
//   JsonWriter w;
//   w.BeginObject().Key("at").Int(0).Key("type").String("admit").EndObject();
//   w.str() == R"({"at":0,"type":"admit"})"
//
// The writer trusts its caller to nest Begin/End and Key/value correctly (a
// mistake is a programming error, not input to report).
//
// Threading: a value type; not thread-safe.
#ifndef TIDEGATE_API_TEXT_JSON_WRITER_H_
#define TIDEGATE_API_TEXT_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tidegate::text {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();

  // Inside an object: the next member's name. Must be followed by a value.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  // Shortest round-trip form ("0.5", "2", "1e+21"); -0 prints as 0; NaN and
  // infinities, which JSON cannot hold, print as null.
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void BeforeValue();

  std::string out_;
  // One entry per open object/array: true until its first element is written.
  std::vector<bool> first_;
  bool after_key_ = false;
};

// Appends `value` to `out` as a quoted JSON string: ", \ and control
// characters are escaped; other bytes (UTF-8 included) are copied as they are.
void AppendJsonString(std::string_view value, std::string* out);

// Appends the shortest round-trip decimal form of `value` (see Double above).
void AppendJsonDouble(double value, std::string* out);

}  // namespace tidegate::text

#endif  // TIDEGATE_API_TEXT_JSON_WRITER_H_
