#include "cli/paging.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::cli {
namespace {

using ::testing::ElementsAre;

// A list of five jobs served two a page, as the broker would.
grpc::Status ServePage(const v1::ListJobsRequest& req, v1::ListJobsResponse* page, std::vector<std::string>* tokens) {
  const std::vector<std::string> ids = {"a", "b", "c", "d", "e"};
  tokens->push_back(req.page_token());
  size_t start = req.page_token().empty() ? 0 : std::stoul(req.page_token());
  for (size_t i = start; i < ids.size() && i < start + 2; ++i) page->add_jobs()->set_job(ids[i]);
  if (start + 2 < ids.size()) page->set_next_page_token(std::to_string(start + 2));
  return grpc::Status::OK;
}

TEST(PagingTest, ReadsEveryPageInOrderAndEndsWithoutAToken) {
  ClientOptions options;
  options.server = "127.0.0.1:1";  // never dialled: the call below is fake
  auto client = Client::Create(options);
  ASSERT_TRUE(client.ok()) << client.status();
  grpc::ClientContext first;
  v1::ListJobsRequest request;
  request.set_team("research");
  v1::ListJobsResponse all;
  std::vector<std::string> tokens;
  std::vector<grpc::ClientContext*> contexts;
  const grpc::Status status = FetchAllPages(
      **client, &first, request, &all,
      [&](grpc::ClientContext* ctx, const v1::ListJobsRequest& req, v1::ListJobsResponse* page) {
        contexts.push_back(ctx);
        EXPECT_EQ(req.team(), "research");  // the filter travels with every page
        return ServePage(req, page, &tokens);
      });
  ASSERT_TRUE(status.ok());
  std::vector<std::string> ids;
  for (const auto& j : all.jobs()) ids.push_back(j.job());
  EXPECT_THAT(ids, ElementsAre("a", "b", "c", "d", "e"));
  EXPECT_THAT(tokens, ElementsAre("", "2", "4"));
  EXPECT_TRUE(all.next_page_token().empty());
  ASSERT_EQ(contexts.size(), 3u);
  EXPECT_EQ(contexts[0], &first);
  EXPECT_NE(contexts[1], &first);  // a context serves one call only
}

TEST(PagingTest, AFailedPageIsTheAnswer) {
  ClientOptions options;
  options.server = "127.0.0.1:1";
  auto client = Client::Create(options);
  ASSERT_TRUE(client.ok());
  grpc::ClientContext first;
  v1::ListJobsResponse all;
  int calls = 0;
  const grpc::Status status =
      FetchAllPages(**client, &first, v1::ListJobsRequest(), &all,
                    [&](grpc::ClientContext*, const v1::ListJobsRequest&, v1::ListJobsResponse* page) {
                      if (++calls == 2) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone");
                      page->add_jobs()->set_job("a");
                      page->set_next_page_token("t");
                      return grpc::Status::OK;
                    });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace tidegate::cli
