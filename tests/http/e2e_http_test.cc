// The HTTP endpoint of the real tidegated (--http-listen; docs/observability.md)
// checked with the real programs its users run: Prometheus scrapes it and its
// answers are compared with the broker's own over gRPC, promtool checks the
// exposition, headless Chromium loads the web view (and sees an admit arrive
// without a reload), and /readyz follows a ledger made read-only and back.
// One broker for the whole file; the tests run in order and the read-only
// ledger comes last. A missing program skips its test with a message.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/support/server_process.h"
#include "tidegate/v1/service.grpc.pb.h"

namespace tidegate {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;

// red and blue share 8 GPUs, 4 guaranteed each; blue lends what it does not use.
constexpr char kConfig[] = R"(
clusters:
  - {name: a, capacity: {gpu: 8}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 4, borrow_limit: 4}}}
  - {name: blue, quota: {gpu: {guaranteed: 4, borrow_limit: 0}}}
policy: {default_grace_s: 0, tick_s: 1}
)";

bool OnPath(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// A child process with stdout and stderr in `log`; SIGTERMed (then waited
// for) when destroyed unless it already ended.
class Child {
 public:
  Child(std::vector<std::string> args, const std::string& log) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      Wait();
    }
  }
  // Waits for the exit; its code (128 + signal when killed).
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
};

// Runs a command to the end; its exit code and output.
std::pair<int, std::string> RunToEnd(std::vector<std::string> args, const std::string& log) {
  Child child(std::move(args), log);
  const int code = child.Wait();
  return {code, ReadFile(log)};
}

class HttpEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    std::ofstream(dir_->File("tidegate.yaml")) << kConfig;
    // A week of red's hourly demand (a daily wave), imported before the
    // broker starts, so that red's page has a forecast chart to show.
    {
      std::ofstream csv(dir_->File("usage.csv"));
      csv << "team,hour_start_s,gpus\n";
      for (int h = 0; h < 168; ++h) csv << "red," << 1767225600 + 3600 * h << "," << (h % 24 < 12 ? 2 : 6) << "\n";
    }
    auto [imported, import_log] = RunToEnd({testing::ServerProcess::BinDir() + "/tidegate", "ledger", "import-usage",
                                            "--create", "--db", dir_->File("tidegate.db"), dir_->File("usage.csv"),
                                            "--column", "gpus"},
                                           dir_->File("import.log"));
    ASSERT_EQ(imported, 0) << import_log;
    broker_ = new testing::ServerProcess(dir_->File("tidegate.yaml"), dir_->File("tidegate.db"),
                                         {"--http-listen", "127.0.0.1:0"});
    ASSERT_TRUE(broker_->Start()) << broker_->Stderr();
    http_port_ = broker_->HttpPort();
    ASSERT_GT(http_port_, 0) << broker_->Stderr();
  }
  static void TearDownTestSuite() {
    delete broker_;
    delete dir_;
  }

  static httplib::Result Get(const std::string& path) {
    httplib::Client client("127.0.0.1", http_port_);
    client.set_read_timeout(30, 0);
    return client.Get(path.c_str());
  }
  static std::string Url(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(http_port_) + path;
  }
  // The value of an unlabelled sample in /metrics, or -1.
  static double Metric(const std::string& name) {
    auto res = Get("/metrics");
    if (!res) return -1;
    std::smatch m;
    if (!std::regex_search(res->body, m, std::regex("\n" + name + " ([0-9.e+-]+)\n"))) return -1;
    return std::stod(m[1]);
  }

  static v1::AdmitResponse Admit(const std::string& job, const std::string& team, int gpus) {
    auto stub = v1::AdmissionService::NewStub(broker_->Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AdmitRequest req;
    req.mutable_job()->set_job(job);
    req.mutable_job()->set_team(team);
    req.mutable_job()->set_replicas(1);
    (*req.mutable_job()->mutable_per_replica())["gpu"] = gpus;
    v1::AdmitResponse resp;
    last_admit_ = stub->Admit(&ctx, req, &resp);
    return resp;
  }
  static v1::TeamInfo Team(const std::string& name) {
    auto stub = v1::QuotaService::NewStub(broker_->Channel());
    grpc::ClientContext ctx;
    v1::GetTeamRequest req;
    req.set_team(name);
    v1::TeamInfo info;
    EXPECT_TRUE(stub->GetTeam(&ctx, req, &info).ok());
    return info;
  }
  static std::vector<std::string> Chromium(const std::string& user_data) {
    // `timeout`: a browser that hangs fails its test instead of the whole run.
    return {"timeout", "60", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--user-data-dir=" + dir_->File(user_data)};
  }

  static testing::TempDir* dir_;
  static testing::ServerProcess* broker_;
  static int http_port_;
  static grpc::Status last_admit_;
};
testing::TempDir* HttpEndToEnd::dir_ = nullptr;
testing::ServerProcess* HttpEndToEnd::broker_ = nullptr;
int HttpEndToEnd::http_port_ = 0;
grpc::Status HttpEndToEnd::last_admit_;

TEST_F(HttpEndToEnd, TheExpositionPassesPromtool) {
  if (!OnPath("promtool")) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  auto res = Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("version=0.0.4"));
  std::ofstream(dir_->File("metrics.txt")) << res->body;
  auto [code, out] = RunToEnd({"sh", "-c", "promtool check metrics < " + dir_->File("metrics.txt")}, dir_->File("promtool.log"));
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "") << "promtool's lint found problems";
}

TEST_F(HttpEndToEnd, PrometheusScrapesWhatTheBrokerAnswers) {
  if (!OnPath("prometheus")) GTEST_SKIP() << "prometheus not installed (Debian package prometheus)";
  const int port = testing::FreePorts(1)[0];
  std::ofstream(dir_->File("prometheus.yml")) << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                                                 "scrape_configs:\n"
                                                 "  - job_name: tidegate\n"
                                                 "    static_configs: [{targets: ['127.0.0.1:"
                                              << http_port_ << "']}]\n";
  Child prometheus({"prometheus", "--config.file=" + dir_->File("prometheus.yml"),
                    "--storage.tsdb.path=" + dir_->File("tsdb"),
                    "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                   dir_->File("prometheus.log"));
  // Jobs while Prometheus scrapes: red borrows 2 of blue's idle GPUs.
  int admitted = 0;
  for (const auto& [job, team, gpus] : std::vector<std::tuple<std::string, std::string, int>>{
           {"p-red-1", "red", 4}, {"p-red-2", "red", 2}, {"p-blue-1", "blue", 1}, {"p-blue-2", "blue", 8}}) {
    const v1::AdmitResponse r = Admit(job, team, gpus);
    ASSERT_TRUE(last_admit_.ok()) << last_admit_.error_message();
    if (r.decision() == v1::DECISION_ADMITTED || r.decision() == v1::DECISION_ADMITTED_BORROWING) ++admitted;
  }
  EXPECT_EQ(admitted, 3);  // p-blue-2 waits: 8 > blue's guarantee and it may not borrow
  const int64_t borrowed = Team("red").resources(0).borrowed();
  EXPECT_EQ(borrowed, 2);

  httplib::Client client("127.0.0.1", port);
  // The value of a PromQL query, or -1 while Prometheus has none (yet).
  auto query = [&](const std::string& promql) -> double {
    auto res = client.Get(("/api/v1/query?query=" + httplib::detail::encode_query_param(promql)).c_str());
    if (!res || res->status != 200) return -1;
    auto body = nlohmann::json::parse(res->body, nullptr, false);
    if (body.is_discarded() || body["data"]["result"].empty()) return -1;
    return std::stod(body["data"]["result"][0]["value"][1].get<std::string>());
  };
  double seen_borrowed = -1, seen_admits = -1;
  EXPECT_TRUE(testing::Eventually([&] {
    seen_borrowed = query("tidegate_team_borrowed{team=\"red\",resource=\"gpu\"}");
    seen_admits = query("sum(tidegate_decisions_total{type=\"admit\"})");
    return seen_borrowed == borrowed && seen_admits == admitted;
  }, std::chrono::seconds(30))) << "Prometheus saw borrowed " << seen_borrowed << ", admits " << seen_admits << "\n"
          << ReadFile(dir_->File("prometheus.log"));
  EXPECT_EQ(query("up{job=\"tidegate\"}"), 1);
  EXPECT_EQ(query("tidegate_team_queued_jobs{team=\"blue\"}"), 1);

  // Blue asks for 2 more within its guarantee while only 1 GPU is free:
  // red's loan is reclaimed and, with grace 0, blue is admitted at once; the
  // wait is measured all the same.
  const v1::AdmitResponse reclaim = Admit("p-blue-3", "blue", 2);
  ASSERT_TRUE(last_admit_.ok());
  EXPECT_EQ(reclaim.decision(), v1::DECISION_ADMITTED);
  EXPECT_THAT(reclaim.victims(), ::testing::ElementsAre("p-red-2"));
  EXPECT_TRUE(testing::Eventually([] { return Metric("tidegate_reclaim_duration_seconds_count") == 1; }))
      << broker_->Stderr();
  EXPECT_EQ(Metric("tidegate_reclaim_beyond_grace_seconds_count"), 1);
  EXPECT_EQ(Team("red").resources(0).borrowed(), 0);
}

TEST_F(HttpEndToEnd, TheWebViewShowsTheTreeAndWhyAJobWaitsAndAnAdmitArrivesWithoutReload) {
  if (!OnPath("chromium")) GTEST_SKIP() << "chromium not installed (Debian package chromium)";
  Admit("w-blue", "blue", 6);  // waits: more than blue's guarantee, and blue may not borrow
  ASSERT_TRUE(last_admit_.ok());

  // Three browsers at once (each mostly waits for its own start-up): the
  // quota tree and red's page with their script off (?watch=0), so that
  // only the third, blue's live page, ever watches.
  // The quota tree, server-rendered.
  auto args = Chromium("chromium-tree");
  args.insert(args.end(), {"--dump-dom", Url("/?watch=0")});
  Child tree_run(args, dir_->File("tree.html"));
  // A screenshot of red's page (figures, jobs, chart, loans), kept with the
  // build as a test artifact.
  const std::filesystem::path artifacts = std::filesystem::path(testing::ServerProcess::BinDir()) / ".." / "test-artifacts";
  std::filesystem::create_directories(artifacts);
  const std::string shot = (artifacts / "web-view-team.png").string();
  std::filesystem::remove(shot);
  args = Chromium("chromium-shot");
  args.insert(args.end(), {"--window-size=1280,800", "--screenshot=" + shot, Url("/team?name=red&watch=0")});
  Child shot_run(args, dir_->File("shot.log"));

  // Red's forecast chart: the forecast library's SVG, from the imported week.
  auto chart = Get("/team/forecast.svg?name=red&resource=gpu");
  ASSERT_TRUE(chart);
  EXPECT_EQ(chart->status, 200) << chart->body;
  EXPECT_EQ(chart->get_header_value("Content-Type"), "image/svg+xml");
  EXPECT_THAT(chart->body, HasSubstr("<svg"));
  EXPECT_THAT(chart->body, HasSubstr("team red: gpu demand"));
  auto no_chart = Get("/team/forecast.svg?name=blue&resource=gpu");
  ASSERT_TRUE(no_chart);
  EXPECT_EQ(no_chart->status, 409);
  EXPECT_THAT(no_chart->body, HasSubstr("a forecast needs at least"));

  // Blue's page with its script on. The page asks the broker for the next
  // version and Chromium's virtual time waits for that answer; the admit is
  // made only once the broker holds the page's request, so the job can reach
  // the DOM only through the script.
  ASSERT_EQ(Metric("tidegate_http_watch_requests"), 0);
  args = Chromium("chromium-live");
  args.insert(args.end(), {"--virtual-time-budget=500", "--dump-dom", Url("/team?name=blue")});
  Child live(args, dir_->File("live.html"));
  ASSERT_TRUE(testing::Eventually([] { return Metric("tidegate_http_watch_requests") == 1; }, std::chrono::seconds(30))) << "the page never watched";
  Admit("w-blue-small", "blue", 1);
  ASSERT_TRUE(last_admit_.ok());
  ASSERT_EQ(live.Wait(), 0);
  const std::string dom = ReadFile(dir_->File("live.html"));
  EXPECT_THAT(dom, HasSubstr("<tr data-job=\"w-blue\" class=\"queued\">"));
  EXPECT_THAT(dom, HasSubstr("blue would use"));  // why w-blue waits, from the broker's reason
  EXPECT_THAT(dom, HasSubstr("<tr data-job=\"w-blue-small\" class=\"admitted\">"));
  EXPECT_THAT(dom, HasSubstr("id=\"status\">live<"));

  ASSERT_EQ(tree_run.Wait(), 0) << ReadFile(dir_->File("tree.html"));
  const std::string tree = ReadFile(dir_->File("tree.html"));
  EXPECT_THAT(tree, HasSubstr("<table id=\"quota-tree\">"));
  EXPECT_THAT(tree, HasSubstr("<a href=\"/team?name=red\">red</a>"));
  EXPECT_THAT(tree, HasSubstr("<a href=\"/team?name=blue\">blue</a>"));
  EXPECT_EQ(shot_run.Wait(), 0) << ReadFile(dir_->File("shot.log"));
  EXPECT_TRUE(std::filesystem::exists(shot) && std::filesystem::file_size(shot) > 0) << ReadFile(dir_->File("shot.log"));
}

TEST_F(HttpEndToEnd, ReadyzTurnsUnreadyWhileTheLedgerIsReadOnlyAndReadyAfter) {
  const std::string db = dir_->File("tidegate.db");
  auto res = Get("/readyz");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  // Immutable files refuse writes even through the broker's open descriptors,
  // as a file system gone read-only would.
  auto chattr = [&](const char* flag) {
    return std::system(("chattr " + std::string(flag) + " " + db + " " + db + "-wal 2>/dev/null").c_str()) == 0;
  };
  if (!chattr("+i")) GTEST_SKIP() << "chattr +i is not allowed here (needs root and a file system with the flag)";
  Admit("ro-1", "red", 1);
  const grpc::Status refused = last_admit_;
  res = Get("/readyz");
  const int unready_status = res ? res->status : -1;
  const std::string unready_body = res ? res->body : "";
  res = Get("/healthz");
  const int live_status = res ? res->status : -1;
  const double writable = Metric("tidegate_ledger_writable");
  const double lost = Metric("tidegate_ledger_lost_commits");
  ASSERT_TRUE(chattr("-i"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
  EXPECT_EQ(unready_status, 503);
  EXPECT_THAT(unready_body, HasSubstr("the ledger cannot be written"));
  EXPECT_EQ(live_status, 200);  // the writer lives: a restart would not help
  EXPECT_EQ(writable, 0);
  EXPECT_EQ(lost, 0);  // a read-only ledger refuses writes but lost nothing
  EXPECT_TRUE(testing::Eventually([] {
    auto again = Get("/readyz");
    return again && again->status == 200;
  })) << broker_->Stderr();
  Admit("ro-2", "red", 1);
  EXPECT_TRUE(last_admit_.ok()) << last_admit_.error_message();
  EXPECT_EQ(Metric("tidegate_ledger_writable"), 1);
}

}  // namespace
}  // namespace tidegate
