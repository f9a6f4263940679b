// ReadModel as a unit, over a real core: what a model holds, that an update
// leaves the model it came from as it was (readers may still hold it) and
// shares what did not change, and the team figures readers see.
#include "broker/service/read_model.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/service/read_model_teams.h"
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

TEST_F(ReadModelTest, TeamWithFiguresFollowsUpdatesAndOlderModels) {
  // The one-team figures come from a cache kept along the lineage: after
  // updates, and when an older model is read after a newer one, they are
  // still the figures Teams() computes for that model.
  std::vector<std::shared_ptr<const ReadModel>> models{ReadModel::Build(*broker_, 1)};
  const std::vector<std::pair<std::string, int64_t>> jobs = {
      {"research", 300}, {"ops", 10}, {"training", 250}, {"ops", 200}, {"research", 50}};
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto touched = Submit(absl::StrCat("j", i), jobs[i].first, jobs[i].second);
    models.push_back(ReadModel::Update(*models.back(), *broker_, static_cast<int64_t>(i) + 2, touched, false));
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t m = models.size(); m-- > 0;) {  // newest first, then back again
      for (const auto& t : models[m]->Teams()) {
        auto one = models[m]->TeamWithFigures(t.name());
        ASSERT_TRUE(one.has_value());
        EXPECT_EQ(one->DebugString(), t.DebugString()) << "model " << m;
      }
    }
  }
  EXPECT_EQ(models.back()->TeamWithFigures("ops")->resources(0).borrowed(), 110);
}

// Random teams in chunks of 4, as ReadModel keeps them.
class TeamFiguresCacheTest : public ::testing::Test {
 protected:
  std::shared_ptr<v1::TeamInfo> RandomTeam(const std::string& name, const std::string& parent, bool leaf) {
    auto t = std::make_shared<v1::TeamInfo>();
    t->set_name(name);
    t->set_parent(parent);
    t->set_leaf(leaf);
    for (const char* resource : {"gpu", "cpu"}) {
      if (std::string(resource) == "cpu" && Uniform(0, 2) > 0) continue;
      v1::TeamResource* r = t->add_resources();
      r->set_resource(resource);
      r->set_guaranteed(Uniform(0, leaf ? 20 : 60));
      if (Uniform(0, 2) == 0) r->set_lend_limit(Uniform(0, 15));
    }
    Churn(t.get());
    return t;
  }
  // New use: what a batch changes.
  void Churn(v1::TeamInfo* t) {
    if (!t->leaf()) return;
    t->set_running_jobs(Uniform(0, 5));
    t->set_queued_jobs(Uniform(0, 5));
    for (v1::TeamResource& r : *t->mutable_resources()) {
      r.set_used(Uniform(0, 30));
      r.set_queued(Uniform(0, 9));
    }
  }
  static TeamChunks Chunk(const std::vector<std::shared_ptr<const v1::TeamInfo>>& teams) {
    TeamChunks chunks;
    for (size_t i = 0; i < teams.size(); i += kChunk) {
      chunks.push_back(std::make_shared<const std::vector<std::shared_ptr<const v1::TeamInfo>>>(
          teams.begin() + i, teams.begin() + std::min(teams.size(), i + kChunk)));
    }
    return chunks;
  }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  static constexpr size_t kChunk = 4;
  std::mt19937 rng_{20261126};
};

TEST_F(TeamFiguresCacheTest, OneTeamsFiguresAreComputeTeamFiguresOfThatModel) {
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    auto config = std::make_shared<v1::Config>();
    (*config->add_clusters()->mutable_capacity())["gpu"] = Uniform(0, 500);
    const int n = Uniform(1, 30);
    std::vector<std::shared_ptr<const v1::TeamInfo>> teams;
    std::vector<std::string> inner;
    for (int i = 0; i < n; ++i) {
      const std::string name = absl::StrCat("t", i);
      const bool leaf = Uniform(0, 3) > 0;
      teams.push_back(RandomTeam(name, inner.empty() || Uniform(0, 3) == 0 ? "" : inner[Uniform(0, inner.size() - 1)], leaf));
      if (!leaf) inner.push_back(name);
    }
    struct Model {
      std::vector<std::shared_ptr<const v1::TeamInfo>> teams;
      TeamChunks chunks;
      std::shared_ptr<const void> identity;
    };
    std::vector<Model> models{{teams, Chunk(teams), std::make_shared<int>(0)}};
    TeamFiguresCache cache;
    for (int batch = 0; batch < 30; ++batch) {
      SCOPED_TRACE(batch);
      Model next = models.back();
      if (Uniform(0, 9) == 0) next.identity = std::make_shared<int>(batch);  // a new team list
      for (int k = Uniform(1, 3); k > 0; --k) {
        const size_t i = static_cast<size_t>(Uniform(0, n - 1));
        auto changed = std::make_shared<v1::TeamInfo>(*next.teams[i]);
        Churn(changed.get());
        if (Uniform(0, 5) == 0) changed->mutable_resources(0)->set_guaranteed(Uniform(0, 20));
        next.teams[i] = changed;
        auto chunk = std::make_shared<std::vector<std::shared_ptr<const v1::TeamInfo>>>(*next.chunks[i / kChunk]);
        (*chunk)[i % kChunk] = changed;
        next.chunks[i / kChunk] = chunk;
      }
      models.push_back(next);
      // The newest model, then one at random (often older than where the cache is).
      for (const Model* m : {&models.back(), &models[Uniform(0, models.size() - 1)]}) {
        std::vector<const v1::TeamInfo*> infos;
        for (const auto& t : m->teams) infos.push_back(t.get());
        const std::vector<TeamFigures> want = ComputeTeamFigures(*config, infos);
        for (int probe = 0; probe < 3; ++probe) {
          const size_t i = static_cast<size_t>(Uniform(0, n - 1));
          const TeamFigures got = cache.Figures(config, m->identity, m->chunks, kChunk, m->teams.size(), i);
          SCOPED_TRACE(m->teams[i]->name());
          EXPECT_EQ(got.inner, want[i].inner);
          EXPECT_EQ(got.running_jobs, want[i].running_jobs);
          EXPECT_EQ(got.queued_jobs, want[i].queued_jobs);
          ASSERT_EQ(got.resources.size(), want[i].resources.size());
          for (size_t k = 0; k < got.resources.size(); ++k) {
            const TeamFigures::Resource &a = got.resources[k], &b = want[i].resources[k];
            EXPECT_EQ(std::tie(a.queued, a.known, a.used, a.private_idle, a.borrowed, a.lent),
                      std::tie(b.queued, b.known, b.used, b.private_idle, b.borrowed, b.lent));
          }
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
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
