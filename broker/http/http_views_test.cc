// Unit tests of the HTTP endpoint's pure parts: the Prometheus exposition
// format, health verdicts, escaping in the web view.
#include <memory>
#include <tuple>

#include "broker/core/broker.h"
#include "broker/core/test_support.h"
#include "broker/http/broker_metrics.h"
#include "broker/http/exposition.h"
#include "broker/http/health.h"
#include "broker/http/html.h"
#include "broker/http/views.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Exposition, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue(R"(a\b"c)"
                             "\n"
                             "d"),
            R"(a\\b\"c\nd)");
  EXPECT_EQ(EscapeLabelValue("org/ml-é"), "org/ml-é");  // UTF-8 as is
}

TEST(Exposition, HelpEscapesBackslashAndNewlineButNotQuotes) {
  EXPECT_EQ(EscapeHelp("a\\b\n\"c\""), "a\\\\b\\n\"c\"");
}

TEST(Exposition, ValuesAreIntegersWhenWholeAndRoundTripOtherwise) {
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-2), "-2");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(0.0025), "0.0025");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
}

TEST(Exposition, FamiliesCarryHelpTypeAndEscapedLabels) {
  ExpositionWriter w;
  w.Family("tidegate_decisions_total", ExpositionWriter::Type::kCounter, "Decisions.\nBy type.");
  w.Sample("tidegate_decisions_total", {{"type", "admit"}, {"team", "a\"b"}}, 2);
  w.Sample("tidegate_up", {}, 1);
  EXPECT_EQ(w.text(),
            "# HELP tidegate_decisions_total Decisions.\\nBy type.\n"
            "# TYPE tidegate_decisions_total counter\n"
            "tidegate_decisions_total{type=\"admit\",team=\"a\\\"b\"} 2\n"
            "tidegate_up 1\n");
}

TEST(Exposition, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Histogram h({0.5, 1, 5});
  h.Observe(0.25);  // <= 0.5
  h.Observe(0.5);   // <= 0.5 (bounds are inclusive)
  h.Observe(3);     // <= 5
  h.Observe(7);     // +Inf only
  ExpositionWriter w;
  w.HistogramSamples("x_seconds", {{"k", "v"}}, h);
  EXPECT_EQ(w.text(),
            "x_seconds_bucket{k=\"v\",le=\"0.5\"} 2\n"
            "x_seconds_bucket{k=\"v\",le=\"1\"} 2\n"
            "x_seconds_bucket{k=\"v\",le=\"5\"} 3\n"
            "x_seconds_bucket{k=\"v\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{k=\"v\"} 10.75\n"
            "x_seconds_count{k=\"v\"} 4\n");
}

TEST(Health, AnIdleWriterIsAliveUntilTwoTicksAnd30SecondsPass) {
  HealthInputs in;
  in.tick_ms = 10000;
  in.writer_wake_ms = 1000000;
  in.now_ms = 1000000 + 50000;  // exactly 2 × 10 s + 30 s
  EXPECT_TRUE(Liveness(in).ok);
  in.now_ms += 1;
  EXPECT_FALSE(Liveness(in).ok);
  EXPECT_THAT(Liveness(in).text, HasSubstr("has not woken for 50 s"));
  in.writer_wake_ms = 0;
  EXPECT_EQ(Liveness(in).text, "the writer thread is not running");
}

TEST(Health, ReadinessNeedsAWritableLedger) {
  HealthInputs in;
  in.now_ms = in.writer_wake_ms = 5000;
  EXPECT_TRUE(Readiness(in).ok);
  in.ledger = absl::UnavailableError("the ledger cannot be written: disk I/O error");
  EXPECT_FALSE(Readiness(in).ok);
  EXPECT_EQ(Readiness(in).text, "the ledger cannot be written: disk I/O error");
  EXPECT_TRUE(Liveness(in).ok);  // a read-only ledger is not a reason to restart
}

TEST(Health, APostgresLeaderSaysItsEpochAndAStandbyIsReadyWhileItReachesTheDatabase) {
  HealthInputs in{100000, 99000, 10000, absl::OkStatus(), 7};
  EXPECT_EQ(Readiness(in).text, "ok: leader, epoch 7");
  in.ledger = absl::UnavailableError("the ledger cannot be written: fenced");
  EXPECT_FALSE(Readiness(in).ok);  // a leader whose commits fail is unready, as any writer
  EXPECT_TRUE(StandbyReadiness({"10.0.0.1:50051", 7, ""}).ok);
  EXPECT_EQ(StandbyReadiness({"10.0.0.1:50051", 7, ""}).text, "ok: standby, the leader is at 10.0.0.1:50051 (epoch 7)");
  const Verdict cut_off = StandbyReadiness({"10.0.0.1:50051", 7, "connection refused"});
  EXPECT_FALSE(cut_off.ok);
  EXPECT_EQ(cut_off.text, "standby: connection refused");
  EXPECT_THAT(RenderStandbyMetrics(7, false), HasSubstr("\ntidegate_leader 0\n"));
  EXPECT_THAT(RenderStandbyMetrics(7, false), HasSubstr("\ntidegate_lease_epoch 7\n"));
  EXPECT_THAT(RenderStandbyMetrics(7, false), HasSubstr("\ntidegate_standby_database_reachable 0\n"));
}

TEST(Html, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(UrlEncode("org/ml x&y"), "org%2Fml%20x%26y");
}

std::shared_ptr<const service::ReadModel> SmallModel() {
  auto broker = core::Broker::Create(core::test_support::OneTeamConfig(), 0);
  EXPECT_TRUE(broker.ok()) << broker.status();
  return service::ReadModel::Build(**broker, 1);
}

TEST(Views, UserTextIsEscapedInTheTeamPage) {
  auto model = SmallModel();
  v1::TeamInfo team;
  team.set_name("<script>alert(1)</script>");
  team.set_leaf(false);
  auto* rule = team.add_tide();
  rule->set_from("<b>08:00</b>");
  rule->set_timezone("\"UTC\"");
  TeamExtras extras;
  extras.loans.push_back(ledger::LoanRow{"<img src=x onerror=alert(2)>", "red", "gpu", "2026-01-05", 7200});
  extras.forecast_resource = "gpu\"><script>";
  const LivePart live = TeamLive(*model, team, extras);
  EXPECT_THAT(live.html, Not(HasSubstr("<script>")));
  EXPECT_THAT(live.html, Not(HasSubstr("<img src=x")));
  EXPECT_THAT(live.html, Not(HasSubstr("<b>")));
  EXPECT_THAT(live.html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(live.html, HasSubstr("&lt;img src=x onerror=alert(2)&gt;"));
  EXPECT_THAT(live.html, HasSubstr("resource=gpu%22%3E%3Cscript%3E"));
  EXPECT_THAT(live.html, HasSubstr("<td class=\"n\">2.00</td>"));  // 7200 resource-seconds
  const std::string page = Page("team " + team.name(), "/api/watch?view=team&name=x", live);
  EXPECT_THAT(page, Not(HasSubstr("<script>alert")));
}

TEST(Views, TheOverviewShowsOnlyReadableTeamsAndItsVersionFollowsItsContent) {
  auto model = SmallModel();
  const LivePart all = OverviewLive(*model, [](const std::string&) { return true; });
  EXPECT_THAT(all.html, HasSubstr("<table id=\"quota-tree\">"));
  EXPECT_THAT(all.html, HasSubstr("<a href=\"/team?name=red\">red</a>"));
  const LivePart none = OverviewLive(*model, [](const std::string&) { return false; });
  EXPECT_THAT(none.html, Not(HasSubstr("red")));
  EXPECT_NE(all.version, none.version);
  EXPECT_EQ(OverviewLive(*model, [](const std::string&) { return true; }).version, all.version);
}

// red: 4 guaranteed, may not borrow; a job of 6 GPUs waits for ever.
TEST(Metrics, DecisionsCountPerTeamOfTheConfigAndTheQueueAgesFromSubmission) {
  v1::Config config = core::test_support::OneTeamConfig();
  auto& red_gpu = (*config.mutable_teams(0)->mutable_quota())["gpu"];
  red_gpu.set_guaranteed(4);
  red_gpu.set_borrow_limit(0);
  auto broker = core::Broker::Create(config, 0);
  ASSERT_TRUE(broker.ok()) << broker.status();
  std::vector<std::vector<core::Event>> events;
  for (const auto& [job, team, gpus] : std::vector<std::tuple<std::string, std::string, int>>{
           {"big", "red", 6}, {"small", "red", 1}, {"stray", "no-such-team", 1}}) {
    const internal::v1::Command submit = core::test_support::JobSpecBuilder(job).Team(team).Replicas(1).Gpus(gpus).Submit();
    events.push_back((*broker)->Apply(submit, 1000));
  }
  auto model = service::ReadModel::Build(**broker, 3);
  BrokerMetrics metrics;
  service::BatchStats stats;
  stats.commands = 3;
  stats.committed = true;
  stats.commit_seconds = 0.002;
  stats.now_ms = 1000;
  stats.events = &events;
  stats.model = model.get();
  metrics.ObserveBatch(stats);
  LiveFigures live;
  live.now_ms = 61000;
  const std::string text = metrics.Render(*model, live);
  EXPECT_THAT(text, HasSubstr("tidegate_decisions_total{type=\"queue\",team=\"red\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tidegate_decisions_total{type=\"admit\",team=\"red\"} 1\n"));
  // A team nobody configured must not become a label value.
  EXPECT_THAT(text, HasSubstr("tidegate_decisions_total{type=\"reject\",team=\"\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("no-such-team")));
  EXPECT_THAT(text, HasSubstr("tidegate_team_oldest_queued_seconds{team=\"red\"} 60\n"));
  EXPECT_THAT(text, HasSubstr("tidegate_team_queued{team=\"red\",resource=\"gpu\"} 6\n"));
  EXPECT_THAT(text, HasSubstr("tidegate_team_used{team=\"red\",resource=\"gpu\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tidegate_commit_batch_commands_count 1\n"));
  EXPECT_THAT(text, HasSubstr("tidegate_connected_agents{cluster=\"a\"} 0\n"));

  stats.committed = false;  // a refused batch: nothing of it happened
  metrics.ObserveBatch(stats);
  const std::string after = metrics.Render(*model, live);
  EXPECT_THAT(after, HasSubstr("tidegate_decisions_total{type=\"queue\",team=\"red\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("tidegate_commit_failures_total 1\n"));
  EXPECT_THAT(after, HasSubstr("tidegate_ledger_lost_commits 0\n"));
  live.ledger_writable = false;
  live.ledger_lost_commits = true;
  const std::string lost = metrics.Render(*model, live);
  EXPECT_THAT(lost, HasSubstr("tidegate_ledger_writable 0\n"));
  EXPECT_THAT(lost, HasSubstr("tidegate_ledger_lost_commits 1\n"));
}

}  // namespace
}  // namespace tidegate::http
