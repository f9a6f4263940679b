// The broker client's contract without a broker: where it dials, how statuses
// become exit codes and messages, and that bad flags stop before any call.
#include "cli/client.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli/app.h"
#include "cli/auth_channel.h"
#include "cli/exit_codes.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

using ::testing::HasSubstr;

// Nothing listens on port 1 of the loopback: connecting is refused at once.
constexpr char kNobody[] = "127.0.0.1:1";

struct Ran {
  int code;
  std::string out;
  std::string err;
};

Ran Tidegate(std::vector<std::string> args) {
  args.insert(args.begin(), "tidegate");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Io io{&out, &err, false};
  const int code = RunTidegate(static_cast<int>(argv.size()), argv.data(), io);
  return Ran{code, out.str(), err.str()};
}

TEST(ResolveServerTest, FlagThenEnvironmentThenDefault) {
  EXPECT_EQ(ResolveServer("h:1", "e:2"), "h:1");
  EXPECT_EQ(ResolveServer("", "e:2"), "e:2");
  EXPECT_EQ(ResolveServer("", ""), "127.0.0.1:50051");
  EXPECT_EQ(ResolveServer("", nullptr), "127.0.0.1:50051");
}

TEST(ExitCodeForTest, EachStatusHasItsDocumentedCode) {
  using grpc::StatusCode;
  EXPECT_EQ(ExitCodeFor(StatusCode::OK), 0);
  EXPECT_EQ(ExitCodeFor(StatusCode::INVALID_ARGUMENT), 2);
  EXPECT_EQ(ExitCodeFor(StatusCode::OUT_OF_RANGE), 2);
  EXPECT_EQ(ExitCodeFor(StatusCode::NOT_FOUND), 3);
  EXPECT_EQ(ExitCodeFor(StatusCode::ALREADY_EXISTS), 4);
  EXPECT_EQ(ExitCodeFor(StatusCode::FAILED_PRECONDITION), 4);
  EXPECT_EQ(ExitCodeFor(StatusCode::ABORTED), 4);
  EXPECT_EQ(ExitCodeFor(StatusCode::UNAVAILABLE), 5);
  EXPECT_EQ(ExitCodeFor(StatusCode::DEADLINE_EXCEEDED), 5);
  EXPECT_EQ(ExitCodeFor(StatusCode::INTERNAL), 6);
  EXPECT_EQ(ExitCodeFor(StatusCode::UNIMPLEMENTED), 6);
  EXPECT_EQ(ExitCodeFor(StatusCode::CANCELLED), 6);
  EXPECT_EQ(ExitCodeFor(StatusCode::UNAUTHENTICATED), 7);
  EXPECT_EQ(ExitCodeFor(StatusCode::PERMISSION_DENIED), 7);
}

TEST(DescribeRpcErrorTest, CodeThenMessage) {
  EXPECT_EQ(DescribeRpcError(grpc::Status(grpc::StatusCode::NOT_FOUND, "job x does not exist"),
                             "h:1"),
            "tidegate: NOT_FOUND: job x does not exist");
  EXPECT_EQ(DescribeRpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connect failed"), "h:1"),
            "tidegate: UNAVAILABLE: connect failed (broker at h:1; set --server or "
            "$TIDEGATE_SERVER)");
}

TEST(BrokerCommandsTest, UnreachableBrokerExitsFiveNamingTheAddress) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--server", kNobody, "jobs"},
           {"jobs", "--server", kNobody},
           {"teams", "--server", kNobody, "-o", "json"},
           {"quota", "research", "--server", kNobody},
           {"--server", kNobody, "release", "slurm:1"}}) {
    Ran r = Tidegate(args);
    EXPECT_EQ(r.code, kExitUnavailable) << args[0] << " " << r.err;
    EXPECT_THAT(r.err, HasSubstr("tidegate: UNAVAILABLE: "));
    EXPECT_THAT(r.err, HasSubstr(std::string("broker at ") + kNobody));
    EXPECT_EQ(r.out, "");
  }
}

TEST(BrokerCommandsTest, TheEnvironmentChoosesTheBrokerWhenTheFlagDoesNot) {
  setenv(kServerEnv, kNobody, 1);
  Ran r = Tidegate({"job", "slurm:1"});
  unsetenv(kServerEnv);
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_THAT(r.err, HasSubstr(std::string("broker at ") + kNobody));
}

TEST(BrokerCommandsTest, BadFlagsExitTwoBeforeAnyCall) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"admit", "--job", "j", "--team", "t", "--per-replica", "gpu=eight"},
       "--per-replica 'gpu=eight': 'eight' is not a whole number >= 0"},
      {{"admit", "--job", "j", "--team", "t", "--per-replica", "gpu=8", "--replicas", "two"},
       "--replicas 'two'"},
      {{"admit", "--job", "j", "--team", "t"}, "--per-replica is required"},
      {{"admit", "--job", "j", "--team", "t", "--per-replica", "gpu=8", "--grace-s", "9223372036854775808"},
       "--grace-s '9223372036854775808': too large"},
      {{"admit", "--job", "j", "--team", "t", "--per-replica", "gpu=8", "--grace-s", "soon"},
       "--grace-s 'soon': not a whole number of seconds >= 0"},
      {{"admit", "--job", "j", "--team", "t", "--per-replica", "gpu=8", "--grace-s", "-5"},
       "--grace-s '-5': not a whole number of seconds >= 0"},
      {{"jobs", "--state", "waiting"}, "--state 'waiting'"},
      {{"jobs", "-o", "xml"}, "xml"},
      {{"loans", "--since", "yesterday"}, "--since 'yesterday'"},
      {{"usage", "ml", "--step", "90m"}, "--step '90m'"},
      {{"usage"}, "TEAM is required"},
      {{"jobs", "--timeout", "soon"}, "--timeout 'soon'"},
      {{"config", "apply", "/no/such/file.yaml"}, "/no/such/file.yaml"},
      {{"config"}, "subcommand"},
      {{"frobnicate"}, "tidegate: 'frobnicate' is not a command"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--server", kNobody});
    Ran r = Tidegate(args);
    EXPECT_EQ(r.code, kExitBadInput) << c.args[0] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.err)) << c.args[0];
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("UNAVAILABLE"))) << c.args[0];
  }
}

// gRPC reads a port past 65535 modulo 65536 and would reach another server.
TEST(BrokerCommandsTest, APortOutOfRangeExitsTwoNamingTheAddress) {
  for (const char* servers : {"127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:1,localhost:65536"}) {
    Ran r = Tidegate({"--server", servers, "teams"});
    EXPECT_EQ(r.code, kExitBadInput) << servers << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("the port must be a number from 1 to 65535")) << servers;
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("UNAVAILABLE"))) << servers;
  }
  EXPECT_THAT(Tidegate({"--server", "127.0.0.1:99999", "teams"}).err, HasSubstr("--server 127.0.0.1:99999: "));
  for (const char* fine : {"127.0.0.1:65535", "dns:///broker.example:443", "[::1]:50051", "localhost",
                                  "unix:/run/tidegate.sock"}) {
    EXPECT_TRUE(CheckBrokerTarget(fine).ok()) << fine;
  }
}

TEST(BrokerCommandsTest, MalformedConfigExitsTwoWithFileAndLine) {
  const std::string path = ::testing::TempDir() + "/bad-config.yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("clusters:\n  - name: a\n    capacity: {gpu: lots}\n", f);
  std::fclose(f);
  Ran r = Tidegate({"config", "apply", path, "--dry-run", "--server", kNobody});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_THAT(r.err, HasSubstr("bad-config.yaml:3: clusters[0].capacity.gpu"));
}

TEST(BrokerCommandsTest, HelpListsTheBrokerCommandsAndExitCodes) {
  Ran r = Tidegate({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* word : {"--server", "admit", "release", "jobs", "job", "teams", "quota",
                           "loans", "usage", "config", "3  not found", "130  interrupted"}) {
    EXPECT_THAT(r.out, HasSubstr(word));
  }
  r = Tidegate({"admit", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("--per-replica"));
  EXPECT_THAT(r.out, HasSubstr("--server ADDR"));
}

}  // namespace
}  // namespace tidegate::cli
