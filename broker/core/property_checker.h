// The property checker: drives one broker and checks every property of
// property_test.cc after every step, against our own recomputation.
// Step tracking and elastic jobs: property_checker.cc; the invariants
// recomputed from scratch: property_invariants.cc.
#ifndef TIDEGATE_BROKER_CORE_PROPERTY_CHECKER_H_
#define TIDEGATE_BROKER_CORE_PROPERTY_CHECKER_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/core/broker.h"
#include "broker/core/property_support.h"

namespace tidegate::core::property {

// ---------------------------------------------------------------- checker

// Drives one broker and checks every property after every step. Pure
// function of (config, steps): replaying the same steps gives the same
// verdict, which is what shrinking relies on.
class Checker {
 public:
  // `check`: check every property (else only record the event stream);
  // `check_feasible`: include feasibility (adopt skips every check).
  Checker(const v1::Config& config, bool check, bool check_feasible)
      : model_(Model::From(config)), check_(check), check_feasible_(check_feasible) {
    for (const auto& t : config.teams()) source_[t.name()] = t.queueing() == v1::QUEUEING_STRICT_FIFO;
    auto b = Broker::Create(config, kStart);
    EXPECT_TRUE(b.ok()) << b.status();
    broker_ = *std::move(b);
    now_ = kStart;
  }
  Broker& broker() { return *broker_; }
  // ListJobs() now (cached between steps).
  const std::vector<JobView>& jobs() {
    if (!jobs_fresh_) jobs_ = broker_->ListJobs();
    jobs_fresh_ = true;
    return jobs_;
  }
  const Model& model() const { return model_; }
  Time now() const { return now_; }
  const std::vector<std::string>& stream() const { return stream_; }

  // Applies one command; returns "" or the first property it breaks.
  std::string Step(const internal::v1::Command& cmd, Time now);

 private:
  std::optional<SpecInfo> Validate(const v1::JobSpec& s, bool adopt) const;

  // ---- elastic jobs (docs/design.md §5, docs/policy.md §3-§4)

  static ElasticState AtMin(const SpecInfo& s);

  // A job's demand now: an elastic job's at the size the events say it has.
  SpecInfo Now(const std::string& id) const;
  // `replicas` of job id, as a hold (its team and cluster).
  SpecInfo Part(const std::string& id, int64_t replicas) const;

  // Would the core accept this ack? By our own model of the pending request.
  bool AckValid(const internal::v1::AckResize& ack) const;

  // A pending request is over: the job runs `replicas`; what a shrink freed
  // is held for the job it was asked for, until that job's victims are all
  // resolved (then the core tests it and either admits it or requeues it).
  void Complete(const std::string& id, int64_t replicas);

  // An ack we sent: accepted and applied first (nothing else was due), or an
  // error that changes nothing at all.
  std::string CheckAck(const internal::v1::AckResize& ack, bool expect_error, const std::optional<JobView>& before,
                       const std::vector<Event>& events);

  // Resize requests and their ends, and what happens to a pending request
  // when its job is evicted, requeued or ends.
  std::string TrackElastic(const Event& e, const std::vector<Quantity>& baseline);

  // A resize request's borrowed part (events.h: the job's own part above its
  // team's guarantee at the new size) and, for a grow, that it makes no
  // over-use larger.
  std::string CheckResized(const Event& e, const std::vector<Quantity>& baseline, bool feasibility = true);

  // A waiting job ended or was admitted: its holds are released, its victims
  // drain (or shrink) for nobody.
  void Detach(const std::string& waiter);

  // Capacity held for a waiting job by its departed victims (docs/policy.md §4),
  // followed from the events alone.
  std::string Track(const Event& e);

  // Usage from the jobs holding capacity (by default: as ListJobs() says).
  Usage Recompute(const std::set<std::string>* holding = nullptr) const;
  void Fold(const std::string& n, Usage* u) const;

  // Over-use max(0, u - limit) of every constraint of docs/policy.md §1 under the
  // current model, in a fixed order; `name` (when given) gets each one's name.
  std::vector<Quantity> Excess(Usage& u, std::vector<std::string>* name = nullptr) const;

  // An admission: its borrowed part (events.h: min(d_r, max(0, u(t) + d_r -
  // g(t))) at that moment) and, unless adopted, no over-use made larger.
  std::string CheckAdmit(const Event& e, const std::vector<Quantity>& baseline);

  // available(n) (docs/policy.md §1) from usage u.
  Quantity Available(Usage& u, const std::string& n, const std::string& r) const;

  // A job announced as exceeds_max really exceeds potential(t) (available(t)
  // with every leaf at 0) or capacity(k) on some resource (docs/policy.md §2).
  bool ExceedsMax(const SpecInfo& s) const;

  // No job waits while it fits (docs/policy.md §2 step 1, §4 best_effort_fifo):
  // after a step every queued job that is not waiting for victims has a
  // contested resource, except behind a strict_fifo team's blocked head.
  std::string CheckNoFittingJobWaits(Usage& u) const;

  // An elastic job as ListJobs() shows it agrees with the events: its size,
  // its pending request; within [min, max]; no request overdue.
  std::string CheckElasticView(const JobView& j, const SpecInfo& s) const;

  std::string CheckState(const std::vector<Quantity>& baseline);

  Model model_;
  bool check_;
  bool check_feasible_;
  std::vector<JobView> jobs_;
  bool jobs_fresh_ = true;
  std::set<std::string> holding_;  // jobs holding capacity, by the events
  std::map<std::string, bool> source_;  // team -> strict_fifo
  std::unique_ptr<Broker> broker_;
  Time now_;
  std::map<std::string, SpecInfo> specs_;
  std::map<std::string, std::string> drain_for_;            // victim -> the job it drains for
  std::map<std::string, int> outstanding_;                  // waiting job -> victims not yet gone
  std::map<std::string, std::vector<SpecInfo>> holds_;      // waiting job -> capacity held for it
  std::map<std::string, ElasticState> el_;                  // live elastic job -> its size and request
  bool skip_borrowed_ = false;  // the current grow's borrowed part counts later grows of its pass
  std::vector<std::string> stream_;
};


}  // namespace tidegate::core::property

#endif  // TIDEGATE_BROKER_CORE_PROPERTY_CHECKER_H_
