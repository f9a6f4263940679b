// The HTTP endpoint of brokers sharing a PostgreSQL ledger, against real
// processes and a real server (tests/postgres/with_postgres.sh): the
// leader's /readyz and /metrics say it leads and under which epoch, the
// standby's say it stands by and name the leader; once the leader is killed
// the standby takes over and says so.
#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/postgres/cluster.h"
#include "tests/support/server_process.h"

namespace tidegate::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kLeaseMs = 500;
constexpr char kConfig[] = R"(clusters:
  - {name: a, capacity: {gpu: 4}}
teams:
  - {name: red, quota: {gpu: {guaranteed: 4, borrow_limit: 0}}}
policy: {default_grace_s: 0, tick_s: 1}
)";

struct Answer {
  int status = 0;  // 0: no answer (not listening)
  std::string body;
};

Answer Get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  auto res = client.Get(path);
  if (!res) return {};
  return {res->status, res->body};
}

// The value of an unlabelled sample in an exposition; -1 when absent.
double Sample(const std::string& exposition, const std::string& name) {
  const std::string prefix = "\n" + name + " ";
  const size_t at = ("\n" + exposition).find(prefix);
  if (at == std::string::npos) return -1;
  const size_t start = at + prefix.size() - 1;
  double value = -1;
  if (!absl::SimpleAtod(exposition.substr(start, exposition.find('\n', start) - start), &value)) return -1;
  return value;
}

TEST(HttpLeaderTest, ReadyzAndMetricsFollowLeadershipAcrossAFailover) {
  const char* pg = std::getenv("TIDEGATE_PG");
  if (pg == nullptr) GTEST_SKIP() << "TIDEGATE_PG is not set: run under tests/postgres/with_postgres.sh";
  TempDir dir;
  const std::string config = dir.File("tidegate.yaml");
  std::ofstream(config) << kConfig;
  const std::vector<int> ports = FreePorts(4);
  Broker first(dir.path(), config, pg, ports[0], kLeaseMs);
  Broker second(dir.path(), config, pg, ports[1], kLeaseMs);
  const int first_http = ports[2];
  const int second_http = ports[3];
  first.AddArgs({"--http-listen", absl::StrCat("127.0.0.1:", first_http)});
  second.AddArgs({"--http-listen", absl::StrCat("127.0.0.1:", second_http)});

  ASSERT_TRUE(first.Start()) << first.Stderr();
  Answer ready;
  ASSERT_TRUE(Eventually([&] { return (ready = Get(first_http, "/readyz")).status == 200; },
                         std::chrono::seconds(15)))
      << first.Stderr();
  EXPECT_THAT(ready.body, HasSubstr("leader, epoch "));
  ASSERT_TRUE(second.Start()) << second.Stderr();
  ASSERT_TRUE(Eventually(
      [&] {
        ready = Get(second_http, "/readyz");
        return ready.status == 200 && ready.body.find(first.address()) != std::string::npos;
      },
      std::chrono::seconds(15)))
      << ready.status << " " << ready.body << second.Stderr();
  // Ready: it answers callers with UNAVAILABLE naming the leader and can take over.
  EXPECT_THAT(ready.body, HasSubstr("standby"));
  EXPECT_EQ(Get(second_http, "/healthz").status, 200);

  const Answer leader_metrics = Get(first_http, "/metrics");
  ASSERT_EQ(leader_metrics.status, 200);
  EXPECT_EQ(Sample(leader_metrics.body, "tidegate_leader"), 1);
  const double epoch = Sample(leader_metrics.body, "tidegate_lease_epoch");
  EXPECT_GT(epoch, 0);
  const Answer standby_metrics = Get(second_http, "/metrics");
  ASSERT_EQ(standby_metrics.status, 200);
  EXPECT_EQ(Sample(standby_metrics.body, "tidegate_leader"), 0);
  EXPECT_EQ(Sample(standby_metrics.body, "tidegate_lease_epoch"), epoch);
  // The web view needs the leader's core: the standby sends people there.
  const Answer page = Get(second_http, "/");
  EXPECT_EQ(page.status, 503);
  EXPECT_THAT(page.body, HasSubstr(first.address()));

  first.Kill();
  Answer metrics;
  ASSERT_TRUE(Eventually(
      [&] {
        metrics = Get(second_http, "/metrics");
        return metrics.status == 200 && Sample(metrics.body, "tidegate_leader") == 1;
      },
      std::chrono::seconds(15)))
      << second.Stderr();
  EXPECT_GT(Sample(metrics.body, "tidegate_lease_epoch"), epoch);
  ready = Get(second_http, "/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_THAT(ready.body, HasSubstr("leader, epoch "));
}

}  // namespace
}  // namespace tidegate::testing
