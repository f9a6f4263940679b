#include "broker/service/agent_service.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "broker/service/auth_origin.h"
#include "broker/service/queued_writer.h"
#include "spdlog/spdlog.h"

namespace tidegate::service {

namespace {

// Logs what a command the agent caused did not do (unknown job, bad spec).
Done LogProblems(std::string what) {
  return [what = std::move(what)](absl::StatusOr<Applied> applied) {
    if (!applied.ok()) {
      spdlog::warn("agent: {}: {}", what, std::string(applied.status().message()));
      return;
    }
    for (const auto& e : applied->events) {
      if (e.type == core::EventType::kReject || e.type == core::EventType::kError) {
        spdlog::warn("agent: {}: {} {}: {}", what, core::EventTypeName(e.type), e.job, e.reason);
      }
    }
  };
}

}  // namespace

// One agent's stream.
class AgentServiceImpl::Connection
    : public QueuedWriter<v1::BrokerAction, grpc::ServerBidiReactor<v1::AgentMessage, v1::BrokerAction>> {
 public:
  // Opened inside the auth guard: the stream's principal is the current
  // origin. `claim_check` (may be unset) vets hello.cluster.
  Connection(AgentServiceImpl* svc, std::string peer, ClusterCheck claim_check)
      : svc_(svc), peer_(std::move(peer)), origin_(CurrentOrigin()), claim_check_(std::move(claim_check)) {}

  void Start() { StartRead(&in_); }

  const std::string& cluster() const { return cluster_; }

  // LogProblems, and when the broker refused the command (its queue is full,
  // or the ledger refuses writes), ends the stream: the agent reconnects and
  // replays its view, so nothing it saw (a job that ended) is lost for good.
  // Only these two: a command that ran and was rejected would be refused
  // again on replay.
  service::Done Logged(std::string what) {
    std::weak_ptr<Connection> weak = self<Connection>();
    return [weak, log = LogProblems(std::move(what))](absl::StatusOr<Applied> applied) {
      if (!applied.ok() && (applied.status().code() == absl::StatusCode::kResourceExhausted ||
                            applied.status().code() == absl::StatusCode::kUnavailable)) {
        if (auto self = weak.lock()) {
          self->Close(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   absl::StrCat(applied.status().message(), "; reconnect and send the view again")));
        }
      }
      log(std::move(applied));
    };
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the agent closed its side or went away.
      spdlog::info("agent {} ({}) disconnected", cluster_.empty() ? "?" : cluster_, agent_id_);
      Close(grpc::Status::OK);
      return;
    }
    {
      ScopedOrigin origin(origin_);  // the journal names the agent's principal
      Handle(in_);
    }
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (!finished()) StartRead(&in_);
  }

  // Queues the actions the published model calls for; thread-safe.
  void Check() {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (finished() || cluster_.empty()) return;
    auto model = svc_->loop_->Published();
    absl::flat_hash_set<std::string> admitted, draining;
    for (const auto& j : model->Jobs("", v1::JOB_STATE_ADMITTED)) {
      if (j->cluster() != cluster_) continue;
      admitted.insert(j->job());
      if (started_.insert(j->job()).second) {
        v1::BrokerAction a;
        a.mutable_start()->set_job(j->job());
        a.mutable_start()->set_replicas(j->replicas());
        SendAction(std::move(a));
      }
    }
    for (const auto& j : model->Jobs("", v1::JOB_STATE_DRAINING)) {
      if (j->cluster() != cluster_) continue;
      draining.insert(j->job());
      started_.insert(j->job());  // a victim is never started again on this stream.
      if (!evicted_.contains(j->job())) {
        const int64_t grace_ms = (j->spec().has_grace_s() ? j->spec().grace_s() : 0) * 1000;
        const int64_t deadline = model->now_ms() + grace_ms;
        evicted_[j->job()] = deadline;
        v1::BrokerAction a;
        a.mutable_evict()->set_job(j->job());
        a.mutable_evict()->set_grace_deadline_ms(deadline);
        a.mutable_evict()->set_reason(j->reason());
        SendAction(std::move(a));
      }
    }
    // A job that left those states may be admitted again later (a requeued
    // victim): it then gets a new start.
    for (auto it = started_.begin(); it != started_.end();) {
      auto cur = it++;
      if (!admitted.contains(*cur) && !draining.contains(*cur)) started_.erase(cur);
    }
    for (auto it = evicted_.begin(); it != evicted_.end();) {
      auto cur = it++;
      if (!draining.contains(cur->first)) evicted_.erase(cur);
    }
  }

 protected:
  void Unregister() override { svc_->Forget(this); }

 private:
  // About 95 lines: one case per kind of agent message, each a few lines that
  // turn it into a command for the loop; the switch reads as the protocol's table.
  void Handle(const v1::AgentMessage& m) {
    if (m.has_hello()) {
      OnHello(m.hello());
      return;
    }
    std::string cluster;
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished()) return;
      if (cluster_.empty()) {
        Done(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the first message must be hello"));
        return;
      }
      cluster = cluster_;
    }
    CoreLoop* loop = svc_->loop_;
    auto model = loop->Published();
    switch (m.kind_case()) {
      case v1::AgentMessage::kCapacity: {
        internal::v1::Command cmd;
        cmd.mutable_set_capacity()->set_cluster(cluster);
        *cmd.mutable_set_capacity()->mutable_capacity() = m.capacity().capacity();
        // Only a change is journalled.
        for (const auto& c : model->config().clusters()) {
          if (c.name() != cluster) continue;
          bool same = c.capacity().size() == m.capacity().capacity().size();
          for (const auto& [r, q] : m.capacity().capacity()) {
            auto it = c.capacity().find(r);
            if (it == c.capacity().end() || it->second != q) same = false;
          }
          if (same) return;
        }
        std::string text;
        for (const auto& [r, q] : m.capacity().capacity()) absl::StrAppend(&text, r, "=", q, " ");
        spdlog::info("agent {}: capacity {}", cluster, text);
        loop->Submit(std::move(cmd), Logged(absl::StrCat("capacity of ", cluster)));
        return;
      }
      case v1::AgentMessage::kView:
        Reconcile(cluster, *model, m.view());
        return;
      case v1::AgentMessage::kStarted: {
        const std::string& id = m.started().spec().job();
        auto j = model->FindJob(id);
        if (j && j->state() != v1::JOB_STATE_QUEUED) return;  // started as admitted.
        internal::v1::Command adopt;
        *adopt.mutable_adopt()->add_jobs() = m.started().spec();
        if (j) {
          spdlog::warn("agent {}: {} runs although the broker queued it; recording it as running", cluster, id);
          internal::v1::Command finish;
          finish.set_finish(id);
          loop->Submit(std::move(finish), Logged(absl::StrCat("finish ", id)));
        } else {
          spdlog::info("agent {}: adopting {}, which started outside the broker", cluster, id);
        }
        loop->Submit(std::move(adopt), Logged(absl::StrCat("adopt ", id)));
        return;
      }
      case v1::AgentMessage::kEnded: {
        const std::string& id = m.ended().job();
        if (!model->FindJob(id)) return;  // already gone (e.g. its grace period ended first).
        spdlog::info("agent {}: {} ended ({})", cluster, id, m.ended().reason());
        internal::v1::Command cmd;
        cmd.set_finish(id);
        loop->Submit(std::move(cmd), Logged(absl::StrCat("finish ", id)));
        return;
      }
      case v1::AgentMessage::kGone: {
        const std::string& id = m.gone().job();
        auto j = model->FindJob(id);
        if (!j || j->state() == v1::JOB_STATE_QUEUED) return;
        spdlog::info("agent {}: {} gone ({})", cluster, id, m.gone().reason());
        internal::v1::Command cmd;
        if (j->state() == v1::JOB_STATE_DRAINING) cmd.set_vacate(id);
        else cmd.set_finish(id);
        loop->Submit(std::move(cmd), Logged(absl::StrCat("gone ", id)));
        return;
      }
      case v1::AgentMessage::kAck:
        if (!m.ack().ok()) {
          spdlog::warn("agent {}: action {} on {} failed: {}", cluster, m.ack().action_id(), m.ack().job(),
                       m.ack().error());
        }
        return;
      case v1::AgentMessage::kReplicas: {
        internal::v1::Command cmd;
        cmd.mutable_ack_resize()->set_job(m.replicas().job());
        cmd.mutable_ack_resize()->set_epoch(m.replicas().epoch());
        cmd.mutable_ack_resize()->set_replicas(m.replicas().replicas());
        loop->Submit(std::move(cmd), Logged(absl::StrCat("replicas of ", m.replicas().job())));
        return;
      }
      default:
        return;
    }
  }

  void OnHello(const v1::AgentHello& hello) {
    auto model = svc_->loop_->Published();
    bool known = false;
    for (const auto& c : model->config().clusters()) known = known || c.name() == hello.cluster();
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (finished()) return;
      if (!cluster_.empty()) {
        Done(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "hello sent twice"));
        return;
      }
      if (claim_check_) {
        if (grpc::Status allowed = claim_check_(hello.cluster()); !allowed.ok()) {
          spdlog::warn("agent {} ({}): refused: {}", hello.agent_id(), peer_, allowed.error_message());
          Done(allowed);
          return;
        }
      }
      if (!known) {
        spdlog::warn("agent {} ({}): refused, cluster '{}' is not in the config", hello.agent_id(), peer_,
                     hello.cluster());
        Done(grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("hello.cluster: '", hello.cluster(), "' is not a cluster of the config")));
        return;
      }
      cluster_ = hello.cluster();
      agent_id_ = hello.agent_id();
    }
    spdlog::info("agent {} connected for cluster {} ({})", agent_id_, cluster_, peer_);
    svc_->Claim(self<Connection>());
    Check();
  }

  // The agent's full view against the broker's jobs of this cluster.
  void Reconcile(const std::string& cluster, const ReadModel& model, const v1::AgentView& view) {
    CoreLoop* loop = svc_->loop_;
    absl::flat_hash_map<std::string, const v1::ObservedJob*> seen;
    for (const auto& o : view.jobs()) seen[o.spec().job()] = &o;
    internal::v1::Command adopt;
    std::vector<internal::v1::Command> commands;
    for (const auto& o : view.jobs()) {
      if (!o.running()) continue;
      auto j = model.FindJob(o.spec().job());
      if (j && j->state() != v1::JOB_STATE_QUEUED) continue;
      if (j) {
        spdlog::warn("agent {}: {} runs although the broker queued it; recording it as running", cluster,
                     o.spec().job());
        internal::v1::Command finish;
        finish.set_finish(o.spec().job());
        commands.push_back(std::move(finish));
      } else {
        spdlog::info("agent {}: adopting running job {}", cluster, o.spec().job());
      }
      *adopt.mutable_adopt()->add_jobs() = o.spec();
    }
    for (const auto& j : model.Jobs("", v1::JOB_STATE_UNSPECIFIED)) {
      if (j->cluster() != cluster || seen.contains(j->job())) continue;
      if (j->state() == v1::JOB_STATE_ENDED || j->state() == v1::JOB_STATE_REJECTED) continue;
      spdlog::info("agent {}: {} is no longer in the cluster; finishing it", cluster, j->job());
      internal::v1::Command finish;
      finish.set_finish(j->job());
      commands.push_back(std::move(finish));
    }
    if (adopt.adopt().jobs_size() > 0) commands.push_back(std::move(adopt));
    spdlog::info("agent {}: view of {} jobs reconciled with {} commands", cluster, view.jobs_size(),
                 commands.size());
    std::shared_ptr<Connection> self = this->self<Connection>();
    if (commands.empty()) {
      SendSynced(model.seq());
      return;
    }
    // `synced` tells the agent the broker holds its view: only when every
    // command of the reconcile was applied (a refused one ends the stream).
    struct Outcome {
      explicit Outcome(size_t commands) : left(commands) {}
      absl::Mutex mu;
      size_t left ABSL_GUARDED_BY(mu);
      bool all_ok ABSL_GUARDED_BY(mu) = true;
      int64_t seq ABSL_GUARDED_BY(mu) = 0;
    };
    auto outcome = std::make_shared<Outcome>(commands.size());
    for (size_t i = 0; i < commands.size(); ++i) {
      service::Done log = Logged(absl::StrCat("reconcile ", cluster));
      loop->Submit(std::move(commands[i]), [self, outcome, log](absl::StatusOr<Applied> applied) {
        bool send = false;
        int64_t seq = 0;
        {
          absl::MutexLock lock(&outcome->mu);
          if (applied.ok()) {
            outcome->seq = std::max(outcome->seq, applied->model->seq());
          } else {
            outcome->all_ok = false;
          }
          send = --outcome->left == 0 && outcome->all_ok;
          seq = outcome->seq;
        }
        log(std::move(applied));
        if (send && self) self->SendSynced(seq);
      });
    }
  }

  void SendSynced(int64_t seq) {
    v1::BrokerAction a;
    a.mutable_synced()->set_seq(seq);
    std::lock_guard<std::recursive_mutex> lock(mu_);
    SendAction(std::move(a));
  }

  // Numbers the action (acks name it) and queues it. Call with mu_ held.
  void SendAction(v1::BrokerAction a) {
    if (finished()) return;
    a.set_action_id(++next_action_);
    Send(std::move(a));
  }

  AgentServiceImpl* svc_;
  const std::string peer_;
  const internal::v1::CommandOrigin origin_;  // who opened the stream, for the journal
  v1::AgentMessage in_;  // only the reader touches it.
  std::string cluster_;  // set once by hello; guarded by mu_
  std::string agent_id_;
  int64_t next_action_ = 0;
  absl::flat_hash_set<std::string> started_;           // start sent on this stream.
  absl::flat_hash_map<std::string, int64_t> evicted_;  // evict sent: job -> deadline.
  const ClusterCheck claim_check_;
};

grpc::ServerBidiReactor<v1::AgentMessage, v1::BrokerAction>* AgentServiceImpl::Connect(
    grpc::CallbackServerContext* ctx) {
  return OpenStream<Connection>(ctx, streams_, "Connect", grpc::Status::OK, this, ctx->peer(),
                                claim_check_ ? claim_check_(ctx) : ClusterCheck());
}

void AgentServiceImpl::Claim(const std::shared_ptr<Connection>& conn) {
  std::vector<std::shared_ptr<Connection>> replaced;
  if (!connections_.Replace(conn->cluster(), conn, &replaced)) {
    conn->Close(ShuttingDown());  // said hello after shutdown began.
    return;
  }
  for (auto& old : replaced) {
    spdlog::warn("agent for cluster {}: a new stream replaces the old one", conn->cluster());
    old->Close(grpc::Status(grpc::StatusCode::ABORTED, "another agent connected for this cluster"));
  }
}

std::vector<std::string> AgentServiceImpl::ConnectedClusters() { return connections_.Keys(); }

void AgentServiceImpl::Forget(const Connection* conn) { connections_.Remove(conn->cluster(), conn); }

void AgentServiceImpl::Notify() { connections_.WakeAll(); }

void AgentServiceImpl::CloseStreams() { connections_.CloseAll(ShuttingDown()); }

}  // namespace tidegate::service
