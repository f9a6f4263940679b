// ListLoans in pages, through the real QuotaService handler on an in-process
// gRPC server: order, tokens, the end of the list.
#include <memory>
#include <string>
#include <vector>

#include "broker/service/services.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kConfig[] = R"pb(
  clusters { name: "a" capacity { key: "gpu" value: 8 } }
  teams { name: "research" quota { key: "gpu" value { guaranteed: 4 } } }
  teams { name: "serving" quota { key: "gpu" value { guaranteed: 4 } } }
)pb";

TEST(ListLoansPagesTest, PagesFollowDayBorrowerLenderResourceAndEndWithoutAToken) {
  v1::Config config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kConfig, &config));
  FakeClock clock(0);
  auto loop = CoreLoop::Open(config, ledger::NewMemoryStore(), &clock, CoreLoopOptions{}, /*init=*/true);
  ASSERT_TRUE(loop.ok()) << loop.status();
  auto reader = ledger::NewMemoryStore();
  ledger::Batch rows;
  for (const char* day : {"2026-11-02", "2026-11-01", "2026-11-03"}) {
    rows.loans.push_back({"research", "serving", "gpu", day, 3600});
    rows.loans.push_back({"serving", "research", "gpu", day, 7200});
  }
  ASSERT_TRUE(reader->Commit(rows).ok());
  QuotaServiceImpl quota(loop->get(), std::move(reader));
  grpc::ServerBuilder builder;
  builder.RegisterService(&quota);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = v1::QuotaService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));

  v1::ListLoansRequest req;
  req.set_page_size(4);
  std::vector<std::string> seen;
  std::vector<int> sizes;
  do {
    grpc::ClientContext ctx;
    v1::ListLoansResponse resp;
    ASSERT_TRUE(stub->ListLoans(&ctx, req, &resp).ok());
    sizes.push_back(resp.loans_size());
    for (const auto& l : resp.loans()) seen.push_back(l.day() + " " + l.borrower());
    req.set_page_token(resp.next_page_token());
  } while (!req.page_token().empty() && sizes.size() < 10);
  EXPECT_THAT(sizes, ElementsAre(4, 2));
  EXPECT_THAT(seen, ElementsAre("2026-11-01 research", "2026-11-01 serving", "2026-11-02 research",
                                "2026-11-02 serving", "2026-11-03 research", "2026-11-03 serving"));

  // A token made for another team's loans is refused.
  v1::ListLoansRequest first;
  first.set_page_size(1);
  grpc::ClientContext ctx1;
  v1::ListLoansResponse resp1;
  ASSERT_TRUE(stub->ListLoans(&ctx1, first, &resp1).ok());
  v1::ListLoansRequest other;
  other.set_team("research");
  other.set_page_token(resp1.next_page_token());
  grpc::ClientContext ctx2;
  v1::ListLoansResponse resp2;
  const grpc::Status s = stub->ListLoans(&ctx2, other, &resp2);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("page_token"));
  server->Shutdown();
}

}  // namespace
}  // namespace tidegate::service
