// YAML -> protobuf, driven by the message's descriptor, so config and scenario
// files (docs/design.md §8, §9) map onto the tidegate.v1 messages with no code per
// message. The loader checks form only (types, names, enum values); what the
// values mean (a parent that exists, quotas that add up) is the validator's job,
// which can point back at the file through the SourceMap.
//
// Mapping (the same names the CLI's `-o json` uses):
//   - a YAML map fills a message; keys are the snake_case field names;
//   - a null or `{}` value sets a message field present and empty, and is an
//     error for a scalar;
//   - int32/int64/uint32/uint64: strict decimal (optional sign), no floats, no
//     exponents, overflow is an error; double/float: std::from_chars, finite;
//     bool: `true` or `false`; string: the scalar exactly as written, so
//     `job: 1000` is the text "1000" and `yes` stays "yes";
//   - enums: the value name in lower case without its type's prefix
//     (`reclaim: lower_priority` -> RECLAIM_LOWER_PRIORITY), or the full name in
//     any case; *_UNSPECIFIED is never accepted from a file;
//   - repeated fields take a sequence (null or `[]` = empty), map fields a map
//     whose keys may hold '/', '-', '.' (`default/cpu`, `mig-1g.10gb`);
//   - setting two members of one oneof, or one key twice, is an error;
//   - proto3 `optional` fields get presence when written, which is how a file
//     says "borrow_limit: 0" rather than leaving it unlimited.
//
// Thread-safe: the functions keep no state.
#ifndef TIDEGATE_API_YAML_LOADER_H_
#define TIDEGATE_API_YAML_LOADER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace tidegate::api {

// Where each field of a loaded message came from, so that later checks can say
// "s.yaml:12: teams[1].quota.gpu.guaranteed: ..." like the loader does.
//
// A field path joins message fields with '.', sequence elements with [i] and
// map keys with '.key': "teams[1].quota.gpu.guaranteed",
// "events[3].submit.per_replica.gpu". Every path written in the file is
// recorded, including empty sequences and empty messages, so Has() tells a
// field written as 0 or [] from one left out where the proto cannot.
class SourceMap {
 public:
  const std::string& filename() const { return filename_; }

  // Whether `path` itself was written in the file (no prefix fallback).
  bool Has(std::string_view path) const { return lines_.find(path) != lines_.end(); }

  // The 1-based line of `path`. A path not in the file falls back to its
  // longest recorded prefix ("teams[1].quota.gpu.lend_limit" -> the line of
  // "teams[1].quota.gpu"), so a check on a defaulted field still points near
  // it; 0 if no prefix is recorded either.
  int LineOf(std::string_view path) const;

  // "FILE:LINE: PATH" (or "FILE: PATH" when LineOf is 0), the prefix of an
  // error message about `path`.
  std::string Locate(std::string_view path) const;

  // Used by the loader.
  void Clear(std::string_view filename);
  void Record(std::string path, int line) { lines_[std::move(path)] = line; }

 private:
  std::string filename_;
  std::map<std::string, int, std::less<>> lines_;
};

// The most YAML nodes a document of `text_bytes` may expand to, aliases
// counted each time they are used: a document without aliases has fewer
// nodes than bytes, so only alias expansion can reach it. Past it the load
// fails at once with INVALID_ARGUMENT (an anchor bomb of a few KB would
// otherwise expand to billions of nodes).
inline constexpr int64_t kMinExpandedNodes = 100000;
inline constexpr int64_t kExpandedNodesPerByte = 4;
int64_t ExpandedNodeBound(size_t text_bytes);

// Parses the single YAML document in `text` onto *out, which is cleared first.
// `filename` is only used in messages. On success fills *where (if given).
//
// Errors: INVALID_ARGUMENT "FILE:LINE: FIELD_PATH: reason" naming the value,
// e.g. "s.yaml:12: teams[1].quota.gpu.guaranteed: 'abc' is not an integer";
// YAML syntax errors, an empty file, several documents or a top-level value
// that is not a map give "FILE:LINE: reason". On error *out and *where are left
// cleared: a bad file changes nothing (docs/design.md §10).
absl::Status LoadYamlString(std::string_view text, std::string_view filename,
                            google::protobuf::Message* out, SourceMap* where = nullptr);

// LoadYamlString on the contents of `path`; NOT_FOUND naming the path if it
// cannot be read.
absl::Status LoadYamlFile(const std::string& path, google::protobuf::Message* out,
                          SourceMap* where = nullptr);

}  // namespace tidegate::api

#endif  // TIDEGATE_API_YAML_LOADER_H_
