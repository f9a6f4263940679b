#include "broker/core/tide.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "api/yaml_loader.h"
#include "broker/core/broker.h"
#include "broker/core/config.h"
#include "google/protobuf/util/message_differencer.h"

namespace tidegate::core {
namespace {

// 2026-01-05 is a Monday.
Time At(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) << err;
  return absl::ToUnixMillis(t);
}

v1::Config Parse(const std::string& yaml) {
  v1::Config c;
  auto st = api::LoadYamlString(yaml, "test.yaml", &c);
  EXPECT_TRUE(st.ok()) << st;
  return c;
}

const char kServing[] = R"(
clusters: [{name: a, capacity: {gpu: 16}}]
teams:
  - name: serving
    quota: {gpu: {guaranteed: 4, borrow_limit: 2}}
    tide:
      - days: [mon, tue, wed, thu, fri]
        from: "08:00"
        to: "20:00"
        timezone: UTC
        quota: {gpu: {guaranteed: 12, lend_limit: 0}}
  - name: training
    quota: {gpu: {guaranteed: 4}}
)";

// The config's rules resolved, as CompileConfig resolves them.
TideCalendar Calendar(const v1::Config& c) {
  absl::StatusOr<TideCalendar> tide = ResolveTide(c);
  EXPECT_TRUE(tide.ok()) << tide.status();
  return tide.ok() ? *std::move(tide) : TideCalendar{};
}

int64_t Guarantee(const v1::Config& c, const std::string& team) {
  for (const auto& t : c.teams()) {
    if (t.name() == team) return t.quota().at("gpu").guaranteed();
  }
  return -1;
}

TEST(TideTest, RuleOverridesBaseFieldByFieldInsideItsWindow) {
  const v1::Config base = Parse(kServing);
  const v1::Config day = EffectiveConfig(base, Calendar(base), At("2026-01-05T08:00:00Z"));
  EXPECT_EQ(Guarantee(day, "serving"), 12);
  EXPECT_EQ(day.teams(0).quota().at("gpu").lend_limit(), 0);
  EXPECT_EQ(day.teams(0).quota().at("gpu").borrow_limit(), 2);  // kept from the base.
  EXPECT_EQ(Guarantee(EffectiveConfig(base, Calendar(base), At("2026-01-05T07:59:59Z")), "serving"), 4);
  EXPECT_EQ(Guarantee(EffectiveConfig(base, Calendar(base), At("2026-01-05T20:00:00Z")), "serving"), 4);  // `to` is exclusive.
  EXPECT_EQ(Guarantee(EffectiveConfig(base, Calendar(base), At("2026-01-10T12:00:00Z")), "serving"), 4);  // Saturday.
}

TEST(TideTest, NextBoundaryWalksTheWeek) {
  const v1::Config base = Parse(kServing);
  EXPECT_EQ(NextTideBoundary(Calendar(base), At("2026-01-05T00:00:00Z")), At("2026-01-05T08:00:00Z"));
  EXPECT_EQ(NextTideBoundary(Calendar(base), At("2026-01-05T08:00:00Z")), At("2026-01-05T20:00:00Z"));
  // Friday evening: the next change is Monday morning.
  EXPECT_EQ(NextTideBoundary(Calendar(base), At("2026-01-09T20:00:00Z")), At("2026-01-12T08:00:00Z"));
  EXPECT_FALSE(NextTideBoundary(Calendar(Parse("clusters: [{name: a, capacity: {gpu: 1}}]\nteams: [{name: t}]\n")), 0));
}

TEST(TideTest, WindowPastMidnightAndUntil2400) {
  v1::Config base = Parse(kServing);
  v1::TideRule* night = base.mutable_teams(1)->add_tide();
  night->add_days(v1::WEEKDAY_FRI);
  night->set_from("22:00");
  night->set_to("06:00");  // into Saturday.
  (*night->mutable_quota())["gpu"].set_guaranteed(10);
  EXPECT_EQ(Guarantee(EffectiveConfig(base, Calendar(base), At("2026-01-10T05:59:00Z")), "training"), 10);
  EXPECT_EQ(Guarantee(EffectiveConfig(base, Calendar(base), At("2026-01-10T06:00:00Z")), "training"), 4);
  night->set_to("24:00");
  EXPECT_TRUE(ResolveTide(base).ok());
  EXPECT_EQ(Guarantee(EffectiveConfig(base, Calendar(base), At("2026-01-09T23:59:00Z")), "training"), 10);
  EXPECT_EQ(NextTeamTideBoundary(Calendar(base).teams[1], At("2026-01-09T22:00:00Z")), At("2026-01-10T00:00:00Z"));
}

TEST(TideTest, TimeZoneShiftsTheWindow) {
  v1::Config base = Parse(kServing);
  base.mutable_teams(0)->mutable_tide(0)->set_timezone("Europe/Paris");  // UTC+1 in January.
  EXPECT_EQ(NextTideBoundary(Calendar(base), At("2026-01-05T00:00:00Z")), At("2026-01-05T07:00:00Z"));
}

// Adds a rule giving `team` `guaranteed` GPUs on `days` from `from` to `to`.
void AddRule(v1::Config* config, int team, const std::vector<v1::Weekday>& days, const char* from, const char* to,
             const char* zone, int64_t guaranteed) {
  v1::TideRule* r = config->mutable_teams(team)->add_tide();
  for (auto d : days) r->add_days(d);
  r->set_from(from);
  r->set_to(to);
  r->set_timezone(zone);
  (*r->mutable_quota())["gpu"].set_guaranteed(guaranteed);
}

// The config with the quotas of the rules `index` finds active at `t`.
v1::Config FromIndex(const v1::Config& base, const TideCalendar& calendar, TideIndex& index, Time t) {
  v1::Config out = base;
  const auto quotas = ActiveQuotas(base, index.ActiveRules(calendar, t));
  for (int i = 0; i < base.teams_size(); ++i) {
    if (quotas[i]) *out.mutable_teams(i)->mutable_quota() = *quotas[i];
  }
  return out;
}

// The index a tide boundary uses answers exactly as the scans do, in zones
// with daylight saving (windows inside the skipped and the repeated hour,
// past midnight, until 24:00), for times asked out of order as the core asks
// them (a boundary, the instant before it, the cursors). And the compile of
// the base config under the active rules' quotas is the compile of the
// effective config.
TEST(TideTest, IndexAnswersAsTheScansDo) {
  v1::Config base = Parse(kServing);
  auto add = [&](int team, std::vector<v1::Weekday> days, const char* from, const char* to, const char* zone,
                 int64_t g) { AddRule(&base, team, days, from, to, zone, g); };
  add(1, {v1::WEEKDAY_SUN}, "02:30", "03:30", "Europe/Berlin", 5);  // 2026-03-29: 02:30 does not exist.
  add(1, {v1::WEEKDAY_SUN}, "02:15", "02:45", "Europe/Berlin", 6);  // 2026-10-25: 02:15 comes twice.
  add(1, {v1::WEEKDAY_SAT, v1::WEEKDAY_SUN}, "22:00", "06:00", "America/New_York", 7);
  add(0, {v1::WEEKDAY_FRI}, "18:00", "24:00", "Australia/Lord_Howe", 8);  // a 30-minute shift.
  add(0, {v1::WEEKDAY_MON, v1::WEEKDAY_THU}, "00:00", "01:00", "UTC", 9);
  const TideCalendar calendar = Calendar(base);
  TideIndex index;
  uint64_t rng = 12345;
  for (const char* start : {"2026-03-06T00:00:00Z", "2026-03-27T00:00:00Z", "2026-10-23T00:00:00Z"}) {
    Time t = At(start);
    for (int step = 0; step < 400; ++step) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      // Mostly forward by up to 3 h, sometimes back by up to a day, on the
      // minute or off it.
      const int64_t jump = static_cast<int64_t>(rng >> 33) % (3 * 3600 * 1000);
      t += (rng >> 20) % 8 == 0 ? -jump * 8 : jump;
      // Also both sides of the next boundary: the index keeps its answers
      // per interval between boundaries.
      const Time b = NextTideBoundary(calendar, t).value_or(t);
      for (Time q : {t, t - 1, b - 1, b, t}) {
        EXPECT_EQ(index.NextBoundary(calendar, q), NextTideBoundary(calendar, q)) << q;
        const v1::Config from_index = FromIndex(base, calendar, index, q);
        const auto quotas = ActiveQuotas(base, index.ActiveRules(calendar, q));
        const v1::Config effective = EffectiveConfig(base, calendar, q);
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equivalent(from_index, effective)) << q;
        auto compiled = CompileConfig(base, calendar, quotas);
        auto expected = CompileConfig(effective, calendar);
        ASSERT_TRUE(compiled.ok() && expected.ok());
        EXPECT_EQ(compiled->resources, expected->resources);
        for (size_t n = 0; n < expected->nodes.size(); ++n) {
          EXPECT_EQ(compiled->nodes[n].guaranteed, expected->nodes[n].guaranteed) << q;
          EXPECT_EQ(compiled->nodes[n].potential, expected->nodes[n].potential) << q;
        }
      }
    }
  }
}

// The index keeps the windows of the day it was asked about before and swaps
// them back when time returns to it, as it does around a boundary at
// midnight. An overnight window started the day before shows whether the
// swapped-in windows and boundaries are that day's own; a sparse calendar,
// whether answers kept for one day's windows are asked again on another.
TEST(TideTest, IndexAnswersAsTheScansDoWhenTimeGoesBack) {
  auto expect_as_scans = [](const v1::Config& base, std::initializer_list<const char*> instants) {
    const TideCalendar calendar = Calendar(base);
    TideIndex index;
    for (const char* at : instants) {
      const Time q = At(at);
      EXPECT_EQ(index.NextBoundary(calendar, q), NextTideBoundary(calendar, q)) << at;
      EXPECT_EQ(Guarantee(EffectiveConfig(base, calendar, q), "training"),
                Guarantee(FromIndex(base, calendar, index, q), "training"))
          << at;
    }
  };
  // Sunday 2026-01-11 inside Saturday's window, Monday's midnight, and back.
  v1::Config overnight = Parse(kServing);
  AddRule(&overnight, 1, {v1::WEEKDAY_SAT, v1::WEEKDAY_SUN}, "22:00", "06:00", "UTC", 9);
  expect_as_scans(overnight, {"2026-01-11T03:00:00Z", "2026-01-12T00:00:00Z", "2026-01-11T03:00:00Z",
                              "2026-01-11T23:59:59.999Z", "2026-01-12T00:00:00Z", "2026-01-11T05:59:59.999Z",
                              "2026-01-12T05:59:59.999Z", "2026-01-11T06:00:00Z"});
  // A calendar of one weekly rule leaves intervals without a boundary that
  // span days: an answer kept for one day's windows must not serve another's.
  v1::Config sparse = Parse(kServing);
  sparse.mutable_teams(0)->clear_tide();
  AddRule(&sparse, 1, {v1::WEEKDAY_FRI}, "00:00", "24:00", "UTC", 7);
  expect_as_scans(sparse, {"2026-01-11T12:00:00Z", "2026-01-09T12:00:00Z", "2026-01-11T12:00:00Z"});
}

// Every field of two compiles, so a patch that forgets one shows here.
void ExpectSameCompile(const CompiledConfig& got, const CompiledConfig& want, const std::string& at) {
  EXPECT_EQ(got.resources, want.resources) << at;
  EXPECT_EQ(got.resource_index, want.resource_index) << at;
  EXPECT_EQ(got.is_gpu, want.is_gpu) << at;
  ASSERT_EQ(got.clusters.size(), want.clusters.size()) << at;
  for (size_t k = 0; k < want.clusters.size(); ++k) {
    EXPECT_EQ(got.clusters[k].name, want.clusters[k].name) << at;
    EXPECT_EQ(got.clusters[k].capacity, want.clusters[k].capacity) << at;
  }
  EXPECT_EQ(got.cluster_index, want.cluster_index) << at;
  EXPECT_EQ(got.node_index, want.node_index) << at;
  EXPECT_EQ(got.warnings, want.warnings) << at;
  EXPECT_EQ(got.policy.fair_sharing, want.policy.fair_sharing) << at;
  EXPECT_EQ(got.tide.teams.size(), want.tide.teams.size()) << at;
  ASSERT_EQ(got.nodes.size(), want.nodes.size()) << at;
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    const NodeConfig& g = got.nodes[i];
    const NodeConfig& w = want.nodes[i];
    const std::string where = at + " node " + w.name;
    EXPECT_EQ(g.name, w.name) << where;
    EXPECT_EQ(g.parent, w.parent) << where;
    EXPECT_EQ(g.children, w.children) << where;
    EXPECT_EQ(g.path, w.path) << where;
    EXPECT_EQ(g.leaf, w.leaf) << where;
    EXPECT_TRUE(g.weight == w.weight) << where;
    EXPECT_EQ(g.policy.within_team, w.policy.within_team) << where;
    EXPECT_EQ(g.guaranteed, w.guaranteed) << where;
    EXPECT_EQ(g.borrow_limit, w.borrow_limit) << where;
    EXPECT_EQ(g.lend_limit, w.lend_limit) << where;
    EXPECT_EQ(g.private_part, w.private_part) << where;
    EXPECT_EQ(g.potential, w.potential) << where;
    EXPECT_EQ(g.lendable, w.lendable) << where;
    EXPECT_EQ(g.share_resource, w.share_resource) << where;
  }
}

// A boundary patches the compile in force for the teams whose rules change
// (PatchQuota) instead of compiling every team: over a week of a calendar's
// boundaries the patched quota, chained from boundary to boundary, is the
// full compile's. The tree has inner teams with and without a guarantee of
// their own and with a lend limit, rules on an inner team, a rule naming a
// resource the base quota does not, windows past midnight, two zones, and a
// rule pushing the top-level guarantees over capacity (a warning).
TEST(TideTest, PatchedQuotaIsTheFullCompileAtEveryBoundary) {
  const v1::Config base = Parse(R"(
clusters: [{name: a, capacity: {gpu: 40, cpu: 64}}]
teams:
  - name: org
    quota: {gpu: {guaranteed: 20, lend_limit: 10}}
    tide:
      - {days: [tue], from: "10:00", to: "14:00", timezone: UTC, quota: {gpu: {guaranteed: 24}}}
  - name: org/a
    parent: org
    quota: {gpu: {guaranteed: 6, borrow_limit: 4}}
    tide:
      - {days: [mon, tue, wed, thu, fri], from: "08:00", to: "18:00", timezone: UTC, quota: {gpu: {guaranteed: 10}}}
      - {days: [sun], from: "00:00", to: "24:00", timezone: UTC, quota: {gpu: {lend_limit: 0}, cpu: {guaranteed: 8}}}
  - name: org/b
    parent: org
    quota: {gpu: {guaranteed: 4, lend_limit: 2}}
    tide:
      - {days: [mon, wed, fri, sat], from: "12:00", to: "02:00", timezone: UTC, quota: {gpu: {guaranteed: 8, borrow_limit: 0}}}
  - name: lab
  - name: lab/x
    parent: lab
    quota: {gpu: {guaranteed: 5}}
    tide:
      - {days: [mon, tue, wed, thu, fri], from: "09:00", to: "17:00", timezone: Europe/Berlin, quota: {gpu: {guaranteed: 7, lend_limit: 1}}}
  - name: lab/y
    parent: lab
    tide:
      - {days: [mon, tue, wed, thu, fri], from: "20:00", to: "22:00", timezone: America/New_York, quota: {gpu: {guaranteed: 3}}}
  - name: solo
    quota: {gpu: {guaranteed: 2}}
    tide:
      - {days: [sat], from: "06:00", to: "20:00", timezone: UTC, quota: {gpu: {guaranteed: 20}}}
)");
  const TideCalendar calendar = Calendar(base);
  TideIndex index;
  TideActive was = index.ActiveRules(calendar, At("2026-01-05T00:00:00Z"));
  auto patched = CompileConfig(base, calendar, ActiveQuotas(base, was));
  ASSERT_TRUE(patched.ok()) << patched.status();
  int boundaries = 0, with_warning = 0;
  for (auto b = index.NextBoundary(calendar, At("2026-01-05T00:00:00Z")); b && *b < At("2026-01-13T00:00:00Z");
       b = index.NextBoundary(calendar, *b)) {
    const TideActive active = index.ActiveRules(calendar, *b);
    std::vector<int> changed;
    for (size_t i = 0; i < active.size(); ++i) {
      if (active[i] != was[i]) changed.push_back(static_cast<int>(i));
    }
    const auto quotas = ActiveQuotas(base, active);
    patched = PatchQuota(*patched, base, quotas, changed);
    const auto full = CompileConfig(base, calendar, quotas);
    ASSERT_TRUE(patched.ok() && full.ok()) << *b;
    ExpectSameCompile(*patched, *full, absl::StrCat("boundary ", *b));
    ++boundaries;
    if (!full->warnings.empty()) ++with_warning;
    was = active;
  }
  EXPECT_GE(boundaries, 30);
  EXPECT_GT(with_warning, 0);
}

// A patch to an invalid quota fails, as the full compile does (which then
// names the check).
TEST(TideTest, PatchToAnInvalidQuotaFails) {
  const v1::Config base = Parse(R"(
clusters: [{name: a, capacity: {gpu: 40}}]
teams:
  - name: org
    quota: {gpu: {guaranteed: 10}}
  - name: org/a
    parent: org
    quota: {gpu: {guaranteed: 6}}
    tide:
      - {days: [mon], from: "08:00", to: "18:00", timezone: UTC, quota: {gpu: {guaranteed: 12}}}
)");
  const TideCalendar calendar = Calendar(base);
  TideIndex index;
  const TideActive night = index.ActiveRules(calendar, At("2026-01-05T00:00:00Z"));
  const TideActive day = index.ActiveRules(calendar, At("2026-01-05T08:00:00Z"));
  auto in_force = CompileConfig(base, calendar, ActiveQuotas(base, night));
  ASSERT_TRUE(in_force.ok());
  EXPECT_FALSE(PatchQuota(*in_force, base, ActiveQuotas(base, day), {1}).ok());
  auto full = CompileConfig(base, calendar, ActiveQuotas(base, day));
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("exceed its own guaranteed 10"), std::string::npos) << full.status();
}

TEST(TideTest, BadRulesNameTeamRuleFieldAndValue) {
  struct Case {
    void (*mutate)(v1::TideRule*);
    std::string want;
  };
  const Case cases[] = {
      {[](v1::TideRule* r) { r->set_from("8:00"); }, "team 'serving' tide[0].from: '8:00'"},
      {[](v1::TideRule* r) { r->set_to("24:30"); }, "tide[0].to: '24:30'"},
      {[](v1::TideRule* r) { r->set_to("08:00"); }, "tide[0].to: '08:00' equals from"},
      {[](v1::TideRule* r) { r->set_timezone("Mars/Olympus"); }, "tide[0].timezone: 'Mars/Olympus'"},
      {[](v1::TideRule* r) { r->clear_days(); }, "tide[0].days"},
      {[](v1::TideRule* r) { (*r->mutable_quota())["gpu"].set_guaranteed(-1); }, "tide[0].quota.gpu.guaranteed: -1"},
  };
  for (const Case& c : cases) {
    v1::Config base = Parse(kServing);
    c.mutate(base.mutable_teams(0)->mutable_tide(0));
    const absl::Status st = ResolveTide(base).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.want;
    EXPECT_NE(std::string(st.message()).find(c.want), std::string::npos) << st;
  }
}

// Zones are resolved once, when the config is compiled: the compiled config
// carries them, so the schedule reads no zoneinfo afterwards.
TEST(TideTest, ACompiledConfigCarriesItsResolvedTimeZones) {
  v1::Config base = Parse(kServing);
  base.mutable_teams(0)->mutable_tide(0)->set_timezone("Europe/Berlin");
  const absl::StatusOr<CompiledConfig> compiled = CompileConfig(base);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->tide.teams.size(), 2u);
  ASSERT_EQ(compiled->tide.teams[0].size(), 1u);
  EXPECT_EQ(compiled->tide.teams[0][0].zone.name(), "Europe/Berlin");
  EXPECT_EQ(compiled->tide.teams[0][0].from_minute, 8 * 60);
  EXPECT_TRUE(compiled->tide.teams[1].empty());
  // 08:00 in Berlin is 07:00 UTC in winter.
  EXPECT_EQ(NextTideBoundary(compiled->tide, At("2026-01-05T00:00:00Z")), At("2026-01-05T07:00:00Z"));
}

// A job the guard holds back (it fits now, not under the coming quota) failed
// no victim search, so under least-lost-work order a later instant need not
// retry it. A restored core must know that too: guessing a failed search
// retries it, and it is then no longer parked as in the original.
TEST(TideTest, ARestoredCoreKeepsAJobTheGuardHoldsBackParked) {
  const Time lead = At("2026-01-05T07:50:00Z");
  auto original = Broker::Create(Parse(kServing), lead - 1000);
  ASSERT_TRUE(original.ok()) << original.status();
  internal::v1::Command submit;
  submit.mutable_submit()->set_job("t1");
  submit.mutable_submit()->set_team("training");
  (*submit.mutable_submit()->mutable_per_replica())["gpu"] = 6;  // the coming quota leaves training 4.
  internal::v1::Command tick;
  tick.mutable_tick();
  (*original)->Apply(tick, lead);
  (*original)->Apply(submit, lead + 1000);
  ASSERT_EQ((*original)->GetJob("t1")->state, v1::JOB_STATE_QUEUED);
  ASSERT_NE((*original)->GetJob("t1")->reason.find("tide"), std::string::npos);
  auto copy = Broker::Restore((*original)->Snapshot());
  ASSERT_TRUE(copy.ok()) << copy.status();
  const Time later = lead + 100'000;
  EXPECT_EQ((*original)->Apply(tick, later).size(), (*copy)->Apply(tick, later).size());
  const internal::v1::CoreSnapshot a = (*original)->Snapshot(), b = (*copy)->Snapshot();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a, b))
      << a.ShortDebugString() << "\n" << b.ShortDebugString();
}

// What `tidegate job` says of the tide's two effects, with the numbers: a
// borrower drained at the lead names the rise and its deadline; a job the
// guard holds back names the coming quota and what it leaves the team.
TEST(TideTest, TideReasonsStateTheChangeTheDeadlineAndTheNumbers) {
  const Time lead = At("2026-01-05T07:50:00Z");
  auto broker = Broker::Create(Parse(kServing), lead - 10'000);
  ASSERT_TRUE(broker.ok()) << broker.status();
  internal::v1::Command big;
  big.mutable_submit()->set_job("big");
  big.mutable_submit()->set_team("training");
  big.mutable_submit()->set_grace_s(30);
  (*big.mutable_submit()->mutable_per_replica())["gpu"] = 10;
  (*broker)->Apply(big, lead - 5'000);
  ASSERT_EQ((*broker)->GetJob("big")->state, v1::JOB_STATE_ADMITTED);
  internal::v1::Command tick;
  tick.mutable_tick();
  (*broker)->Apply(tick, lead);
  ASSERT_EQ((*broker)->GetJob("big")->state, v1::JOB_STATE_DRAINING);
  EXPECT_EQ((*broker)->GetJob("big")->reason,
            "draining for tide:serving (tide: its quota rises at 2026-01-05T08:00:00Z) until "
            "2026-01-05T07:50:30Z at the latest");
  internal::v1::Command small;
  small.mutable_submit()->set_job("t1");
  small.mutable_submit()->set_team("training");
  (*small.mutable_submit()->mutable_per_replica())["gpu"] = 6;
  (*broker)->Apply(small, lead + 40'000);  // big has left: 16 free now, training keeps 4 at 08:00.
  ASSERT_EQ((*broker)->GetJob("t1")->state, v1::JOB_STATE_QUEUED);
  EXPECT_EQ((*broker)->GetJob("t1")->reason,
            "tide: the job needs 6 gpu; under the quota coming at 2026-01-05T08:00:00Z training can take 4 more "
            "(training then: 4 guaranteed); only what the coming quota also holds is admitted before it; it waits "
            "for the change or for jobs to end");
}

// GetTeam reports the quota in force: a team without rules its base entries,
// one inside its rule's window the rule's, and when and to what it changes.
TEST(TideTest, GetTeamReportsTheQuotaInForce) {
  auto broker = Broker::Create(Parse(kServing), At("2026-01-05T12:00:00Z"));
  ASSERT_TRUE(broker.ok()) << broker.status();
  const TeamView training = *(*broker)->GetTeam("training");
  ASSERT_EQ(training.quota.size(), 1u);
  EXPECT_EQ(training.quota.at("gpu").guaranteed(), 4);
  EXPECT_TRUE(training.tide.empty());
  EXPECT_EQ(training.next_tide_change, -1);
  EXPECT_TRUE(training.next_tide_quota.empty());
  const TeamView serving = *(*broker)->GetTeam("serving");
  EXPECT_EQ(serving.quota.at("gpu").guaranteed(), 12);
  EXPECT_EQ(serving.quota.at("gpu").borrow_limit(), 2);
  EXPECT_EQ(serving.tide.size(), 1u);
  EXPECT_EQ(serving.next_tide_change, At("2026-01-05T20:00:00Z"));
  EXPECT_EQ(serving.next_tide_quota.at("gpu").guaranteed(), 4);
}

}  // namespace
}  // namespace tidegate::core
