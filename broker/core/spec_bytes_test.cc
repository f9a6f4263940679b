// The core keeps each job's spec as bytes (spec_bytes.h) and compares a
// resubmission byte for byte: equal specs must give equal bytes whatever
// order their maps were filled in, and the bytes must tell apart exactly the
// specs MessageDifferencer::Equals tells apart. Checked on the bytes and
// through the broker, for a live job, an ended one and a restored core.
#include "broker/core/spec_bytes.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/core/broker.h"
#include "broker/core/test_support.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tidegate::core {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr Time kSec = kMillisPerSecond;
constexpr Time kT0 = 1'000'000 * kSec;
constexpr int kLabels = 40;  // enough that a hash map's order differs between the two fillings

v1::JobSpec Text(const std::string& text) {
  v1::JobSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec)) << text;
  return spec;
}

// Job `id` of team a with two resources and kLabels labels, its maps filled
// in ascending or descending key order.
v1::JobSpec Labelled(const std::string& id, bool descending) {
  v1::JobSpec spec;
  spec.set_job(id);
  spec.set_team("a");
  auto& per = *spec.mutable_per_replica();
  auto& labels = *spec.mutable_labels();
  if (descending) {
    per["gpu"] = 2;
    per["cpu"] = 8;
    for (int i = kLabels - 1; i >= 0; --i) labels[absl::StrCat("k", i)] = absl::StrCat("v", i);
  } else {
    per["cpu"] = 8;
    per["gpu"] = 2;
    for (int i = 0; i < kLabels; ++i) labels[absl::StrCat("k", i)] = absl::StrCat("v", i);
  }
  return spec;
}

internal::v1::Command SubmitOf(const v1::JobSpec& spec) { return test_support::SubmitCommand(spec); }

TEST(SpecBytesTest, EqualSpecsGiveEqualBytesWhateverTheOrderTheirMapsWereFilled) {
  const v1::JobSpec up = Labelled("x", false), down = Labelled("x", true);
  EXPECT_EQ(SpecBytes(up), SpecBytes(down));
  EXPECT_EQ(SpecBytes(up).size(), up.ByteSizeLong());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(ParseSpecBytes(SpecBytes(down)), up));
}

// Each pair: are they equal to MessageDifferencer, and do their bytes say the same?
TEST(SpecBytesTest, BytesTellApartExactlyWhatMessageDifferencerTellsApart) {
  struct Case {
    const char* a;
    const char* b;
    bool equal;
  };
  const std::vector<Case> cases = {
      // proto3 fields without presence: a default set is the default left out.
      {"job: 'x' priority: 0 draining: false", "job: 'x'", true},
      // the order fields are written in does not matter.
      {"team: 'a' job: 'x' per_replica { key: 'gpu' value: 1 }", "per_replica { key: 'gpu' value: 1 } job: 'x' team: 'a'",
       true},
      // `optional` fields: set to their default is not left out.
      {"job: 'x' gang: true", "job: 'x'", false},
      {"job: 'x' replicas: 0", "job: 'x'", false},
      {"job: 'x' grace_s: 0", "job: 'x'", false},
      // a message field present but empty is not absent.
      {"job: 'x' elastic {}", "job: 'x'", false},
      // a map entry of the default value is an entry.
      {"job: 'x' per_replica { key: 'gpu' value: 0 }", "job: 'x'", false},
      {"job: 'x' labels { key: 'k' value: '' }", "job: 'x'", false},
      {"job: 'x' labels { key: 'k' value: 'v' }", "job: 'x' labels { key: 'k' value: 'w' }", false},
  };
  for (const Case& c : cases) {
    const v1::JobSpec a = Text(c.a), b = Text(c.b);
    EXPECT_EQ(google::protobuf::util::MessageDifferencer::Equals(a, b), c.equal) << c.a << " | " << c.b;
    EXPECT_EQ(SpecBytes(a) == SpecBytes(b), c.equal) << c.a << " | " << c.b;
  }
  // A map emptied after use is no map; wire bytes in another field order
  // parse to the same message and so the same bytes.
  v1::JobSpec emptied = Text("job: 'x' labels { key: 'k' value: 'v' }");
  emptied.mutable_labels()->clear();
  EXPECT_EQ(SpecBytes(emptied), SpecBytes(Text("job: 'x'")));
  v1::JobSpec reordered;
  ASSERT_TRUE(reordered.ParseFromString(Text("team: 'a'").SerializeAsString() + Text("job: 'x'").SerializeAsString()));
  EXPECT_EQ(SpecBytes(reordered), SpecBytes(Text("job: 'x' team: 'a'")));
}

const char* const kConfig = R"pb(
  clusters { name: "k1" capacity { key: "gpu" value: 8 } capacity { key: "cpu" value: 64 } }
  teams { name: "a" quota { key: "gpu" value { guaranteed: 8 } } })pb";

TEST(SpecBytesTest, AResubmissionWithItsMapsInAnotherOrderIsTheSameJobLiveEndedAndRestored) {
  auto b = test_support::MakeBroker(kConfig, kT0);
  ASSERT_FALSE(b->Apply(SubmitOf(Labelled("j", false)), kT0).empty());
  ASSERT_EQ(b->GetJob("j")->state, v1::JOB_STATE_ADMITTED);
  const v1::JobSpec again = Labelled("j", true);
  EXPECT_THAT(b->Apply(SubmitOf(again), kT0 + kSec), IsEmpty());
  EXPECT_THAT(b->SubmitWithoutEffect(again, kT0 + kSec), ::testing::Optional(IsEmpty()));
  EXPECT_EQ(b->JobCount(), 1u);

  b->Apply(test_support::FinishCommand("j"), kT0 + 2 * kSec);
  ASSERT_EQ(b->GetJob("j")->state, v1::JOB_STATE_ENDED);
  EXPECT_THAT(b->Apply(SubmitOf(again), kT0 + 3 * kSec), IsEmpty());
  EXPECT_THAT(b->SubmitWithoutEffect(again, kT0 + 3 * kSec), ::testing::Optional(IsEmpty()));
  EXPECT_EQ(b->GetJob("j")->state, v1::JOB_STATE_ENDED);

  // The snapshot carries the spec as a message; the restored core makes its
  // bytes again and still knows the resubmission.
  b->Apply(SubmitOf(Labelled("live", false)), kT0 + 4 * kSec);
  auto restored = Broker::Restore(b->Snapshot());
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals((*restored)->Snapshot(), b->Snapshot()));
  EXPECT_THAT((*restored)->Apply(SubmitOf(again), kT0 + 5 * kSec), IsEmpty());
  EXPECT_THAT((*restored)->Apply(SubmitOf(Labelled("live", true)), kT0 + 5 * kSec), IsEmpty());
}

TEST(SpecBytesTest, AResubmissionWithAnotherSpecIsRefusedLiveAndEnded) {
  auto b = test_support::MakeBroker(kConfig, kT0);
  b->Apply(SubmitOf(Labelled("j", false)), kT0);
  v1::JobSpec other = Labelled("j", true);
  (*other.mutable_labels())["k7"] = "changed";

  const std::vector<Event> live = b->Apply(SubmitOf(other), kT0 + kSec);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].type, EventType::kError);
  EXPECT_EQ(live[0].reason, "job 'j' already exists with a different spec");
  EXPECT_EQ(b->GetJob("j")->ParsedSpec().labels().at("k7"), "v7");  // unchanged

  b->Apply(test_support::FinishCommand("j"), kT0 + 2 * kSec);
  const std::vector<Event> ended = b->Apply(SubmitOf(other), kT0 + 3 * kSec);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].type, EventType::kError);
  EXPECT_THAT(ended[0].reason, HasSubstr("already exists: it ended at"));
  const auto without_effect = b->SubmitWithoutEffect(other, kT0 + 3 * kSec);
  ASSERT_TRUE(without_effect.has_value());
  ASSERT_EQ(without_effect->size(), 1u);
  EXPECT_EQ((*without_effect)[0].type, EventType::kError);
  EXPECT_EQ(b->GetJob("j")->state, v1::JOB_STATE_ENDED);
}

}  // namespace
}  // namespace tidegate::core
