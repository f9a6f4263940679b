#include "adapters/kubernetes/kube_elastic.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tidegate::adapters::kube {

ElasticFollower::ElasticFollower(std::shared_ptr<grpc::Channel> channel, KubeDriver* driver, std::string cluster,
                                 int64_t poll_ms)
    : admission_(v1::AdmissionService::NewStub(channel)),
      elastic_(v1::ElasticService::NewStub(channel)),
      driver_(driver),
      cluster_(std::move(cluster)),
      poll_ms_(poll_ms) {}

void ElasticFollower::Stop() {
  stop_ = true;
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

void ElasticFollower::Run() {
  while (!stop_) {
    Once();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [&] { return stop_.load(); });
  }
}

void ElasticFollower::Once() {
  const auto parallelism = driver_->ElasticParallelism();
  if (parallelism.empty()) return;
  std::vector<v1::JobInfo> jobs;
  v1::ListJobsRequest req;
  req.set_cluster(cluster_);  // all an agent role may list
  do {  // every page: a broker with many live jobs answers in pages.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListJobsResponse resp;
    if (grpc::Status s = admission_->ListJobs(&ctx, req, &resp); !s.ok()) {
      spdlog::warn("elastic: ListJobs: {}", s.error_message());
      return;
    }
    for (auto& j : *resp.mutable_jobs()) jobs.push_back(std::move(j));
    req.set_page_token(resp.next_page_token());
  } while (!req.page_token().empty());
  for (const v1::JobInfo& j : jobs) {
    auto it = parallelism.find(j.job());
    if (j.cluster() != cluster_ || it == parallelism.end()) continue;
    if (j.state() != v1::JOB_STATE_ADMITTED && j.state() != v1::JOB_STATE_DRAINING) continue;
    if (!j.has_resize() || j.resize().epoch() == 0) {
      if (j.state() == v1::JOB_STATE_ADMITTED && it->second != j.replicas() && j.replicas() > 0) {
        spdlog::info("elastic {}: parallelism {} -> {} (the size the broker counts)", j.job(), it->second, j.replicas());
        if (auto s = driver_->SetParallelism(j.job(), j.replicas()); !s.ok()) {
          spdlog::warn("elastic {}: {}", j.job(), std::string(s.message()));
        }
      }
      continue;
    }
    const v1::ResizeRequest& r = j.resize();
    if (acked_.contains({j.job(), r.epoch()})) continue;
    if (it->second != r.target_replicas()) {
      spdlog::info("resize {} epoch {} ({}): parallelism {} -> {}", j.job(), r.epoch(), r.reason(), it->second,
                   r.target_replicas());
      if (auto s = driver_->SetParallelism(j.job(), r.target_replicas()); !s.ok()) {
        spdlog::warn("resize {}: {}", j.job(), std::string(s.message()));
      }
      continue;  // acked once the pods follow.
    }
    auto pods = driver_->Pods(j.job());
    if (!pods || pods->active != r.target_replicas() || pods->terminating != 0) continue;
    grpc::ClientContext actx;
    actx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AckResizeRequest ack;
    ack.set_job(j.job());
    ack.set_epoch(r.epoch());
    ack.set_replicas(r.target_replicas());
    v1::AckResizeResponse aresp;
    grpc::Status s = elastic_->AckResize(&actx, ack, &aresp);
    if (s.ok() || s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      acked_.insert({j.job(), r.epoch()});
      spdlog::info("resize {} epoch {}: {} pods run; acked{}", j.job(), r.epoch(), r.target_replicas(),
                   s.ok() ? "" : absl::StrCat(" (stale: ", s.error_message(), ")"));
    } else {
      spdlog::warn("resize {}: AckResize: {}", j.job(), s.error_message());
    }
  }
}

}  // namespace tidegate::adapters::kube
