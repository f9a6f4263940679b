#include "adapters/agent/agent.h"

#include <chrono>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace tidegate::adapters {

namespace {

std::string SeeJob(const std::string& id) { return absl::StrCat("; see `tidegate job ", id, "`"); }

const ClusterJob* Find(const ClusterView& view, const std::string& id) {
  for (const auto& j : view.jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

}  // namespace

// One Connect stream: the reader thread queues actions until the stream ends.
struct Agent::Stream {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::BrokerAction>> rw;
  std::thread reader;
  absl::Mutex mu;
  std::deque<v1::BrokerAction> actions ABSL_GUARDED_BY(mu);
  bool broken ABSL_GUARDED_BY(mu) = false;

  // Ends the call (a no-op if the broker already ended it) and returns how it ended.
  grpc::Status Close() {
    if (closed) return grpc::Status::OK;
    closed = true;
    if (!reader_done) ctx.TryCancel();  // else the broker's own status is kept.
    if (reader.joinable()) reader.join();
    return rw ? rw->Finish() : grpc::Status::OK;
  }
  bool closed = false;
  std::atomic<bool> reader_done{false};
  ~Stream() { Close(); }
};

Agent::Agent(AgentOptions options, std::shared_ptr<grpc::Channel> channel, ClusterDriver* driver)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      agents_(v1::AgentService::NewStub(channel_)),
      admission_(v1::AdmissionService::NewStub(channel_)),
      driver_(driver),
      own_clock_(options_.clock ? nullptr : std::make_unique<SystemAgentClock>()),
      clock_(options_.clock ? options_.clock : own_clock_.get()) {}

Agent::~Agent() = default;

void Agent::FollowLeader() {
  if (!options_.find_leader) return;
  std::shared_ptr<grpc::Channel> leader = options_.find_leader();
  if (leader == nullptr || leader == channel_) return;
  channel_ = std::move(leader);
  agents_ = v1::AgentService::NewStub(channel_);
  admission_ = v1::AdmissionService::NewStub(channel_);
}

void Agent::Stop() {
  stop_ = true;
  clock_->Notify();
}

void Agent::Sleep(int64_t ms) {
  clock_->Sleep(ms, [&] {
    if (stop_) return true;
    if (!stream_) return false;
    absl::MutexLock s(&stream_->mu);
    return !stream_->actions.empty() || stream_->broken;
  });
}

int Agent::Run() {
  int64_t backoff = 0;
  auto fail = [&] {
    backoff = backoff == 0 ? 500 : std::min(backoff * 2, options_.max_backoff_ms);
    return backoff;
  };
  while (!stop_) {
    if (!stream_) {
      if (!Poll()) {
        Sleep(fail());
        continue;
      }
      if (!Connect()) {
        stream_.reset();
        FollowLeader();
        Sleep(fail());
        continue;
      }
      backoff = 0;
    }
    HandleActions();
    EnforceDeadlines();
    const bool observed = Poll();
    bool broken;
    {
      absl::MutexLock s(&stream_->mu);
      broken = stream_->broken;
    }
    if (broken) {
      const grpc::Status why = stream_->Close();
      spdlog::warn("broker stream ended ({}: {}); reconnecting (the view will be replayed)",
                   static_cast<int>(why.error_code()), why.error_message());
      stream_.reset();
      synced_ = false;
      admitted_.clear();
      FollowLeader();
      Sleep(fail());
      continue;
    }
    if (observed) backoff = 0;
    Sleep(observed ? options_.poll_ms : fail());
  }
  stream_.reset();
  return 0;
}

bool Agent::Connect() {
  stream_ = std::make_unique<Stream>();
  Stream* s = stream_.get();
  s->rw = agents_->Connect(&s->ctx);
  s->reader = std::thread([this, s] {
    v1::BrokerAction a;
    // Never holds s->mu and the clock's lock together (Sleep takes them the other way round).
    auto wake = [this] { clock_->Notify(); };
    while (s->rw->Read(&a)) {
      {
        absl::MutexLock lock(&s->mu);
        s->actions.push_back(a);
      }
      wake();
    }
    s->reader_done = true;
    {
      absl::MutexLock lock(&s->mu);
      s->broken = true;
    }
    wake();
  });
  v1::AgentMessage hello;
  hello.mutable_hello()->set_cluster(options_.cluster);
  hello.mutable_hello()->set_kind(options_.kind);
  hello.mutable_hello()->set_agent_id(options_.agent_id);
  if (!Send(hello)) return false;
  v1::AgentMessage cap;
  for (const auto& [r, q] : view_.capacity) (*cap.mutable_capacity()->mutable_capacity())[r] = q;
  if (!Send(cap)) return false;
  sent_capacity_ = view_.capacity;
  capacity_sent_ = true;
  v1::AgentMessage view;
  view.mutable_view();  // sent even when empty: the broker answers it with `synced`.
  for (const auto& j : view_.jobs) {
    if (j.phase == JobPhase::kEnded || !j.problem.empty()) continue;
    v1::ObservedJob* o = view.mutable_view()->add_jobs();
    *o->mutable_spec() = j.spec;
    o->set_running(j.phase == JobPhase::kRunning || j.phase == JobPhase::kPending);
  }
  if (!Send(view)) return false;
  spdlog::info("connected to the broker for cluster {}: sent a view of {} jobs", options_.cluster,
               view.view().jobs_size());
  return true;
}

bool Agent::Send(const v1::AgentMessage& m) {
  if (!stream_ || !stream_->rw->Write(m)) {
    if (stream_) {
      absl::MutexLock s(&stream_->mu);
      stream_->broken = true;
    }
    return false;
  }
  return true;
}

void Agent::Ack(int64_t action, const std::string& job, const absl::Status& s) {
  v1::AgentMessage m;
  m.mutable_ack()->set_action_id(action);
  m.mutable_ack()->set_job(job);
  m.mutable_ack()->set_ok(s.ok());
  if (!s.ok()) m.mutable_ack()->set_error(std::string(s.message()));
  Send(m);
}

void Agent::HandleActions() {
  std::deque<v1::BrokerAction> actions;
  {
    absl::MutexLock s(&stream_->mu);
    actions.swap(stream_->actions);
  }
  for (const auto& a : actions) {
    switch (a.kind_case()) {
      case v1::BrokerAction::kSynced:
        synced_ = true;
        spdlog::info("the broker reconciled our view (seq {})", a.synced().seq());
        break;
      case v1::BrokerAction::kStart: {
        const std::string& id = a.start().job();
        const ClusterJob* j = Find(view_, id);
        if (!j || j->phase == JobPhase::kEnded) {
          spdlog::warn("start {}: not a job of this cluster (any more); reporting it ended", id);
          Ack(a.action_id(), id, absl::NotFoundError("no such job in the cluster"));
          v1::AgentMessage m;
          m.mutable_ended()->set_job(id);
          m.mutable_ended()->set_reason("not in the cluster");
          Send(m);
          break;
        }
        absl::Status s = j->phase == JobPhase::kWaiting ? driver_->Start(id) : absl::OkStatus();
        if (s.ok()) spdlog::info("start {}: released", id);
        else spdlog::warn("start {}: {}", id, std::string(s.message()));
        Ack(a.action_id(), id, s);
        break;
      }
      case v1::BrokerAction::kEvict: {
        const std::string& id = a.evict().job();
        const ClusterJob* j = Find(view_, id);
        if (!j || j->phase == JobPhase::kEnded) {
          Ack(a.action_id(), id, absl::OkStatus());
          v1::AgentMessage m;
          m.mutable_ended()->set_job(id);
          m.mutable_ended()->set_reason("not in the cluster");
          Send(m);
          break;
        }
        if (j->phase == JobPhase::kWaiting) {  // never ran: nothing to stop.
          Ack(a.action_id(), id, absl::OkStatus());
          v1::AgentMessage m;
          m.mutable_gone()->set_job(id);
          m.mutable_gone()->set_reason("still held");
          Send(m);
          break;
        }
        const int64_t left = a.evict().grace_deadline_ms() - clock_->NowMs();
        spdlog::info("evict {} ({}): SIGTERM now, stopped in {} ms unless it leaves first", id, a.evict().reason(),
                     std::max<int64_t>(0, left));
        absl::Status s = driver_->Signal(id);
        if (!s.ok()) spdlog::warn("evict {}: {}", id, std::string(s.message()));
        draining_[id] = a.evict().grace_deadline_ms();
        Ack(a.action_id(), id, s);
        break;
      }
      case v1::BrokerAction::kResize:
        Ack(a.action_id(), a.resize().job(), absl::UnimplementedError("this cluster's jobs are rigid"));
        break;
      default:
        break;
    }
  }
}

void Agent::EnforceDeadlines() {
  const int64_t now = clock_->NowMs();
  for (const auto& [id, deadline] : draining_) {
    if (now < deadline || stopped_.contains(id)) continue;
    const ClusterJob* j = Find(view_, id);
    if (!j || j->phase == JobPhase::kEnded || j->phase == JobPhase::kWaiting) continue;
    absl::Status s = driver_->Stop(id);
    if (s.ok()) spdlog::info("evict {}: grace period over, stopped", id);
    else spdlog::warn("evict {}: stop failed: {}", id, std::string(s.message()));
    if (s.ok()) stopped_.insert(id);
  }
}

bool Agent::Poll() {
  auto observed = driver_->Observe();
  if (!observed.ok()) {
    spdlog::warn("cannot observe cluster {}: {}", options_.cluster, std::string(observed.status().message()));
    return false;
  }
  if (stream_) {
    if (!capacity_sent_ || observed->capacity != sent_capacity_) {
      v1::AgentMessage cap;
      for (const auto& [r, q] : observed->capacity) (*cap.mutable_capacity()->mutable_capacity())[r] = q;
      if (Send(cap)) {
        sent_capacity_ = observed->capacity;
        capacity_sent_ = true;
      }
    }
    if (have_view_) Diff(*observed);
  }
  view_ = *std::move(observed);
  have_view_ = true;
  if (stream_ && synced_) AdmitWaiting(view_);
  return true;
}

void Agent::Diff(const ClusterView& now) {
  std::map<std::string, const ClusterJob*> before;
  for (const auto& j : view_.jobs) before[j.id] = &j;
  for (const auto& j : now.jobs) {
    auto it = before.find(j.id);
    const ClusterJob* prev = it == before.end() ? nullptr : it->second;
    if (prev) before.erase(it);
    const bool was_running = prev && (prev->phase == JobPhase::kRunning || prev->phase == JobPhase::kPending);
    if (j.phase == JobPhase::kRunning && (!prev || prev->phase != JobPhase::kRunning)) {
      if (j.problem.empty()) {
        v1::AgentMessage m;
        *m.mutable_started()->mutable_spec() = j.spec;
        m.mutable_started()->set_replicas(j.spec.replicas());
        Send(m);
      } else {
        spdlog::warn("{} runs although it cannot be admitted: {}", j.id, j.problem);
      }
    }
    if (j.phase == JobPhase::kWaiting && was_running) {
      v1::AgentMessage m;
      m.mutable_gone()->set_job(j.id);
      m.mutable_gone()->set_reason(absl::StrCat("back to waiting (", j.state, ")"));
      Send(m);
      draining_.erase(j.id);
      stopped_.erase(j.id);
      admitted_.erase(j.id);  // admitted again if the broker dropped it.
    }
    if (j.phase == JobPhase::kEnded && prev && prev->phase != JobPhase::kEnded) {
      // A requeueable victim that stopped on SIGTERM without success (killed,
      // or exited non-zero after its checkpoint) waits, held, for its next
      // admission; one that completed (exit 0) is done.
      if (draining_.contains(j.id) && j.spec.requeue() && j.state != "COMPLETED") {
        if (auto s = driver_->Requeue(j.id); s.ok()) {
          spdlog::info("evict {}: it stopped ({}); requeued, held", j.id, j.state);
          v1::AgentMessage m;
          m.mutable_gone()->set_job(j.id);
          m.mutable_gone()->set_reason(absl::StrCat("stopped (", j.state, "), requeued held"));
          Send(m);
          draining_.erase(j.id);
          stopped_.erase(j.id);
          admitted_.erase(j.id);
          continue;
        } else {
          spdlog::warn("evict {}: cannot requeue it: {}", j.id, std::string(s.message()));
        }
      }
      v1::AgentMessage m;
      m.mutable_ended()->set_job(j.id);
      m.mutable_ended()->set_reason(j.state);
      Send(m);
      draining_.erase(j.id);
      stopped_.erase(j.id);
      admitted_.erase(j.id);
    }
  }
  for (const auto& [id, prev] : before) {  // purged from the scheduler.
    if (prev->phase == JobPhase::kEnded) continue;
    v1::AgentMessage m;
    m.mutable_ended()->set_job(id);
    m.mutable_ended()->set_reason("no longer in the cluster");
    Send(m);
    draining_.erase(id);
    stopped_.erase(id);
    admitted_.erase(id);
  }
}

void Agent::AdmitWaiting(const ClusterView& now) {
  // What the broker knows of this cluster, once per poll.
  std::map<std::string, v1::JobInfo> known;
  bool any_waiting = false;
  for (const auto& j : now.jobs) any_waiting = any_waiting || j.phase == JobPhase::kWaiting || j.phase == JobPhase::kPending;
  if (!any_waiting) return;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::ListJobsRequest req;
    req.set_cluster(options_.cluster);  // all an agent role may list
    v1::ListJobsResponse resp;
    grpc::Status s = admission_->ListJobs(&ctx, req, &resp);
    if (!s.ok()) {
      spdlog::warn("ListJobs: {}", s.error_message());
      return;
    }
    for (auto& j : *resp.mutable_jobs()) {
      if (j.cluster() == options_.cluster) known[j.job()] = std::move(j);
    }
  }
  for (const auto& j : now.jobs) {
    auto k = known.find(j.id);
    if (j.phase == JobPhase::kPending) {
      // Released (by its user or an admin), not running yet, and not admitted
      // by the broker: hold it again before it starts.
      const bool admitted = k != known.end() && k->second.state() != v1::JOB_STATE_QUEUED;
      if (!admitted) {
        spdlog::warn("{} waits unheld although the broker did not admit it: holding it", j.id);
        if (auto s = driver_->Hold(j.id); !s.ok()) spdlog::warn("hold {}: {}", j.id, std::string(s.message()));
      }
      continue;
    }
    if (j.phase != JobPhase::kWaiting) continue;
    if (!j.problem.empty()) {
      const std::string note = absl::StrCat("tidegate: held: ", j.problem);
      if (j.note != note) {
        spdlog::warn("{} stays held: {}", j.id, j.problem);
        driver_->Annotate(j.id, note).ok();
      }
      continue;
    }
    if (k != known.end()) {
      admitted_.insert(j.id);
      if (k->second.state() == v1::JOB_STATE_QUEUED) {
        const std::string note = absl::StrCat("tidegate: queued: ", k->second.reason(), SeeJob(j.id));
        if (j.note != note) driver_->Annotate(j.id, note).ok();
      }
      continue;
    }
    if (admitted_.contains(j.id)) continue;  // answered; the broker ended it since: wait for the next view.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::AdmitRequest req;
    *req.mutable_job() = j.spec;
    v1::AdmitResponse resp;
    grpc::Status s = admission_->Admit(&ctx, req, &resp);
    std::string note;
    if (s.ok()) {
      admitted_.insert(j.id);
      switch (resp.decision()) {
        case v1::DECISION_QUEUED:
          note = absl::StrCat("tidegate: queued: ", resp.reason(), SeeJob(j.id));
          break;
        case v1::DECISION_RECLAIMING:
        case v1::DECISION_PREEMPTING:
          note = absl::StrCat("tidegate: admitted once ", resp.victims_size(), " victim(s) drain", SeeJob(j.id));
          break;
        default:
          break;  // admitted: the start action releases it.
      }
      spdlog::info("admit {} (team {}): {}", j.id, j.spec.team(), v1::Decision_Name(resp.decision()));
    } else if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
               s.error_code() == grpc::StatusCode::ALREADY_EXISTS) {
      admitted_.insert(j.id);  // not retried until the agent reconnects.
      note = absl::StrCat("tidegate: held: the broker refused it: ", s.error_message());
      spdlog::warn("admit {}: refused, stays held: {}", j.id, s.error_message());
    } else {
      spdlog::warn("admit {}: {} (retrying)", j.id, s.error_message());
      continue;
    }
    if (!note.empty() && note != j.note) driver_->Annotate(j.id, note).ok();
  }
}

}  // namespace tidegate::adapters
