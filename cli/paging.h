// Reads every page of a paginated list (ListJobs, ListLoans) into one
// response, so commands print whole lists while the broker answers in
// bounded pages (docs/limits.md).
#ifndef TIDEGATE_CLI_PAGING_H_
#define TIDEGATE_CLI_PAGING_H_

#include <memory>

#include "cli/client.h"
#include "grpcpp/grpcpp.h"

namespace tidegate::cli {

// Calls `call(context, request, page)` for the first page on `first`, then
// for each next page on a fresh context with the client's deadline, until a
// page has no next_page_token. Pages are appended to *all (repeated fields
// concatenate); *all ends with an empty next_page_token.
template <typename Request, typename Response, typename Call>
grpc::Status FetchAllPages(const Client& client, grpc::ClientContext* first, Request request, Response* all,
                           Call call) {
  grpc::ClientContext* context = first;
  std::unique_ptr<grpc::ClientContext> next;
  while (true) {
    Response page;
    const grpc::Status status = call(context, request, &page);
    if (!status.ok()) return status;
    const std::string token = page.next_page_token();
    all->MergeFrom(page);
    if (token.empty()) break;
    request.set_page_token(token);
    next = std::make_unique<grpc::ClientContext>();
    client.SetDeadline(next.get());
    context = next.get();
  }
  all->clear_next_page_token();
  return grpc::Status::OK;
}

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_PAGING_H_
