// ReadModel as a unit, over a real core: what a model holds, that an update
// leaves the model it came from as it was (readers may still hold it) and
// shares what did not change, and the team figures readers see.
#include "broker/service/read_model.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 1000 } }
  teams { name: "org" quota { key: "gpu" value { guaranteed: 400 } } }
  teams { name: "research" parent: "org" quota { key: "gpu" value { guaranteed: 200 } } }
  teams { name: "training" parent: "org" quota { key: "gpu" value { guaranteed: 200 } } }
  teams { name: "ops" quota { key: "gpu" value { guaranteed: 100 } } }
)pb";

class ReadModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    v1::Config config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
    auto broker = core::Broker::Create(config, 1'000'000);
    ASSERT_TRUE(broker.ok()) << broker.status();
    broker_ = *std::move(broker);
  }
  // Applies `command`; returns the jobs its events name.
  std::vector<std::string> Apply(const internal::v1::Command& command) {
    now_ += 10;
    std::vector<std::string> touched;
    for (const auto& e : broker_->Apply(command, now_)) {
      if (!e.job.empty()) touched.push_back(e.job);
    }
    return touched;
  }
  std::vector<std::string> Submit(const std::string& id, const std::string& team, int64_t gpus) {
    internal::v1::Command c;
    c.mutable_submit()->set_job(id);
    c.mutable_submit()->set_team(team);
    (*c.mutable_submit()->mutable_per_replica())["gpu"] = gpus;
    return Apply(c);
  }

  std::unique_ptr<core::Broker> broker_;
  core::Time now_ = 1'000'000;
};

TEST_F(ReadModelTest, BuildHoldsEveryJobAndTeamOfTheCore) {
  for (int i = 0; i < 300; ++i) Submit("j" + std::to_string(i), i % 2 ? "research" : "ops", 1);
  auto model = ReadModel::Build(*broker_, 7);
  EXPECT_EQ(model->seq(), 7);
  for (int i = 0; i < 300; ++i) {
    auto j = model->FindJob("j" + std::to_string(i));
    ASSERT_NE(j, nullptr) << i;
    EXPECT_EQ(j->team(), i % 2 ? "research" : "ops");
    EXPECT_EQ(j->state(), v1::JOB_STATE_ADMITTED);
  }
  EXPECT_EQ(model->FindJob("nobody"), nullptr);
  EXPECT_EQ(model->Jobs("", v1::JOB_STATE_UNSPECIFIED).size(), 300u);
  EXPECT_EQ(model->Jobs("research", v1::JOB_STATE_ADMITTED).size(), 150u);
  ASSERT_NE(model->FindTeam("training"), nullptr);
  EXPECT_EQ(model->FindTeam("nobody"), nullptr);
}

TEST_F(ReadModelTest, AnUpdateLeavesTheEarlierModelAsItWasAndSharesWhatDidNotChange) {
  for (int i = 0; i < 200; ++i) Submit("old" + std::to_string(i), "ops", 1);
  auto before = ReadModel::Build(*broker_, 1);
  std::vector<std::string> touched;
  for (int i = 0; i < 100; ++i) {
    for (auto& id : Submit("new" + std::to_string(i), "research", 1)) touched.push_back(id);
  }
  internal::v1::Command finish;
  finish.set_finish("old0");
  for (auto& id : Apply(finish)) touched.push_back(id);
  auto after = ReadModel::Update(*before, *broker_, 2, touched, /*all_teams=*/false);

  EXPECT_EQ(after->seq(), 2);
  for (int i = 0; i < 100; ++i) {
    const std::string id = "new" + std::to_string(i);
    EXPECT_NE(after->FindJob(id), nullptr) << id;
    EXPECT_EQ(before->FindJobAny(id), nullptr) << id;
  }
  ASSERT_NE(after->FindJobAny("old0"), nullptr);
  EXPECT_EQ(after->FindJobAny("old0")->state(), v1::JOB_STATE_ENDED);
  EXPECT_EQ(before->FindJob("old0")->state(), v1::JOB_STATE_ADMITTED);
  // Untouched jobs are the same objects in both models, not copies.
  for (int i = 1; i < 200; ++i) {
    const std::string id = "old" + std::to_string(i);
    ASSERT_NE(after->FindRecord(id), nullptr) << id;
    EXPECT_EQ(after->FindRecord(id), before->FindRecord(id)) << id;
  }
  // Teams of touched jobs and their ancestors are re-read; the rest shared.
  EXPECT_EQ(after->TeamWithFigures("research")->resources(0).used(), 100);
  EXPECT_EQ(after->TeamWithFigures("org")->resources(0).used(), 100);
  EXPECT_EQ(before->TeamWithFigures("research")->resources(0).used(), 0);
  EXPECT_EQ(after->TeamWithFigures("ops")->resources(0).used(), 199);
  EXPECT_EQ(after->FindTeam("training"), before->FindTeam("training"));
}

// The model keeps compact records; what readers get must be exactly the
// JobInfo of the core's view, in every state a job can be read in.
TEST_F(ReadModelTest, EveryJobReadsAsTheJobInfoOfTheCoresView) {
  Submit("admitted", "research", 300);  // borrowing
  Submit("queued", "ops", 900);         // waits, with a reason
  internal::v1::Command two;
  two.mutable_submit()->set_job("two-resources");
  two.mutable_submit()->set_team("training");
  two.mutable_submit()->set_replicas(3);
  (*two.mutable_submit()->mutable_per_replica())["gpu"] = 2;
  (*two.mutable_submit()->mutable_labels())["owner"] = "someone with a long name";
  Apply(two);
  Submit("ended", "ops", 1);
  internal::v1::Command finish;
  finish.set_finish("ended");
  Apply(finish);
  Submit("rejected", "no-such-team", 1);
  auto model = ReadModel::Build(*broker_, 1);
  auto updated = ReadModel::Update(*model, *broker_, 2, {"admitted", "queued", "ended", "rejected"}, false);
  for (const auto* m : {model.get(), updated.get()}) {
    for (const std::string id : {"admitted", "queued", "two-resources", "ended", "rejected"}) {
      std::optional<core::JobView> view = broker_->GetJob(id);
      ASSERT_TRUE(view.has_value()) << id;
      auto read = m->FindJobAny(id);
      ASSERT_NE(read, nullptr) << id;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*read, ToJobInfo(*view, nullptr)))
          << id << ":\n" << read->DebugString() << "\nwant:\n" << ToJobInfo(*view, nullptr).DebugString();
    }
  }
  EXPECT_EQ(model->FindJobAny("queued")->state(), v1::JOB_STATE_QUEUED);
  EXPECT_FALSE(model->FindJobAny("queued")->reason().empty());
  EXPECT_EQ(model->FindJob("ended"), nullptr);
  EXPECT_EQ(model->FindJobAny("rejected")->state(), v1::JOB_STATE_REJECTED);
}

// The writer builds ledger rows from records without building a JobInfo
// (the ended row from the record readers had, the spec from its kept bytes),
// and hands the records it made to Update: the record's own fields must be
// those of its JobInfo in both forms (compact, and whole for a rejected job),
// and an Update given the records must read as one that made them itself.
TEST_F(ReadModelTest, ARecordsFieldsAndSpecBytesAreThoseOfItsJobInfo) {
  Submit("admitted", "research", 300);
  Submit("queued", "ops", 900);
  now_ += 5000;
  Submit("rejected", "no-such-team", 1);
  auto model = ReadModel::Build(*broker_, 1);
  ReadModel::Records made;
  for (const std::string id : {"admitted", "queued", "rejected"}) {
    made[id] = model->MakeRecord(*broker_->GetJob(id));
  }
  auto updated = ReadModel::Update(*model, *broker_, 2, {"admitted", "queued", "rejected"}, false, &made);
  for (const auto* m : {model.get(), updated.get()}) {
    for (const std::string id : {"admitted", "queued", "rejected"}) {
      const JobRecord* r = m->FindRecord(id);
      ASSERT_NE(r, nullptr) << id;
      const v1::JobInfo info = r->ToInfo(id);
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(info, ToJobInfo(*broker_->GetJob(id), nullptr)))
          << id;
      EXPECT_EQ(r->team(), info.team()) << id;
      EXPECT_EQ(r->cluster(), info.cluster()) << id;
      EXPECT_EQ(r->state(), info.state()) << id;
      EXPECT_EQ(r->priority(), info.priority()) << id;
      EXPECT_EQ(r->created_at_ms(), info.created_at_ms()) << id;
      EXPECT_EQ(r->admitted_at_ms(), info.admitted_at_ms()) << id;
      v1::JobSpec spec;
      ASSERT_TRUE(spec.ParseFromString(r->SerializedSpec())) << id;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(spec, info.spec())) << id;
    }
  }
  EXPECT_GT(model->FindRecord("rejected")->created_at_ms(), 1'000'000);
  EXPECT_GT(model->FindRecord("admitted")->admitted_at_ms(), 0);
  EXPECT_EQ(updated->FindRecord("queued"), made["queued"].get());  // taken, not made again
}

TEST_F(ReadModelTest, TeamWithFiguresIsTheTeamAsTeamsFillsIt) {
  Submit("r1", "research", 300);  // borrows 100 of org's idle guarantee
  Submit("o1", "ops", 10);
  auto model = ReadModel::Build(*broker_, 1);
  const std::vector<v1::TeamInfo> teams = model->Teams();
  ASSERT_EQ(teams.size(), 4u);
  for (const auto& t : teams) {
    auto one = model->TeamWithFigures(t.name());
    ASSERT_TRUE(one.has_value()) << t.name();
    EXPECT_EQ(one->DebugString(), t.DebugString());
  }
  EXPECT_EQ(model->TeamWithFigures("research")->resources(0).borrowed(), 100);
  EXPECT_EQ(model->TeamWithFigures("org")->running_jobs(), 1);  // its subtree's
  EXPECT_FALSE(model->TeamWithFigures("nobody").has_value());
}

TEST_F(ReadModelTest, JobsAfterPagesThroughEveryJobInIdOrder) {
  for (int i = 0; i < 250; ++i) Submit(absl::StrCat("p", 1000 + i), "ops", 1);
  auto model = ReadModel::Build(*broker_, 1);
  std::vector<std::string> seen;
  std::string after;
  for (;;) {
    auto page = model->JobsAfter("", v1::JOB_STATE_UNSPECIFIED, after, 64);
    if (page.empty()) break;
    for (const auto& j : page) seen.push_back(j->job());
    after = page.back()->job();
  }
  ASSERT_EQ(seen.size(), 250u);
  for (int i = 0; i < 250; ++i) EXPECT_EQ(seen[i], absl::StrCat("p", 1000 + i));
}

}  // namespace
}  // namespace tidegate::service
