// The checker's steps: apply a command, follow every event (holds, victims,
// elastic sizes and requests) and check each against the model.
#include "broker/core/property_checker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tidegate::core::property {

// About 145 lines: the events of one step are checked in stream order, and
// each kind of event updates the state the later ones are checked against;
// read it as one walk over the stream.
std::string Checker::Step(const internal::v1::Command& cmd, Time now) {
  now_ = std::max(now_, now);
  // An ack is sent at an instant whose due work has already run (the
  // generator does not move the clock for it), so its effect comes first
  // in its events. If a shrunk case moved work under it, run that first.
  if (cmd.has_ack_resize()) {
    const std::optional<Time> due = broker_->NextDeadline();
    if (due && *due <= now_) {
      internal::v1::Command tick;
      tick.mutable_tick();
      if (std::string err = Step(tick, now); !err.empty()) return err;
    }
  }
  // What the command should do, by our own validation.
  bool expect_reject = false, expect_error = false;
  std::optional<SpecInfo> spec;
  bool was_live = false;
  std::optional<JobView> ack_before;  // the acked job before an ack
  if (cmd.has_submit()) {
    spec = Validate(cmd.submit(), /*adopt=*/false);
    expect_reject = !spec.has_value();
    was_live = broker_->GetJob(cmd.submit().job()).has_value();
  } else if (cmd.has_adopt()) {
    // adopt: every job must be valid (the generator makes them so).
  } else if (cmd.has_finish()) {
    expect_error = !broker_->GetJob(cmd.finish()).has_value();
  } else if (cmd.has_ack_resize()) {
    expect_error = !AckValid(cmd.ack_resize());
    ack_before = broker_->GetJob(cmd.ack_resize().job());
  } else if (cmd.has_set_quota()) {
    Model next = model_;
    for (const auto& [r, q] : cmd.set_quota().quota()) next.quota[cmd.set_quota().team()][r] = q;
    if (next.Derive()) {
      if (check_) ++coverage.quota_changes;
      model_ = std::move(next);
    } else {
      expect_error = true;
      if (check_) ++coverage.quota_refused;
    }
  }
  Usage before = check_ ? Recompute() : Usage{};
  // Nothing due before the command: every event comes from the command and
  // the one cycle after it (docs/design.md §1: Apply runs due work first).
  const std::optional<Time> due = broker_->NextDeadline();
  const bool nothing_due = !due || *due > now_;

  const std::vector<Event> events = broker_->Apply(cmd, now);
  bool rejected = false, errored = false;
  for (const Event& e : events) {
    stream_.push_back(Serialize(e));
    if (check_) ++coverage.events[EventTypeName(e.type)];
    if (e.type == EventType::kReject) rejected = true;
    if (e.type == EventType::kError) errored = true;
  }
  jobs_fresh_ = false;
  if (!check_) return "";
  jobs();
  ++coverage.steps;
  coverage.max_live_jobs = std::max<int64_t>(coverage.max_live_jobs, static_cast<int64_t>(jobs_.size()));
  if (rejected != expect_reject) {
    return absl::StrCat("reject: expected ", expect_reject, ", got ", rejected, " for ", Text(cmd));
  }
  if (expect_error && !errored) return absl::StrCat("error: expected an error event for ", Text(cmd));
  if (cmd.has_submit() && spec) {
    if (!specs_.contains(cmd.submit().job())) specs_[cmd.submit().job()] = *spec;
    if (!was_live && spec->elastic) el_[cmd.submit().job()] = AtMin(*spec);
  }
  if (cmd.has_adopt()) {
    for (const auto& j : cmd.adopt().jobs()) {
      if (auto s = Validate(j, /*adopt=*/true); s && !specs_.contains(j.job())) specs_[j.job()] = *s;
      if (specs_.contains(j.job()) && specs_.at(j.job()).elastic && !el_.contains(j.job())) {
        el_[j.job()] = AtMin(specs_.at(j.job()));
      }
    }
  }
  if (cmd.has_ack_resize()) {
    if (std::string err = CheckAck(cmd.ack_resize(), expect_error, ack_before, events); !err.empty()) return err;
  }
  // Replay the events over our own ledger: each admission is checked at
  // the moment it happens (its borrowed part, and that it makes no
  // over-use larger), not only the state at the end of the step.
  const std::vector<Quantity> baseline = Excess(before);
  // Growth runs after the queue: the trailing grows of a step (followed
  // only by queue records of new submissions) are checked against every
  // job still waiting at the end of the step.
  size_t trailing = nothing_due ? events.size() : SIZE_MAX;
  while (trailing > 0 && trailing != SIZE_MAX) {
    const Event& e = events[trailing - 1];
    const bool grow = e.type == EventType::kResize && e.reason == "grow";
    const bool announce = e.type == EventType::kQueue && !e.requeued;
    if (!grow && !announce) break;
    --trailing;
  }
  bool queue_checked = false;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.type == EventType::kAdmit) {
      // A reclaimer is admitted as soon as it fits, even while some of its
      // victims still drain or shrink (they go on, for nobody).
      if (outstanding_.contains(e.job)) Detach(e.job);
      if (std::string err = CheckAdmit(e, baseline); !err.empty()) return err;
      holding_.insert(e.job);
      if (el_.contains(e.job)) {
        ++coverage.elastic_admits;
        if (e.replicas != specs_.at(e.job).min) {
          return absl::StrCat("elastic admit: ", e.job, " admitted with ", e.replicas, " replicas, not its min ",
                              specs_.at(e.job).min);
        }
      }
    }
    if (e.type == EventType::kQueue && !e.requeued && e.reason.rfind("exceeds_max", 0) == 0 && !ExceedsMax(specs_.at(e.job))) {
      return absl::StrCat("exceeds_max: ", e.job, " is queued as exceeds_max but fits under the config");
    }
    if (trailing != SIZE_MAX && i >= trailing && !queue_checked && e.type == EventType::kResize && e.reason == "grow") {
      queue_checked = true;
      ++coverage.queue_first_checks;
      Usage u = Recompute(&holding_);
      if (std::string err = CheckNoFittingJobWaits(u); !err.empty()) {
        return absl::StrCat("queue first: ", e.job, " grows while ", err);
      }
    }
    // A grow in one growth pass is reported with the pass's later grows
    // already counted (growth.cc); its borrowed part is checked only when
    // no later grow of the same team follows in the same run of grows.
    bool later_grow_same_team = false;
    if (e.type == EventType::kResize && e.reason == "grow") {
      for (size_t k = i + 1; k < events.size(); ++k) {
        const Event& f = events[k];
        if (f.type != EventType::kResize || f.reason != "grow" || f.at != e.at) break;
        if (f.team == e.team) later_grow_same_team = true;
      }
    }
    skip_borrowed_ = later_grow_same_team;
    if (std::string err = TrackElastic(e, baseline); !err.empty()) return err;
    if (std::string err = Track(e); !err.empty()) return err;
    if (e.type == EventType::kEnd || (e.type == EventType::kQueue && e.requeued)) holding_.erase(e.job);
    if (e.type == EventType::kEnd) el_.erase(e.job);
    if (e.type == EventType::kQueue && e.requeued && el_.contains(e.job)) {
      el_[e.job].replicas = specs_.at(e.job).min;  // back to its gang
      el_[e.job].from = -1;
    }
  }
  if (!holds_.empty()) ++coverage.steps_with_holds;
  return CheckState(baseline);
}

std::optional<SpecInfo> Checker::Validate(const v1::JobSpec& s, bool adopt) const {
  if (s.job().empty() || !model_.nodes.contains(s.team()) || !model_.leaf(s.team())) return std::nullopt;
  if (s.draining() && !adopt) return std::nullopt;  // only adopt may record a draining job
  SpecInfo info;
  info.team = s.team();
  if (s.cluster().empty()) {
    if (model_.capacity.size() != 1) return std::nullopt;
    info.cluster = model_.capacity.begin()->first;
  } else {
    if (!model_.capacity.contains(s.cluster())) return std::nullopt;
    info.cluster = s.cluster();
  }
  info.elastic = s.elastic().min() != 0 || s.elastic().max() != 0;
  if (info.elastic) {
    // An elastic job sets min and max, 0 < min <= max, and no replicas.
    if (s.has_replicas() || s.elastic().min() <= 0 || s.elastic().max() < s.elastic().min()) return std::nullopt;
    info.min = s.elastic().min();
    info.max = s.elastic().max();
  }
  // elastic {0, 0} is no range: refused, not read as a rigid job.
  if (s.has_elastic() && !info.elastic) return std::nullopt;
  const int64_t replicas = info.elastic ? info.min : s.has_replicas() ? s.replicas() : 1;
  if (replicas <= 0 || s.per_replica().empty()) return std::nullopt;
  // REJECTED covers non-positive demand (docs/design.md §3): some quantity > 0
  // (adopt records what already runs, without that check).
  if (!adopt && std::none_of(s.per_replica().begin(), s.per_replica().end(), [](const auto& kv) { return kv.second > 0; })) {
    return std::nullopt;
  }
  for (const auto& [r, q] : s.per_replica()) {
    if (q < 0 || std::find(model_.resources.begin(), model_.resources.end(), r) == model_.resources.end()) {
      return std::nullopt;
    }
    info.demand[r] = replicas * q;
    info.per_replica[r] = q;
  }
  return info;
}

ElasticState Checker::AtMin(const SpecInfo& s) {
  ElasticState st;
  st.replicas = s.min;
  return st;
}

SpecInfo Checker::Now(const std::string& id) const {
  SpecInfo s = specs_.at(id);
  if (auto it = el_.find(id); it != el_.end()) {
    for (auto& [r, q] : s.demand) q = s.per_replica.at(r) * it->second.replicas;
  }
  return s;
}

SpecInfo Checker::Part(const std::string& id, int64_t replicas) const {
  SpecInfo s = specs_.at(id);
  for (auto& [r, q] : s.demand) q = s.per_replica.at(r) * replicas;
  return s;
}

bool Checker::AckValid(const internal::v1::AckResize& ack) const {
  auto it = el_.find(ack.job());
  if (it == el_.end()) return false;  // unknown, ended or rigid
  const ElasticState& el = it->second;
  if (el.from < 0 || ack.epoch() != el.epoch) return false;
  const int64_t lo = el.shrink_pending() ? specs_.at(ack.job()).min : el.from;
  return ack.replicas() >= lo && ack.replicas() <= el.to;
}

void Checker::Complete(const std::string& id, int64_t replicas) {
  ElasticState& el = el_.at(id);
  if (el.shrink_pending() && !el.shrink_for.empty()) {
    const std::string waiter = el.shrink_for;
    holds_[waiter].push_back(Part(id, std::max<int64_t>(0, el.replicas - replicas)));
    ++coverage.shrink_holds;
    if (--outstanding_[waiter] == 0) {
      holds_.erase(waiter);
      outstanding_.erase(waiter);
    }
  }
  el.replicas = replicas;
  el.from = -1;
  el.deadline = -1;
  el.shrink_for.clear();
}

std::string Checker::CheckAck(const internal::v1::AckResize& ack, bool expect_error, const std::optional<JobView>& before,
                     const std::vector<Event>& events) {
  if (expect_error) {
    // The error comes first (nothing was due); the cycle after it may still
    // decide things, but the acked job is untouched unless a later record
    // names it.
    if (events.empty() || events[0].type != EventType::kError) {
      return absl::StrCat("bad ack: ", Text(ack), " did not give an error first");
    }
    const bool named = std::any_of(events.begin() + 1, events.end(), [&](const Event& e) {
      return e.job == ack.job() || std::find(e.victims.begin(), e.victims.end(), ack.job()) != e.victims.end();
    });
    const std::optional<JobView> after = broker_->GetJob(ack.job());
    if (named) {
      // Changed by a later decision of the cycle, not by the ack.
    } else if (before.has_value() != after.has_value() ||
        (before && (before->replicas != after->replicas || before->epoch != after->epoch ||
                    before->resize_from != after->resize_from || before->resize_to != after->resize_to ||
                    before->resize_deadline != after->resize_deadline || before->state != after->state))) {
      return absl::StrCat("bad ack: ", Text(ack), " changed the job");
    }
    const ElasticState* el = el_.contains(ack.job()) ? &el_.at(ack.job()) : nullptr;
    if (el && (el->from < 0 || ack.epoch() != el->epoch)) {
      ++coverage.stale_acks;
    } else if (el) {
      ++coverage.range_acks;
    }
    return "";
  }
  for (const Event& e : events) {
    if (e.type == EventType::kError) return absl::StrCat("ack refused: ", Text(ack), ": ", e.reason);
  }
  ElasticState& el = el_.at(ack.job());
  const int64_t asked = el.to;
  ++coverage.acks;
  if (ack.replicas() != asked) {
    // The record that the job re-formed at another size comes first: it is
    // what made room for anything that follows.
    ++coverage.acks_other_size;
    if (events.empty() || events[0].type != EventType::kResize || events[0].reason != "ack" ||
        events[0].job != ack.job() || events[0].from != asked || events[0].to != ack.replicas() ||
        events[0].epoch != ack.epoch()) {
      std::vector<std::string> got;
      for (const Event& e : events) got.push_back(Serialize(e));
      return absl::StrCat("ack record: ", Text(ack), " (asked ", asked, ") should first give resize ", asked,
                          " -> ", ack.replicas(), " reason ack; got [", absl::StrJoin(got, " ; "), "]");
    }
  }
  Complete(ack.job(), ack.replicas());
  return "";
}

// About 95 lines: one case per record that changes an elastic job's size or
// request (resize for each reason, preempt, end, requeue), side by side.
std::string Checker::TrackElastic(const Event& e, const std::vector<Quantity>& baseline) {
  auto it = el_.find(e.job);
  if (e.type == EventType::kResize) {
    if (it == el_.end()) return absl::StrCat("resize of a job that is not elastic or not live: ", e.job);
    ElasticState& el = it->second;
    const SpecInfo& spec = specs_.at(e.job);
    if (e.to < spec.min || e.to > spec.max || e.from < spec.min || e.from > spec.max) {
      return absl::StrCat("elastic range: ", e.job, " resize ", e.from, " -> ", e.to, " outside [", spec.min, ", ",
                          spec.max, "]");
    }
    if (e.reason == "ack") return "";  // checked with the ack
    if (e.reason == "deadline") {
      if (el.from < 0) return absl::StrCat("deadline: ", e.job, " has no resize pending");
      if (e.epoch != el.epoch || e.at != el.deadline) {
        return absl::StrCat("deadline: ", e.job, " epoch ", e.epoch, " at ", e.at, ", pending epoch ", el.epoch,
                            " due ", el.deadline);
      }
      if (el.shrink_pending()) {
        if (e.from != el.from || e.to != el.to) {
          return absl::StrCat("deadline: ", e.job, " enforces ", e.from, " -> ", e.to, ", asked ", el.from, " -> ",
                              el.to);
        }
        ++coverage.deadline_shrinks;
        Complete(e.job, el.to);
      } else {
        if (e.from != el.to || e.to != el.from) {
          return absl::StrCat("deadline: ", e.job, " withdraws ", e.from, " -> ", e.to, ", asked ", el.from,
                              " -> ", el.to);
        }
        ++coverage.deadline_grows;
        Complete(e.job, el.from);
      }
      return "";
    }
    // A new request: grow, or a shrink for a waiting job.
    if (el.from >= 0) {
      return absl::StrCat("resize while pending: ", e.job, " asked ", e.from, " -> ", e.to, " (", e.reason,
                          ") while ", el.from, " -> ", el.to, " is pending");
    }
    if (!holding_.contains(e.job)) return absl::StrCat("resize of a job not holding capacity: ", e.job);
    if (drain_for_.contains(e.job)) return absl::StrCat("resize of a draining job: ", e.job);
    if (e.epoch <= el.epoch) return absl::StrCat("epoch: ", e.job, " epoch ", e.epoch, " after ", el.epoch);
    if (e.from != el.replicas) {
      return absl::StrCat("resize from: ", e.job, " resize from ", e.from, " but it runs ", el.replicas);
    }
    el.epoch = e.epoch;
    el.from = e.from;
    el.to = e.to;
    el.deadline = e.deadline;
    if (e.reason == "grow") {
      if (e.to <= e.from) return absl::StrCat("grow: ", e.job, " ", e.from, " -> ", e.to);
      ++coverage.grows;
      el.replicas = e.to;  // a grow reserves at once
      if (std::string err = CheckResized(e, baseline); !err.empty()) return err;
      return "";
    }
    if (e.reason != "reclaim" && e.reason != "priority") {
      return absl::StrCat("resize reason: ", e.job, " unexpected reason '", e.reason, "'");
    }
    if (e.to >= e.from) return absl::StrCat("shrink: ", e.job, " ", e.from, " -> ", e.to);
    ++coverage.shrinks;
    if (e.deadline <= e.at) ++coverage.immediate_shrinks;
    if (!specs_.contains(e.by) || holding_.contains(e.by)) {
      return absl::StrCat("shrink: ", e.job, " shrinks for ", e.by, ", which is not a waiting job");
    }
    el.shrink_for = e.by;
    ++outstanding_[e.by];
    // Its borrowed part at the new size.
    el.replicas = e.to;
    std::string err = CheckResized(e, baseline, /*feasibility=*/false);
    el.replicas = e.from;  // the capacity stays until the ack or the deadline
    return err;
  }
  // Shrinks with no grace are due at once but still end by their ack or
  // their `deadline` record (an ack at the deadline's instant is in time).
  if (it == el_.end()) return "";
  ElasticState& el = it->second;
  switch (e.type) {
    case EventType::kPreempt:
      if (el.shrink_pending()) return absl::StrCat("evicted while shrinking: ", e.job, " by ", e.by);
      if (el.from >= 0) {
        // Evicted whole: it drains with what it holds, the unacked grow's
        // reserved replicas too (all of it is held for the reclaimer).
        ++coverage.grow_cancelled_by_evict;
        el.from = -1;
      }
      return "";
    case EventType::kEnd:
      // A shrink it owed a waiting job is given.
      if (el.shrink_pending()) Complete(e.job, el.to);
      return "";
    default:
      return "";
  }
}

std::string Checker::CheckResized(const Event& e, const std::vector<Quantity>& baseline, bool feasibility) {
  const SpecInfo s = Now(e.job);
  Usage u = Recompute(&holding_);
  NamedQuantities want;
  if (skip_borrowed_) want = e.borrowed;
  for (const auto& [r, d] : s.demand) {
    if (skip_borrowed_) break;
    want.emplace_back(r, std::min(d, std::max<Quantity>(0, u.node[s.team][r] - model_.guaranteed.at(s.team).at(r))));
  }
  if (e.borrowed != want) {
    std::vector<std::string> got, exp;
    for (const auto& [r, q] : e.borrowed) got.push_back(absl::StrCat(r, ":", q));
    for (const auto& [r, q] : want) exp.push_back(absl::StrCat(r, ":", q));
    return absl::StrCat("resize borrowed: ", e.job, " ", e.from, " -> ", e.to, " borrowed {",
                        absl::StrJoin(got, ","), "}, expected {", absl::StrJoin(exp, ","), "}");
  }
  if (!feasibility || !check_feasible_) return "";
  const std::vector<Quantity> now = Excess(u);
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i] <= baseline[i]) continue;
    std::vector<std::string> names;
    Excess(u, &names);
    return absl::StrCat("infeasible: growing ", e.job, " to ", e.to, " puts ", names[i], " over by ", now[i],
                        " (was ", baseline[i], ")");
  }
  return "";
}

void Checker::Detach(const std::string& waiter) {
  holds_.erase(waiter);
  outstanding_.erase(waiter);
  for (auto it = drain_for_.begin(); it != drain_for_.end();) {
    it = it->second == waiter ? drain_for_.erase(it) : std::next(it);
  }
  for (auto& [id, el] : el_) {
    if (el.shrink_for == waiter) el.shrink_for.clear();
  }
}

std::string Checker::Track(const Event& e) {
  switch (e.type) {
    case EventType::kPreempt:
      if (drain_for_.contains(e.job)) return absl::StrCat("victim ", e.job, " chosen twice (by ", e.by, ")");
      drain_for_[e.job] = e.by;
      ++outstanding_[e.by];
      return "";
    case EventType::kAdmit:
      if (outstanding_.contains(e.job)) return absl::StrCat(e.job, " admitted while its victims still drain");
      return "";
    case EventType::kEnd:
    case EventType::kQueue: {
      if (e.type == EventType::kQueue && !e.requeued) return "";
      if (auto it = drain_for_.find(e.job); it != drain_for_.end()) {
        const std::string waiter = it->second;
        drain_for_.erase(it);
        holds_[waiter].push_back(Now(e.job));
        if (--outstanding_[waiter] == 0) {
          holds_.erase(waiter);
          outstanding_.erase(waiter);
        }
      }
      if (e.type == EventType::kEnd && outstanding_.contains(e.job)) Detach(e.job);
      return "";
    }
    default:
      return "";
  }
}

}  // namespace tidegate::core::property
