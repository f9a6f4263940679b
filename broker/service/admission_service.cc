#include <algorithm>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "broker/service/pagination.h"
#include "broker/core/config.h"
#include "broker/core/names.h"
#include "broker/service/queued_writer.h"
#include "broker/service/services.h"

namespace tidegate::service {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status UnknownJob(const CoreLoop::Lookup& lookup, const std::string& id) {
  if (lookup.outcome_unknown) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat(lookup.ledger_health.message(), "; whether job '", id,
                                     "' is known cannot be told until the ledger can be read, retry later"));
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("job '", id, "' is not known"));
}

namespace {

const core::Event* FindEvent(const Applied& a, const std::string& job, core::EventType type) {
  for (const auto& e : a.events) {
    if (e.job == job && e.type == type) return &e;
  }
  return nullptr;
}

bool Retained(const v1::JobInfo& j) {
  return j.state() == v1::JOB_STATE_ENDED || j.state() == v1::JOB_STATE_REJECTED;
}

// INVALID_ARGUMENT for a job id no job can have, before anything is queued or
// journalled; `field` names it as the request does.
grpc::Status CheckJobId(const std::string& field, const std::string& id) {
  if (id.empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, field + ": the job id is empty");
  if (absl::Status s = core::ValidateName(field, id); !s.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(s.message()));
  }
  return grpc::Status::OK;
}

// The job as published (live or retained); its queue position (a scan of the
// team's queue) only when asked for, since Admit is the hot path.
// Built straight into the reply (moved, not copied).
void FillJob(const ReadModel& model, const std::string& id, v1::JobInfo* out, bool with_position) {
  if (const JobRecord* r = model.FindRecord(id)) {
    *out = r->ToInfo(id);
    out->set_reason(model.ReasonNow(*out));
    if (with_position) out->set_queue_position(model.QueuePosition(*out));
  }
}

// Completes a command about an existing job: OK, or NOT_FOUND when the core
// no longer knew the job (it ended between the check and the command).
Done FinishOkUnlessUnknown(grpc::ServerUnaryReactor* reactor, std::string id) {
  return [reactor, id = std::move(id)](absl::StatusOr<Applied> applied) {
    if (!applied.ok()) {
      reactor->Finish(ToGrpc(applied.status()));
      return;
    }
    if (const auto* e = FindEvent(*applied, id, core::EventType::kError)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, e->reason));
      return;
    }
    reactor->Finish(grpc::Status::OK);
  };
}

}  // namespace

grpc::ServerUnaryReactor* AdmissionServiceImpl::Admit(grpc::CallbackServerContext* ctx, const v1::AdmitRequest* req,
                                                      v1::AdmitResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const std::string id = req->job().job();
  if (grpc::Status bad = CheckJobId("job.job", id); !bad.ok()) {
    reactor->Finish(bad);
    return reactor;
  }
  // Queue order follows the broker's clock, and work is what the job does:
  // only the simulator may state them.
  for (const auto& [set, field] : {std::pair{req->job().has_created_at(), "created_at"},
                                   std::pair{req->job().has_run_s(), "run_s"}}) {
    if (set) {
      const std::string why = absl::StrCat("job.", field, ": is for the simulator only; the broker's "
                                           "clock orders its queue (leave it unset)");
      RememberRejection(req->job(), why);
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why));
      return reactor;
    }
  }
  internal::v1::Command cmd;
  *cmd.mutable_submit() = req->job();
  // `req` stays valid until the reactor is finished (gRPC's callback API), so
  // the answer reads the spec from it instead of keeping a copy per call.
  loop_->Submit(std::move(cmd), [this, reactor, req, resp, id](absl::StatusOr<Applied> applied) {
    if (!applied.ok()) {
      reactor->Finish(ToGrpc(applied.status()));
      return;
    }
    if (const auto* e = FindEvent(*applied, id, core::EventType::kReject)) {
      RememberRejection(req->job(), e->reason);
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, e->reason));
      return;
    }
    if (const auto* e = FindEvent(*applied, id, core::EventType::kError)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::ALREADY_EXISTS, e->reason));
      return;
    }
    rejections_.Forget(id);  // accepted now: an earlier rejection of the id is history.
    const auto* admit = FindEvent(*applied, id, core::EventType::kAdmit);
    const auto* reclaim = FindEvent(*applied, id, core::EventType::kReclaim);
    const auto* queue = FindEvent(*applied, id, core::EventType::kQueue);
    if (reclaim) {
      resp->set_decision(reclaim->decision);
      for (const auto& v : reclaim->victims) resp->add_victims(v);
    }
    if (admit) {
      bool borrowing = false;
      for (const auto& [name, q] : admit->borrowed) {
        if (q > 0) {
          borrowing = true;
          (*resp->mutable_borrowed())[name] = q;
        }
      }
      // Victims that left at once (grace 0) make room in the same instant.
      resp->set_decision(borrowing ? v1::DECISION_ADMITTED_BORROWING : v1::DECISION_ADMITTED);
    } else if (queue && !reclaim) {
      resp->set_decision(v1::DECISION_QUEUED);
      resp->set_reason(queue->reason);
    }
    FillJob(*applied->model, id, resp->mutable_job(), /*with_position=*/false);
    if (resp->decision() == v1::DECISION_UNSPECIFIED) {
      // The same id with the same spec: the existing decision.
      const v1::JobInfo& j = resp->job();
      if (j.state() == v1::JOB_STATE_ENDED) {
        resp->set_decision(v1::DECISION_ENDED);  // a retry: finished work is not started again.
      } else if (j.state() == v1::JOB_STATE_QUEUED) {
        resp->set_decision(v1::DECISION_QUEUED);
        resp->set_reason(j.reason());
      } else if (j.state() == v1::JOB_STATE_ADMITTED || j.state() == v1::JOB_STATE_DRAINING) {
        resp->set_decision(j.borrowing() ? v1::DECISION_ADMITTED_BORROWING : v1::DECISION_ADMITTED);
        *resp->mutable_borrowed() = j.borrowed();  // as the admission (or latest resize) answered it
      } else {
        // The model answered from lacks the job: never guess a decision.
        reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     absl::StrCat("job ", id, ": its decision is not known here; retry")));
        return;
      }
    }
    if (resp->reason().empty()) resp->set_reason(resp->job().reason());
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

void AdmissionServiceImpl::RememberRejection(const v1::JobSpec& spec, const std::string& reason) {
  auto model = loop_->Published();
  const auto& policy = model->config().policy();
  const int64_t retention_s =
      policy.has_ended_job_retention_s() ? policy.ended_job_retention_s() : core::kDefaultEndedJobRetentionS;
  rejections_.Record(spec, model->FindTeam(spec.team()) != nullptr, reason, model->now_ms(),
                     retention_s * core::kMillisPerSecond);
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::Release(grpc::CallbackServerContext* ctx,
                                                        const v1::ReleaseRequest* req, v1::ReleaseResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  const std::string id = req->job();
  if (grpc::Status bad = CheckJobId("job", id); !bad.ok()) {
    reactor->Finish(bad);
    return reactor;
  }
  const CoreLoop::Lookup lookup = loop_->PublishedForLookup();
  const ReadModel* model = lookup.model.get();
  if (const JobRecord* r = model->FindRecord(id)) {
    *resp->mutable_job() = r->ToInfo(id);
    if (Retained(resp->job())) {  // released already: releasing again changes nothing.
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
  } else if (grpc::Status unknown = UnknownJob(lookup, id); unknown.error_code() != grpc::StatusCode::NOT_FOUND) {
    reactor->Finish(unknown);
    return reactor;
  } else if (auto rejected = rejections_.Find(id, model->now_ms())) {
    *resp->mutable_job() = *rejected;  // it never started: nothing to release.
    reactor->Finish(grpc::Status::OK);
    return reactor;
  } else {
    reactor->Finish(unknown);
    return reactor;
  }
  internal::v1::Command cmd;
  cmd.set_finish(id);
  loop_->Submit(std::move(cmd), FinishOkUnlessUnknown(reactor, id));
  return reactor;
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::ReportCheckpoint(grpc::CallbackServerContext* ctx,
                                                                 const v1::ReportCheckpointRequest* req,
                                                                 v1::ReportCheckpointResponse*) {
  auto* reactor = ctx->DefaultReactor();
  const std::string id = req->job();
  if (grpc::Status bad = CheckJobId("job", id); !bad.ok()) {
    reactor->Finish(bad);
    return reactor;
  }
  const CoreLoop::Lookup lookup = loop_->PublishedForLookup();
  const JobRecord* known = lookup.model->FindRecord(id);
  if (!known) {
    reactor->Finish(UnknownJob(lookup, id));
    return reactor;
  }
  // A late report of an ended job changes nothing.
  if (known->state() == v1::JOB_STATE_ENDED || known->state() == v1::JOB_STATE_REJECTED) {
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  internal::v1::Command cmd;
  cmd.set_checkpoint(id);
  loop_->Submit(std::move(cmd), FinishOkUnlessUnknown(reactor, id));
  return reactor;
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::ListJobs(grpc::CallbackServerContext* ctx,
                                                         const v1::ListJobsRequest* req, v1::ListJobsResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (!v1::JobState_IsValid(req->state())) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 absl::StrCat("state: ", req->state(), " is not a job state")));
    return reactor;
  }
  auto model = loop_->Published();
  if (!req->team().empty() && !model->FindTeam(req->team())) {
    reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("team '", req->team(), "' is not a team")));
    return reactor;
  }
  const std::string query = absl::StrCat("jobs/", req->state(), "/", req->team(), "/", req->cluster());
  auto page = ParsePage(req->page_size(), req->page_token(), query);
  if (!page.ok()) {
    reactor->Finish(ToGrpc(page.status()));
    return reactor;
  }
  // One more than the page tells whether another page follows.
  auto jobs = model->JobsAfter(req->team(), req->state(), page->after, static_cast<size_t>(page->size) + 1,
                               req->cluster());
  if (req->state() == v1::JOB_STATE_REJECTED) {
    // The service's rejections are kept beside the model (recent_rejections.h).
    for (auto& r : rejections_.After(req->team(), page->after, static_cast<size_t>(page->size) + 1,
                                     model->now_ms())) {
      if (!req->cluster().empty() && r.cluster() != req->cluster()) continue;
      jobs.push_back(std::make_shared<const v1::JobInfo>(std::move(r)));
    }
    std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a->job() < b->job(); });
    jobs.erase(std::unique(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a->job() == b->job(); }),
               jobs.end());
    if (jobs.size() > static_cast<size_t>(page->size) + 1) jobs.resize(page->size + 1);
  }
  if (jobs.size() > static_cast<size_t>(page->size)) {
    jobs.resize(page->size);
    resp->set_next_page_token(PageToken(query, jobs.back()->job()));
  }
  // Queue positions, in one pass over the queues of the page's teams:
  // priority, created_at, id.
  absl::flat_hash_set<std::string> teams;
  for (const auto& j : jobs) {
    if (j->state() == v1::JOB_STATE_QUEUED) teams.insert(j->team());
  }
  std::vector<std::shared_ptr<const v1::JobInfo>> queued;
  if (!teams.empty()) {
    for (const auto& j : model->Jobs(teams.size() == 1 ? *teams.begin() : req->team(), v1::JOB_STATE_QUEUED)) {
      if (teams.contains(j->team())) queued.push_back(j);
    }
  }
  std::sort(queued.begin(), queued.end(), [](const auto& a, const auto& b) {
    if (a->team() != b->team()) return a->team() < b->team();
    if (a->priority() != b->priority()) return a->priority() > b->priority();
    if (a->created_at_ms() != b->created_at_ms()) return a->created_at_ms() < b->created_at_ms();
    return a->job() < b->job();
  });
  absl::flat_hash_map<std::string, int64_t> position;
  for (size_t i = 0; i < queued.size(); ++i) {
    const bool first = i == 0 || queued[i - 1]->team() != queued[i]->team();
    position[queued[i]->job()] = first ? 1 : position[queued[i - 1]->job()] + 1;
  }
  for (const auto& j : jobs) {
    v1::JobInfo* out = resp->add_jobs();
    *out = *j;
    out->set_reason(model->ReasonNow(*j));
    if (auto it = position.find(j->job()); it != position.end()) out->set_queue_position(it->second);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* AdmissionServiceImpl::GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                                       v1::JobInfo* resp) {
  auto* reactor = ctx->DefaultReactor();
  if (grpc::Status bad = CheckJobId("job", req->job()); !bad.ok()) {
    reactor->Finish(bad);
    return reactor;
  }
  const CoreLoop::Lookup lookup = loop_->PublishedForLookup();
  const ReadModel* model = lookup.model.get();
  if (!model->FindRecord(req->job())) {
    if (auto rejected = rejections_.Find(req->job(), model->now_ms())) {
      *resp = *std::move(rejected);
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    reactor->Finish(UnknownJob(lookup, req->job()));
    return reactor;
  }
  FillJob(*model, req->job(), resp, /*with_position=*/true);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

// A WaitAdmission stream: the job's state now, then every change, until it
// is admitted or gone.
class AdmissionServiceImpl::Waiter : public QueuedWriter<v1::WaitAdmissionResponse> {
 public:
  Waiter(AdmissionServiceImpl* svc, std::string job) : svc_(svc), job_(std::move(job)) {}

  void Start() {
    if (!svc_->waiters_.Add(job_, self<Waiter>())) {
      // Opened after shutdown began: UNAVAILABLE (retry elsewhere or later),
      // never left for the server's shutdown deadline to CANCEL.
      Close(ShuttingDown());
      return;
    }
    Check();
  }

  // Compares the published job with what was last sent; thread-safe.
  void Check() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (finished()) return;
    const CoreLoop::Lookup lookup = svc_->loop_->PublishedForLookup();
    const ReadModel* model = lookup.model.get();
    auto j = model->FindJobAny(job_);
    if (!j) {
      if (!sent_any_) {
        Done(UnknownJob(lookup, job_));
      } else {
        FinishAfterWrites();  // it ended (or was released) meanwhile.
      }
      return;
    }
    const std::string reason = model->ReasonNow(*j);
    if (!sent_any_ || j->state() != last_.state() || reason != last_.reason() ||
        j->replicas() != last_.replicas()) {
      v1::WaitAdmissionResponse r;
      *r.mutable_job() = *j;
      r.mutable_job()->set_reason(reason);
      r.mutable_job()->set_queue_position(model->QueuePosition(*j));
      last_ = r.job();
      sent_any_ = true;
      Send(std::move(r));
      if (j->state() == v1::JOB_STATE_ADMITTED || Retained(*j)) FinishAfterWrites();
    }
  }

 protected:
  void Unregister() override { svc_->waiters_.Remove(job_, this); }

 private:
  AdmissionServiceImpl* svc_;
  std::string job_;
  bool sent_any_ = false;
  v1::JobInfo last_;
};

grpc::Status CheckStreamRequestSize(const google::protobuf::Message& request, const CoreLoop& loop, const char* what) {
  const int64_t limit = loop.options().max_command_bytes;
  const size_t size = request.ByteSizeLong();
  if (static_cast<int64_t>(size) <= limit) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      absl::StrCat(what, ": the request is ", size, " bytes, more than the ", limit,
                                   " accepted (--max-request-bytes)"));
}

grpc::ServerWriteReactor<v1::WaitAdmissionResponse>* AdmissionServiceImpl::WaitAdmission(
    grpc::CallbackServerContext* ctx, const v1::WaitAdmissionRequest* req) {
  return OpenStream<Waiter>(ctx, streams_, "WaitAdmission", CheckStreamRequestSize(*req, *loop_, "WaitAdmission"),
                            this, req->job());
}

void AdmissionServiceImpl::CloseStreams() {
  waiters_.CloseAll(ShuttingDown());
}

void AdmissionServiceImpl::Notify(const PublishedChange& change) { waiters_.Wake(change.jobs); }

}  // namespace tidegate::service
