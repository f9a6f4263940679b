// The agent streams while the ledger refuses writes, through the real
// AgentService and CoreLoop on an in-process gRPC server, over a store that
// fails commits on demand: a report the broker could not record ends the
// stream (the agent reconnects and replays its view), and `synced` is sent
// only for a view whose every command was recorded.
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "broker/service/agent_service.h"
#include "broker/service/failing_loop_for_tests.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::HasSubstr;

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "red" quota { key: "gpu" value { guaranteed: 8 } } }
)pb";

using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::BrokerAction>;

class AgentServiceFaultTest : public FailingLoopTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(OpenLoop(kConfig));
    agents_ = std::make_unique<AgentServiceImpl>(loop_.get());
    StartLoop([this](const PublishedChange&) { agents_->Notify(); });
    grpc::ServerBuilder builder;
    builder.RegisterService(agents_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::AgentService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    FailingLoopTest::TearDown();
  }

  // Opens a stream with a deadline (a stream the broker forgets to end fails
  // the test instead of hanging it) and says hello.
  std::unique_ptr<Stream> Connect(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto stream = stub_->Connect(ctx);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_cluster("a");
    hello.mutable_hello()->set_agent_id("test");
    EXPECT_TRUE(stream->Write(hello));
    return stream;
  }
  // Reads actions until `synced` (true) or the stream's end (false).
  static bool ReadUntilSynced(Stream* stream) {
    v1::BrokerAction action;
    while (stream->Read(&action)) {
      if (action.has_synced()) return true;
    }
    return false;
  }
  absl::StatusOr<Applied> Admit(const std::string& job) {
    internal::v1::Command command;
    command.mutable_submit()->set_job(job);
    command.mutable_submit()->set_team("red");
    command.mutable_submit()->set_replicas(1);
    (*command.mutable_submit()->mutable_per_replica())["gpu"] = 2;
    std::promise<absl::StatusOr<Applied>> answer;
    loop_->Submit(std::move(command), [&](absl::StatusOr<Applied> a) { answer.set_value(std::move(a)); });
    return answer.get_future().get();
  }
  std::unique_ptr<AgentServiceImpl> agents_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::AgentService::Stub> stub_;
};

v1::AgentMessage ViewRunning(const std::vector<std::string>& jobs) {
  v1::AgentMessage m;
  m.mutable_view();  // set even when empty
  for (const auto& job : jobs) {
    v1::ObservedJob* o = m.mutable_view()->add_jobs();
    o->mutable_spec()->set_job(job);
    o->mutable_spec()->set_team("red");
    o->mutable_spec()->set_replicas(1);
    (*o->mutable_spec()->mutable_per_replica())["gpu"] = 2;
    o->set_running(true);
  }
  return m;
}

TEST_F(AgentServiceFaultTest, AnEndTheLedgerRefusedEndsTheStreamAndIsRecordedOnReplay) {
  ASSERT_TRUE(Admit("j1").ok());
  {
    grpc::ClientContext ctx;
    auto stream = Connect(&ctx);
    ASSERT_TRUE(stream->Write(ViewRunning({"j1"})));
    ASSERT_TRUE(ReadUntilSynced(stream.get()));

    store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
    v1::AgentMessage ended;
    ended.mutable_ended()->set_job("j1");
    ended.mutable_ended()->set_reason("COMPLETED");
    ASSERT_TRUE(stream->Write(ended));
    EXPECT_FALSE(ReadUntilSynced(stream.get()));
    const grpc::Status closed = stream->Finish();
    EXPECT_EQ(closed.error_code(), grpc::StatusCode::UNAVAILABLE) << closed.error_message();
    EXPECT_THAT(closed.error_message(), HasSubstr("reconnect and send the view again"));
  }
  EXPECT_EQ(loop_->Published()->FindJob("j1")->state(), v1::JOB_STATE_ADMITTED);

  HealAndWaitForWrites();
  grpc::ClientContext ctx;
  auto stream = Connect(&ctx);
  ASSERT_TRUE(stream->Write(ViewRunning({})));  // the replayed view: j1 is gone
  ASSERT_TRUE(ReadUntilSynced(stream.get()));
  auto j1 = loop_->Published()->FindJob("j1");
  EXPECT_TRUE(j1 == nullptr || j1->state() == v1::JOB_STATE_ENDED);
  stream->WritesDone();
  ctx.TryCancel();
}

TEST_F(AgentServiceFaultTest, AViewTheLedgerRefusedGetsNoSynced) {
  ASSERT_TRUE(Admit("j1").ok());
  store_->Fail(absl::ResourceExhaustedError("database or disk is full"));
  grpc::ClientContext ctx;
  auto stream = Connect(&ctx);
  ASSERT_TRUE(stream->Write(ViewRunning({})));  // j1 gone: a finish, refused
  EXPECT_FALSE(ReadUntilSynced(stream.get())) << "synced for a view the broker did not record";
  const grpc::Status closed = stream->Finish();
  EXPECT_EQ(closed.error_code(), grpc::StatusCode::UNAVAILABLE) << closed.error_message();
  EXPECT_EQ(loop_->Published()->FindJob("j1")->state(), v1::JOB_STATE_ADMITTED);
}

}  // namespace
}  // namespace tidegate::service
