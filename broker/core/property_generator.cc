#include "broker/core/property_generator.h"

#include <map>
#include <optional>

#include "broker/core/property_checker.h"
#include "broker/core/test_support.h"

namespace tidegate::core::property {



v1::ResourceQuota RandomQuota(Rng& rng, Quantity g) {
  v1::ResourceQuota q;
  q.set_guaranteed(g);
  if (Chance(rng, 0.25)) q.set_borrow_limit(Uniform(rng, 0, 4));
  if (Chance(rng, 0.2)) q.set_lend_limit(Uniform(rng, 0, g));
  return q;
}

// Returns the sum of the subtree's guarantees per resource.
std::map<std::string, Quantity> AddTeam(Rng& rng, const std::string& parent, int depth, int levels,
                                        const std::vector<std::string>& resources, std::vector<v1::Team>* teams) {
  v1::Team t;
  t.set_name(absl::StrCat("t", teams->size()));
  t.set_parent(parent);
  const size_t self = teams->size();
  teams->push_back(t);
  std::map<std::string, Quantity> sum;
  const bool inner = depth < levels && Chance(rng, depth == 1 ? 0.7 : 0.5);
  if (inner) {
    const int kids = static_cast<int>(Uniform(rng, 1, 3));
    for (int i = 0; i < kids; ++i) {
      for (const auto& [r, q] : AddTeam(rng, (*teams)[self].name(), depth + 1, levels, resources, teams)) sum[r] += q;
    }
  }
  v1::Team& me = (*teams)[self];
  if (Chance(rng, 0.4)) me.set_weight(Pick(rng, std::vector<double>{0, 0.5, 1, 2}));
  for (const auto& r : resources) {
    if (inner) {
      if (Chance(rng, 0.5)) (*me.mutable_quota())[r] = RandomQuota(rng, sum[r] + Uniform(rng, 0, 4));
    } else if (Chance(rng, 0.75)) {
      (*me.mutable_quota())[r] = RandomQuota(rng, Uniform(rng, 0, 8));
    }
    if (me.quota().contains(r)) sum[r] = me.quota().at(r).guaranteed();
  }
  auto* pre = me.mutable_preemption();
  pre->set_within_team(static_cast<v1::WithinTeam>(Uniform(rng, 0, 3)));
  pre->set_reclaim(static_cast<v1::Reclaim>(Uniform(rng, 0, 3)));
  pre->mutable_borrow_within_cohort()->set_policy(static_cast<v1::BorrowWithinCohortPolicy>(Uniform(rng, 0, 2)));
  if (Chance(rng, 0.3)) pre->mutable_borrow_within_cohort()->set_max_priority(static_cast<int32_t>(Uniform(rng, 0, 3)));
  if (Chance(rng, 0.2)) me.set_queueing(v1::QUEUEING_STRICT_FIFO);
  return sum;
}

v1::Config RandomConfig(Rng& rng, const Options& opt) {
  v1::Config c;
  std::vector<std::string> resources{"gpu"};
  if (Chance(rng, 0.5)) resources.push_back("cpu");
  const int clusters = static_cast<int>(Uniform(rng, 1, 2));
  for (int k = 0; k < clusters; ++k) {
    auto* cl = c.add_clusters();
    cl->set_name(absl::StrCat("k", k));
    for (const auto& r : resources) {
      if (k > 0 && Chance(rng, 0.2)) continue;  // a cluster without this resource
      (*cl->mutable_capacity())[r] = Uniform(rng, 2, 24);
    }
  }
  const int levels = static_cast<int>(Uniform(rng, 1, 3));
  std::vector<v1::Team> teams;
  const int top = static_cast<int>(Uniform(rng, 1, 3));
  for (int i = 0; i < top; ++i) AddTeam(rng, "", 1, levels, resources, &teams);
  std::shuffle(teams.begin(), teams.end(), rng);  // a parent may come after its children
  for (auto& t : teams) *c.add_teams() = std::move(t);

  auto* pol = c.mutable_policy();
  pol->set_fair_sharing(Chance(rng, 0.5));
  pol->set_victim_order(static_cast<v1::VictimOrder>(Uniform(rng, 0, 2)));
  if (Chance(rng, 0.7)) pol->set_default_grace_s(Pick(rng, std::vector<int64_t>{0, 5, 30}));
  if (Chance(rng, 0.7)) pol->set_requeue_backoff_s(Pick(rng, std::vector<int64_t>{0, 10, 60}));
  switch (Uniform(rng, 0, 3)) {
    case 1: pol->add_fair_sharing_strategies(v1::FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE); break;
    case 2: pol->add_fair_sharing_strategies(v1::FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE); break;
    case 3:
      pol->add_fair_sharing_strategies(v1::FAIR_SHARING_STRATEGY_LESS_THAN_OR_EQUAL_TO_FINAL_SHARE);
      pol->add_fair_sharing_strategies(v1::FAIR_SHARING_STRATEGY_LESS_THAN_INITIAL_SHARE);
      break;
    default: break;
  }
  // Shrinks happen in the classical search only (docs/policy.md §6): elastic
  // streams run it three times in four.
  if (opt.elastic && Chance(rng, 0.5)) pol->set_fair_sharing(false);
  if (opt.elastic && Chance(rng, 0.6)) {
    // resize_timeout_s must be > 0 (a config error otherwise).
    pol->set_resize_timeout_s(Pick(rng, std::vector<int64_t>{1, 5, 20, 60}));
  }
  return c;
}

v1::JobSpec RandomJob(Rng& rng, const Model& m, const v1::Config& c, const std::string& id, const Options& opt) {
  std::vector<std::string> leaves, inner;
  for (const auto& [n, node] : m.nodes) (m.leaf(n) ? leaves : inner).push_back(n);
  test_support::JobSpecBuilder s(id);
  s.Team(!inner.empty() && Chance(rng, 0.02) ? Pick(rng, inner) : Pick(rng, leaves));
  if (c.clusters_size() > 1 || Chance(rng, 0.5)) s.Cluster(c.clusters(Uniform(rng, 0, c.clusters_size() - 1)).name());
  if (Chance(rng, 0.6)) s.Replicas(Uniform(rng, Chance(rng, 0.02) ? -1 : 1, 3));
  for (const auto& r : m.resources) {
    if (r == "gpu" || Chance(rng, 0.6)) s.Per(r, Uniform(rng, 0, r == "gpu" ? 4 : 6));
  }
  s.Priority(static_cast<int32_t>(Uniform(rng, 0, 3)));
  if (Chance(rng, 0.5)) s.Grace(Pick(rng, std::vector<int64_t>{0, 1, 10, 30}));
  if (Chance(rng, 0.1)) s.Requeue(false);
  if (Chance(rng, 0.2)) s.CheckpointInterval(Uniform(rng, 1, 100));
  if (opt.elastic && Chance(rng, 0.3)) {
    // Elastic: min 1-2, max up to min + 3; now and then a malformed range
    // or replicas set too (both rejected).
    const int64_t min = Uniform(rng, 1, 2);
    const int64_t lo = Chance(rng, 0.03) ? 0 : min;
    const int64_t hi = Chance(rng, 0.03) ? min - 1 : min + Uniform(rng, 0, 3);
    s.Elastic(lo, hi);
    if (!Chance(rng, 0.03)) s.ClearReplicas();
  }
  return s.Build();
}

// An ack_resize: mostly a valid ack of a pending request (at the size asked,
// or another size the request allows), else a stale epoch, a size outside
// the request's range, or a job that is not elastic or unknown.
std::optional<internal::v1::AckResize> RandomAck(Rng& rng, const std::vector<JobView>& jobs) {
  std::vector<const JobView*> pending, elastic, rigid;
  for (const JobView& j : jobs) {
    if (j.ParsedSpec().has_elastic()) {
      elastic.push_back(&j);
      if (j.resize_from >= 0) pending.push_back(&j);
    } else {
      rigid.push_back(&j);
    }
  }
  if (elastic.empty()) return std::nullopt;
  if (pending.empty() && Chance(rng, 0.8)) return std::nullopt;  // mostly ack what is pending
  internal::v1::AckResize ack;
  const int64_t roll = Uniform(rng, 0, 99);
  if (!pending.empty() && roll < 70) {
    const JobView& j = *Pick(rng, pending);
    ack.set_job(j.id);
    ack.set_epoch(j.epoch);
    const bool shrink = j.resize_to < j.resize_from;
    const int64_t lo = shrink ? j.ParsedSpec().elastic().min() : j.resize_from;
    ack.set_replicas(Chance(rng, 0.7) ? j.resize_to : Uniform(rng, lo, j.resize_to));
  } else if (roll < 82 || pending.empty()) {
    const JobView& j = *Pick(rng, elastic);
    ack.set_job(j.id);
    ack.set_epoch(j.resize_from >= 0 ? j.epoch - Uniform(rng, 1, 2) : j.epoch);  // stale, or none pending
    ack.set_replicas(j.resize_from >= 0 ? j.resize_to : j.replicas);
  } else if (!pending.empty() && roll < 96) {
    const JobView& j = *Pick(rng, pending);
    ack.set_job(j.id);
    ack.set_epoch(j.epoch);
    const bool shrink = j.resize_to < j.resize_from;
    const int64_t lo = shrink ? j.ParsedSpec().elastic().min() : j.resize_from;
    ack.set_replicas(Chance(rng, 0.5) ? j.resize_to + Uniform(rng, 1, 2) : lo - Uniform(rng, 1, 2));
  } else {
    ack.set_job(!rigid.empty() && Chance(rng, 0.5) ? Pick(rng, rigid)->id : "ghost");
    ack.set_epoch(1);
    ack.set_replicas(1);
  }
  return ack;
}

// About 110 lines: one branch per kind of command the stream mixes in, each
// drawing from the same generator in a fixed order (a seed must replay).
std::string RunSeed(uint64_t seed, const Options& opt, bool check, v1::Config* config, std::vector<Step>* steps,
                    std::vector<std::string>* stream) {
  Rng rng(seed);
  *config = RandomConfig(rng, opt);
  Checker checker(*config, check, !opt.adopt);
  std::vector<std::string> ids;
  std::map<std::string, v1::JobSpec> sent;
  Time now = kStart;
  for (int i = 0; i < kSteps; ++i) {
    internal::v1::Command cmd;
    if (opt.elastic && Chance(rng, 0.3)) {
      if (std::optional<internal::v1::AckResize> ack = RandomAck(rng, checker.jobs())) {
        // At the current instant: its due work has run, the ack comes first.
        *cmd.mutable_ack_resize() = *ack;
        steps->push_back({cmd, now});
        if (std::string err = checker.Step(cmd, now); !err.empty()) return err;
        continue;
      }
    }
    const std::optional<Time> deadline = checker.broker().NextDeadline();
    const int64_t roll = Uniform(rng, 0, 99);
    if (roll < 38) {
      const std::string id = absl::StrCat("j", ids.size());
      v1::JobSpec spec = RandomJob(rng, checker.model(), *config, id, opt);
      ids.push_back(id);
      sent[id] = spec;
      cmd = test_support::SubmitCommand(spec);
    } else if (roll < 41 && !sent.empty()) {
      // The same id again: the same spec (a no-op) or another (an error).
      const std::string& id = Pick(rng, ids);
      v1::JobSpec spec = sent[id];
      if (Chance(rng, 0.5)) spec.set_priority(spec.priority() + 1);
      cmd = test_support::SubmitCommand(spec);
    } else if (roll < 70) {
      const std::vector<JobView>& jobs = checker.jobs();
      if (!jobs.empty() && Chance(rng, 0.9)) {
        cmd.set_finish(Pick(rng, jobs).id);
      } else {
        cmd.set_finish(ids.empty() || Chance(rng, 0.3) ? "ghost" : Pick(rng, ids));
      }
    } else if (roll < 78) {
      const std::vector<JobView>& jobs = checker.jobs();
      cmd.set_checkpoint(jobs.empty() ? "ghost" : Pick(rng, jobs).id);
    } else if (roll < 81) {
      // A quota change at the current instant (so no due work runs under
      // the old config first). Work can still be due now: a shrink with no
      // grace is due at the instant it was asked, and runs before the next
      // command (docs/policy.md §7), so a tick runs it first.
      if (deadline && *deadline <= now) {
        internal::v1::Command tick;
        tick.mutable_tick();
        steps->push_back({tick, now});
        if (std::string err = checker.Step(tick, now); !err.empty()) return err;
      }
      std::vector<std::string> names;
      for (const auto& [n, node] : checker.model().nodes) names.push_back(n);
      auto* set = cmd.mutable_set_quota();
      set->set_team(Pick(rng, names));
      const std::string& r = Pick(rng, checker.model().resources);
      const Quantity g = checker.model().guaranteed.at(set->team()).at(r);
      (*set->mutable_quota())[r] = RandomQuota(rng, std::max<Quantity>(0, g + Uniform(rng, -3, 3)));
      steps->push_back({cmd, now});
      if (std::string err = checker.Step(cmd, now); !err.empty()) return err;
      continue;
    } else if (opt.adopt && roll < 86) {
      auto* batch = cmd.mutable_adopt();
      for (int k = static_cast<int>(Uniform(rng, 1, 3)); k > 0; --k) {
        const std::string id = absl::StrCat("j", ids.size());
        v1::JobSpec spec = RandomJob(rng, checker.model(), *config, id, opt);
        const bool elastic = spec.has_elastic();
        if (elastic && (spec.elastic().min() <= 0 || spec.elastic().max() < spec.elastic().min())) {
          spec.mutable_elastic()->set_min(1);
          spec.mutable_elastic()->set_max(2);
        }
        if (elastic) spec.clear_replicas();
        if (!elastic && (!spec.has_replicas() || spec.replicas() <= 0)) spec.set_replicas(1);
        std::vector<std::string> leaves;
        for (const auto& [n, node] : checker.model().nodes) {
          if (checker.model().leaf(n)) leaves.push_back(n);
        }
        spec.set_team(Pick(rng, leaves));
        spec.set_draining(Chance(rng, 0.2));
        ids.push_back(id);
        sent[id] = spec;
        *batch->add_jobs() = spec;
      }
    } else {
      cmd.mutable_tick();
    }
    // Time: often exactly the next deadline, else a random step forward.
    if (deadline && *deadline >= now && Chance(rng, 0.3)) {
      now = *deadline;
    } else {
      now += Chance(rng, 0.2) ? 0 : Uniform(rng, 1, 20) * kSec;
    }
    steps->push_back({cmd, now});
    if (std::string err = checker.Step(cmd, now); !err.empty()) return err;
  }
  *stream = checker.stream();
  return "";
}

std::string Replay(const v1::Config& config, const std::vector<Step>& steps, const Options& opt,
                   std::string* last_events) {
  Checker checker(config, /*check=*/true, !opt.adopt);
  for (const Step& s : steps) {
    const size_t before = checker.stream().size();
    std::string err = checker.Step(s.cmd, s.now);
    if (!err.empty()) {
      if (last_events) {
        *last_events = absl::StrJoin(checker.stream().begin() + before, checker.stream().end(), "\n    ");
      }
      return err;
    }
  }
  return "";
}

}  // namespace tidegate::core::property
