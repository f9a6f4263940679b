// The guard that keeps a client's unknown protobuf fields out of the ledger
// (unknown_fields.h, CoreLoop::Submit): for every kind of command, fields
// planted in the command, in every message inside it and in its map entries
// reach no journal entry.
#include "broker/service/unknown_fields.h"

#include <future>
#include <set>
#include <string>
#include <vector>

#include "broker/service/core_loop.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 8 } } }
)pb";

// A field number no message of ours uses; its bytes name where it was put.
constexpr int kPlantedField = 9999;
constexpr char kPlanted[] = "planted-unknown-field@";

// One command of each kind the journal may hold, each one the writer
// journals (a submit of a new valid job; the other kinds always are).
std::vector<std::pair<std::string, std::string>> CommandsOfEveryKind() {
  return {
      {"submit", R"pb(submit { job: "s1" team: "research" per_replica { key: "gpu" value: 1 }
                               labels { key: "owner" value: "ana" } })pb"},
      {"submit", R"pb(submit { job: "s2" team: "research" per_replica { key: "gpu" value: 1 }
                               elastic { min: 1 max: 2 } })pb"},
      {"adopt", R"pb(adopt { jobs { job: "d1" team: "research" cluster: "a" replicas: 1
                                    per_replica { key: "gpu" value: 1 } labels { key: "k" value: "v" } } })pb"},
      {"finish", R"pb(finish: "s1")pb"},
      {"checkpoint", R"pb(checkpoint: "s2")pb"},
      {"set_quota", R"pb(set_quota { team: "research" quota { key: "gpu" value { guaranteed: 8 } } })pb"},
      {"set_capacity", R"pb(set_capacity { cluster: "a" capacity { key: "gpu" value: 8 } })pb"},
      {"tick", R"pb(tick {})pb"},
      {"apply_config", absl::StrCat("apply_config {", kConfig, "}")},
      {"ack_resize", R"pb(ack_resize { job: "s2" epoch: 1 replicas: 1 })pb"},
      {"vacate", R"pb(vacate: "d1")pb"},
  };
}

// Plants unknown fields in a message and the messages set inside it
// (singular, repeated, the values of maps of messages): in all of them, or
// only in the one numbered `only` in a walk's order.
class Planter {
 public:
  explicit Planter(int only = -1) : only_(only) {}
  // Returns how many places it walked.
  int Plant(Message* message, const std::string& where) {
    if (only_ < 0 || only_ == places_) {
      message->GetReflection()->MutableUnknownFields(message)->AddLengthDelimited(kPlantedField, kPlanted + where);
    }
    ++places_;
    const Reflection* reflection = message->GetReflection();
    std::vector<const FieldDescriptor*> fields;
    reflection->ListFields(*message, &fields);
    for (const FieldDescriptor* field : fields) {
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
      const std::string inner = absl::StrCat(where, "/", field->name());
      if (field->is_map()) {
        const FieldDescriptor* value = field->message_type()->map_value();
        if (value->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;  // entries: AppendMapEntries
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          Message* entry = reflection->MutableRepeatedMessage(message, field, i);
          Plant(entry->GetReflection()->MutableMessage(entry, value), inner + "[value]");
        }
      } else if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(*message, field); ++i) {
          Plant(reflection->MutableRepeatedMessage(message, field, i), absl::StrCat(inner, "[", i, "]"));
        }
      } else {
        Plant(reflection->MutableMessage(message, field), inner);
      }
    }
    return places_;
  }

 private:
  int only_;
  int places_ = 0;
};

std::string LengthDelimited(int field_number, const std::string& bytes) {
  google::protobuf::UnknownFieldSet field;
  field.AddLengthDelimited(field_number, bytes);
  std::string out;
  field.SerializeToString(&out);
  return out;
}

// Wire bytes that, appended to the serialized `command`, add to each map
// reached through singular messages another entry like its first one, with an
// unknown field in the entry itself (a message can carry none there: only
// a client's bytes can).
std::string AppendMapEntries(const Message& message, const std::string& where) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  std::string out;
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const std::string inner = absl::StrCat(where, "/", field->name());
    if (field->is_map()) {
      std::string entry = reflection->GetRepeatedMessage(message, field, 0).SerializeAsString();
      entry += LengthDelimited(kPlantedField, kPlanted + inner + "[entry]");
      out += LengthDelimited(field->number(), entry);
    } else if (!field->is_repeated()) {
      const std::string nested = AppendMapEntries(reflection->GetMessage(message, field), inner);
      if (!nested.empty()) out += LengthDelimited(field->number(), nested);
    }
  }
  return out;
}

internal::v1::Command Parsed(const std::string& text) {
  internal::v1::Command command;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &command)) << text;
  return command;
}

// What a client could send: `text` with unknown fields in every message and
// map entry, as bytes.
std::string Planted(const std::string& text) {
  internal::v1::Command command = Parsed(text);
  const std::string entries = AppendMapEntries(command, "command");
  Planter().Plant(&command, "command");
  return command.SerializeAsString() + entries;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

TEST(UnknownFieldScrubberTest, EveryKindOfCommandIsCoveredByTheJournalTest) {
  std::set<std::string> listed;
  for (const auto& [kind, text] : CommandsOfEveryKind()) listed.insert(kind);
  std::set<std::string> kinds;
  const auto* oneof = internal::v1::Command::descriptor()->FindOneofByName("kind");
  ASSERT_NE(oneof, nullptr);
  for (int i = 0; i < oneof->field_count(); ++i) kinds.insert(oneof->field(i)->name());
  EXPECT_EQ(listed, kinds);
}

// Why maps of scalar values need no look: parsing keeps only an entry's key
// and value. Were that to change, the scrubber would have to walk them.
TEST(UnknownFieldScrubberTest, ParsedEntriesOfScalarMapsKeepNoUnknownFields) {
  const std::string bytes = Planted(R"pb(submit { job: "j" per_replica { key: "gpu" value: 1 }
                                                  labels { key: "k" value: "v" } })pb");
  internal::v1::Command command;
  ASSERT_TRUE(command.ParseFromString(bytes));
  EXPECT_EQ(Count(bytes, "[entry]"), 2);
  EXPECT_EQ(Count(command.SerializeAsString(), "[entry]"), 0);
  EXPECT_EQ(command.submit().per_replica().at("gpu"), 1);
  EXPECT_EQ(command.submit().labels().at("k"), "v");
}

// One unknown field at a time, in each message of every kind of command: the
// scrubber finds it (drops it only then) and leaves the rest as it was.
TEST(UnknownFieldScrubberTest, FindsAndDropsAnUnknownFieldAtAnyDepthAndLeavesCleanCommandsAlone) {
  const UnknownFieldScrubber scrubber(internal::v1::Command::descriptor());
  int places = 0;
  for (const auto& [kind, text] : CommandsOfEveryKind()) {
    SCOPED_TRACE(kind);
    const internal::v1::Command clean = Parsed(text);
    internal::v1::Command command = clean;
    EXPECT_FALSE(scrubber.HasUnknownFields(command));
    EXPECT_FALSE(scrubber.Scrub(&command));
    EXPECT_EQ(command.SerializeAsString(), clean.SerializeAsString());
    const int count = Planter().Plant(&command, "command");
    for (int only = 0; only < count; ++only, ++places) {
      command = clean;
      Planter(only).Plant(&command, "command");
      ASSERT_TRUE(command.ParseFromString(command.SerializeAsString()));  // as a client's bytes
      const std::string planted = command.SerializeAsString();
      SCOPED_TRACE(planted.substr(planted.find(kPlanted)));
      EXPECT_TRUE(scrubber.HasUnknownFields(command));
      EXPECT_TRUE(scrubber.Scrub(&command));
      EXPECT_FALSE(scrubber.HasUnknownFields(command));
      EXPECT_EQ(command.SerializeAsString(), clean.SerializeAsString());
    }
  }
  EXPECT_GE(places, 20);  // 25: the commands above nest messages up to four deep
}

// Through the writer, as the handlers submit what clients send.
TEST(UnknownFieldScrubberTest, NoKindOfCommandCarriesAClientsUnknownFieldsIntoTheJournal) {
  v1::Config config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
  FakeClock clock(1'000'000);
  auto opened = CoreLoop::Open(config, ledger::NewMemoryStore(), &clock, {}, /*init=*/true);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<CoreLoop> loop = *std::move(opened);
  loop->Start();
  for (const auto& [kind, text] : CommandsOfEveryKind()) {
    SCOPED_TRACE(kind);
    const std::string sent = Planted(text);
    internal::v1::Command command;
    ASSERT_TRUE(command.ParseFromString(sent));
    ASSERT_GT(Count(command.SerializeAsString(), kPlanted), 0);  // the parsed command holds some
    const int64_t seq = loop->last_seq();
    std::promise<absl::StatusOr<Applied>> answer;
    loop->Submit(std::move(command), [&answer](absl::StatusOr<Applied> a) { answer.set_value(std::move(a)); });
    ASSERT_TRUE(answer.get_future().get().ok());
    std::vector<std::string> journalled;
    ASSERT_TRUE(loop->store_for_tests()
                    .ReadJournal(seq,
                                 [&](const ledger::JournalRecord& rec) {
                                   journalled.push_back(rec.payload);
                                   return absl::OkStatus();
                                 })
                    .ok());
    ASSERT_EQ(journalled.size(), 1u) << "the command was not journalled: the test would prove nothing";
    EXPECT_EQ(Count(journalled[0], kPlanted), 0) << journalled[0];
  }
}

}  // namespace
}  // namespace tidegate::service
