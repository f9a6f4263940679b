// End to end for online forecasts: a month of Helios' hourly GPU
// demand (tests/data/helios-earth-vc-seq.timeseries.csv, CC BY 4.0, see
// tests/data/README.md) is imported into a fresh SQLite ledger with the real
// `tidegate ledger import-usage`, the real tidegated is started on it
// (tests/forecast/e2e-helios.yaml), and ForecastService is called through the
// real `tidegate` binary and through its gRPC stub.
//
// The data starts 2020-05-01 00:00 (UTC, a Friday) and has 744 hours per team,
// so forecasts start at 2020-06-01 00:00 UTC = 1590969600.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_process.h"
#include "tests/support/server_process.h"
#include "tidegate/v1/forecast.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using testing::ReadFile;
using testing::Ran;
using testing::SourceDir;
using Json = nlohmann::json;

constexpr int64_t kForecastStart = 1590969600;  // 2020-06-01 00:00 UTC.

std::string Helios() { return SourceDir() + "/tests/data/helios-earth-vc-seq.timeseries.csv"; }
std::string Fixture(const std::string& name) { return SourceDir() + "/tests/forecast/" + name; }

// Runs `tidegate args...` to completion (bounded: 120 s, then SIGKILL, code -1).
Ran RunCli(const testing::TempDir& dir, std::vector<std::string> args) {
  return testing::CliProcess(dir, std::move(args)).Wait(std::chrono::seconds(120));
}

// The forecast JSON without what differs between a file and the ledger: where
// it came from and the time unit of "t" (seconds from the file's origin vs
// Unix seconds).
Json Comparable(Json j) {
  for (const char* key : {"input", "team", "resource", "column", "zero_hours", "time_column"}) {
    j.erase(key);
  }
  for (Json& point : j["forecast"]) point.erase("t");
  return j;
}

// Lines of a YAML text that are not comments.
std::string WithoutComments(const std::string& yaml) {
  std::istringstream in(yaml);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) != 0) out += line + "\n";
  }
  return out;
}

class ForecastE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.File("ledger.db");
    const Ran imported = Cli({"ledger", "import-usage", "--create", "--db", db_, Helios(), "--column",
                              "demand_gpus"});
    ASSERT_EQ(imported.code, 0) << imported.err;
    EXPECT_THAT(imported.out, HasSubstr("imported 11904 hourly gpu rows of 16 teams"));
    EXPECT_THAT(imported.out, HasSubstr("2020-05-01 00:00 to 2020-05-31 23:00 UTC"));
    server_ = std::make_unique<testing::ServerProcess>(Fixture("e2e-helios.yaml"), db_);
    ASSERT_TRUE(server_->Start()) << server_->Stderr();
  }

  Ran Cli(std::vector<std::string> args) { return RunCli(dir_, std::move(args)); }
  Ran Online(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", server_->address()});
    return Cli(std::move(args));
  }

  testing::TempDir dir_;
  std::string db_;
  std::unique_ptr<testing::ServerProcess> server_;
};

TEST_F(ForecastE2eTest, OnlineForecastHasTheHorizonOrderedQuantilesAndHourlyTimes) {
  const Ran r = Online({"forecast", "vc3sl", "--horizon", "2d", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["input"], "ledger");
  EXPECT_EQ(j["team"], "vc3sl");
  EXPECT_EQ(j["column"], "demand");
  EXPECT_EQ(j["rows"], 744);
  EXPECT_EQ(j["zero_hours"], 0);
  ASSERT_EQ(j["forecast"].size(), 48u);
  for (size_t h = 0; h < 48; ++h) {
    const Json& p = j["forecast"][h];
    EXPECT_EQ(p["t"].get<int64_t>(), kForecastStart + static_cast<int64_t>(h) * 3600);
    EXPECT_LE(p["p10"].get<double>(), p["p50"].get<double>()) << h;
    EXPECT_LE(p["p50"].get<double>(), p["p90"].get<double>()) << h;
    EXPECT_LE(p["p90"].get<double>(), p["p99"].get<double>()) << h;
    EXPECT_GE(p["p10"].get<double>(), 0) << h;
  }
  // vc3sl's demand at the end of May is 10-60 GPUs; a sane forecast stays in range.
  EXPECT_GT(j["forecast"][0]["p50"].get<double>(), 1);
  EXPECT_LT(j["forecast"][0]["p50"].get<double>(), 150);
  EXPECT_GT(j["backtest"]["candidates"].size(), 1u);
}

TEST_F(ForecastE2eTest, OnlineForecastEqualsTheOfflineOneOnTheSameData) {
  const Ran online = Online({"forecast", "vc3sl", "--horizon", "24", "-o", "json"});
  ASSERT_EQ(online.code, 0) << online.err;
  const Ran offline = Cli({"forecast", "vc3sl", "--input", Helios(), "--column", "demand_gpus",
                           "--horizon", "24", "-o", "json"});
  ASSERT_EQ(offline.code, 0) << offline.err;
  const Json a = Json::parse(online.out), b = Json::parse(offline.out);
  EXPECT_EQ(a["model"], b["model"]);
  EXPECT_EQ(Comparable(a).dump(), Comparable(b).dump());
}

TEST_F(ForecastE2eTest, AnInnerTeamForecastsTheSumOfItsLeaves) {
  const Ran r = Online({"forecast", "helios", "--horizon", "24", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["rows"], 744);
  // vc3sl (~58) plus vcJLV: more than vc3sl alone.
  const Ran leaf = Online({"forecast", "vc3sl", "--horizon", "24", "-o", "json"});
  ASSERT_EQ(leaf.code, 0) << leaf.err;
  EXPECT_GT(j["forecast"][0]["p50"].get<double>(),
            Json::parse(leaf.out)["forecast"][0]["p50"].get<double>());
}

TEST_F(ForecastE2eTest, TableAndPlotForPeople) {
  const std::string svg = dir_.File("vc3sl.svg");
  const Ran r = Online({"forecast", "vc3sl", "--horizon", "48", "--plot", svg, "-o", "table"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("team vc3sl: gpu demand, 744 hours from the ledger"));
  EXPECT_THAT(r.out, ContainsRegex("hour \\(UTC\\) +P10 +P50 +P90 +P99"));
  EXPECT_THAT(r.out, HasSubstr("2020-06-01 00:00"));
  EXPECT_THAT(r.out, HasSubstr("2020-06-02 23:00"));
  const std::string plot = ReadFile(svg);
  EXPECT_THAT(plot, HasSubstr("<svg"));
  EXPECT_THAT(plot, HasSubstr("</svg>"));
  EXPECT_THAT(plot, HasSubstr("vc3sl"));
}

TEST_F(ForecastE2eTest, ErrorsExitWithTheDocumentedCodes) {
  const Ran unknown = Online({"forecast", "nobody", "--horizon", "24"});
  EXPECT_EQ(unknown.code, 3) << unknown.err;
  EXPECT_THAT(unknown.err, HasSubstr("NOT_FOUND: team 'nobody' is not a team"));
  EXPECT_EQ(unknown.out, "");

  const Ran horizon = Online({"forecast", "vc3sl", "--horizon", "0"});
  EXPECT_EQ(horizon.code, 2) << horizon.err;
  EXPECT_THAT(horizon.err, HasSubstr("--horizon: \"0\""));

  const Ran metric = Online({"forecast", "vc3sl", "--metric", "speed"});
  EXPECT_EQ(metric.code, 2) << metric.err;
  EXPECT_THAT(metric.err, HasSubstr("--metric: \"speed\""));

  const Ran fresh = Online({"forecast", "fresh", "--horizon", "24"});
  EXPECT_EQ(fresh.code, 4) << fresh.err;
  EXPECT_THAT(fresh.err, HasSubstr("FAILED_PRECONDITION: team fresh has 0 hours of gpu demand "
                                   "in the ledger; a forecast needs at least 49"));

  const Ran tide = Online({"tide", "propose", "fresh"});
  EXPECT_EQ(tide.code, 4) << tide.err;
  EXPECT_THAT(tide.err, HasSubstr("a tide proposal needs at least 336"));
}

TEST_F(ForecastE2eTest, TheServiceNamesBadFieldsAndValues) {
  auto stub = v1::ForecastService::NewStub(server_->Channel());
  v1::ForecastRequest req;
  req.mutable_series()->set_team("vc3sl");
  req.set_horizon_hours(0);
  v1::ForecastResponse resp;
  {
    grpc::ClientContext ctx;
    const grpc::Status s = stub->Forecast(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "horizon_hours: 0 is not a number of hours from 1 to 8784");
  }
  req.set_horizon_hours(24);
  req.set_model("arima");
  {
    grpc::ClientContext ctx;
    const grpc::Status s = stub->Forecast(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("model: "));
    EXPECT_THAT(s.error_message(), HasSubstr("arima"));
  }
  v1::RecommendReservationsRequest reserve;
  reserve.mutable_series()->set_team("vc3sl");
  reserve.mutable_prices()->mutable_reserved()->set_price(-1);
  reserve.mutable_prices()->mutable_on_demand()->set_price(2.5);
  v1::RecommendReservationsResponse plan;
  {
    grpc::ClientContext ctx;
    const grpc::Status s = stub->RecommendReservations(&ctx, reserve, &plan);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("prices.reserved.price: -1"));
  }
  v1::ProposeTideRequest tide;
  tide.mutable_series()->set_team("vc3sl");
  tide.set_timezone("Mars/Olympus");
  v1::ProposeTideResponse proposal;
  {
    grpc::ClientContext ctx;
    const grpc::Status s = stub->ProposeTide(&ctx, tide, &proposal);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("timezone: \"Mars/Olympus\""));
  }
}

TEST_F(ForecastE2eTest, ReserveOnlineEqualsOffline) {
  const Ran online = Online({"reserve", "--prices", Fixture("prices.yaml"), "vc3sl"});
  ASSERT_EQ(online.code, 0) << online.err;
  const Ran offline = Cli({"reserve", "vc3sl", "--prices", Fixture("prices.yaml"), "--input",
                           Helios(), "--column", "demand_gpus"});
  ASSERT_EQ(offline.code, 0) << offline.err;
  Json a = Json::parse(online.out), b = Json::parse(offline.out);
  EXPECT_EQ(a["team"], "vc3sl");
  EXPECT_EQ(a["critical_ratio"], 0.44);
  EXPECT_GT(a["reserved_gpus"].get<int64_t>(), 0);
  EXPECT_GT(a["utilisation"].get<double>(), 0);
  EXPECT_LE(a["utilisation"].get<double>(), 1);
  for (const char* key : {"input", "team", "column"}) {
    a.erase(key);
    b.erase(key);
  }
  EXPECT_EQ(a.dump(), b.dump());

  const Ran table = Online({"reserve", "--prices", Fixture("prices.yaml"), "vc3sl", "-o", "table"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("team vc3sl (ledger): demand, forecast"));
  EXPECT_THAT(table.out, ContainsRegex("reserve [0-9]+ GPUs"));
}

TEST_F(ForecastE2eTest, TideProposalOnlineEqualsOffline) {
  const Ran online = Online({"tide", "propose", "vc3sl"});
  ASSERT_EQ(online.code, 0) << online.err;
  EXPECT_THAT(online.out, HasSubstr("# Proposed by ForecastService from 744 hours of gpu demand "
                                    "of team vc3sl"));
  EXPECT_THAT(online.out, ContainsRegex("teams:\n  - name: vc3sl\n    quota: \\{gpu: "
                                        "\\{guaranteed: [0-9]+\\}\\}\n    tide:"));
  const Ran offline = Cli({"tide", "propose", "vc3sl", "--input", Helios(), "--column",
                           "demand_gpus"});
  ASSERT_EQ(offline.code, 0) << offline.err;
  EXPECT_EQ(WithoutComments(online.out), WithoutComments(offline.out));
}

TEST_F(ForecastE2eTest, ImportRefusesALedgerABrokerHoldsAndHoursItHas) {
  const Ran held = Cli({"ledger", "import-usage", "--db", db_, Helios(), "--column",
                        "demand_gpus"});
  EXPECT_EQ(held.code, 4) << held.err;
  EXPECT_THAT(held.err, HasSubstr("is in use by a running tidegated"));

  ASSERT_EQ(server_->Terminate(), 0) << server_->Stderr();
  const Ran twice = Cli({"ledger", "import-usage", "--db", db_, Helios(), "--column",
                         "demand_gpus", "--team", "vc3sl"});
  EXPECT_EQ(twice.code, 4) << twice.err;
  EXPECT_THAT(twice.err, HasSubstr("already has gpu usage of team vc3sl at 2020-05-01 00:00"));

  const Ran bad = Cli({"ledger", "import-usage", "--db", dir_.File("other.db"),
                       Fixture("bad-value.csv"), "--column", "demand_gpus", "--team", "x"});
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("bad-value.csv:4: demand_gpus: \"abc\" is not a number"));

  // A missing ledger is made only when asked: not where a broker's was lost.
  const Ran missing = Cli({"ledger", "import-usage", "--db", dir_.File("missing.db"), Helios(), "--column",
                           "demand_gpus"});
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("pass --create"));
  EXPECT_FALSE(std::filesystem::exists(dir_.File("missing.db")));
}

}  // namespace
}  // namespace tidegate
