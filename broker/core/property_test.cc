// Seeded random quota trees (1-3 levels, 1-2 resources, 1-2 clusters, random
// guarantees, borrow and lend limits, policies, fair sharing on or off) and
// random event streams (submit, resubmit, finish, checkpoint, set_quota,
// ticks at NextDeadline(); adopt in one property), checked after every step
// against invariants recomputed from scratch, independently of the core's own
// bookkeeping (docs/policy.md §1, §2, §4):
//
//   - feasibility: u(n) <= g(n) + b(n) for every team, u(root) <= total
//     capacity, every cluster's jobs fit its capacity -- at every admission
//     inside a step, not only at its end; after a quota change that makes
//     the state infeasible, nothing may make any over-use larger;
//   - accounting: GetTeam(..).used / borrowed / guaranteed / queued and
//     ClusterUsed equal the recomputation from ListJobs(), the specs we sent,
//     the tree we generated and the capacity held for waiting jobs (followed
//     from the event stream); the events account for exactly the jobs
//     ListJobs() shows holding capacity; each admit's `borrowed` is
//     min(d, max(0, u(t) + d - g(t))) at that moment;
//   - no job waits while it fits (best_effort_fifo; behind a strict_fifo
//     team's blocked head excepted); exceeds_max only when it really does;
//   - bad input is rejected exactly when our own validation says so;
//   - determinism: the same seed gives byte-identical event streams, and a
//     core restored from Snapshot() behaves exactly like the original.
//
// Elastic jobs (one property with ~30% elastic submits and ack_resize
// commands; the snapshot property too; docs/design.md §5, docs/policy.md §3-§4): each
// elastic job's size and pending request are followed from the events and
// the acks we send (admit -> min, grow -> to at once, shrink -> to at the
// ack / deadline / finish, grow withdrawn at its deadline or when evicted,
// requeue -> min), so usage stays an exact recomputation; a shrink's freed
// part is held for the job it was asked for until that job's victims are all
// resolved; and:
//   - replicas always within [min, max]; ListJobs() agrees with the events
//     on size, epoch, resize_from/to and deadline; no request is overdue;
//   - a grow never makes any over-use larger (at the grow, not only at the
//     end of the step), and its `borrowed` is its part above guarantee;
//   - queue first: when a cycle's growth runs, no queued job fits;
//   - epochs strictly increase per job; no request while one is pending;
//     only jobs holding capacity (and not draining) are asked to resize;
//   - an ack is accepted exactly when our model says so (stale epoch, no
//     request pending, size outside the request's range -> an `error` and
//     the job unchanged); an ack at another size than asked is recorded
//     first;
//   - a waiting job is admitted only after the records of all its victims
//     (preempted jobs leaving, shrinks acked or enforced).
//
// On a failure the case is shrunk (commands, then unused teams, removed while
// the same kind of failure persists) and printed with its seed, config and
// commands (TIDEGATE_PROPERTY_VERBOSE=1: with every step's events).
// TIDEGATE_PROPERTY_SEEDS / TIDEGATE_PROPERTY_FIRST_SEED run more seeds or
// replay one.
//
// The parts: property_support.h (our model of the tree, usage, coverage),
// property_checker.h/.cc (follows every event) and property_invariants.cc
// (recomputes and checks), property_generator.h/.cc (random configs and
// streams), property_shrink.h/.cc (shrinking and the report), and
// property_regressions_test.cc (bugs the properties once found).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "broker/core/broker.h"
#include "broker/core/property_checker.h"
#include "broker/core/property_generator.h"
#include "broker/core/property_shrink.h"
#include "broker/core/property_support.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tidegate::core::property {
namespace {

void RunProperty(const Options& opt, int seeds) {
  coverage = Coverage{};
  int failures = 0;
  for (uint64_t seed = FirstSeed(); seed < FirstSeed() + static_cast<uint64_t>(seeds) && failures < 3; ++seed) {
    v1::Config config;
    std::vector<Step> steps;
    std::vector<std::string> stream;
    const std::string err = RunSeed(seed, opt, /*check=*/true, &config, &steps, &stream);
    if (!err.empty()) {
      ++failures;
      Shrink(&config, &steps, opt, err);
      ADD_FAILURE() << Report(seed, config, steps, opt);
      continue;
    }
    // Determinism: the same seed again gives the same bytes.
    v1::Config config2;
    std::vector<Step> steps2;
    std::vector<std::string> stream2;
    ASSERT_EQ(RunSeed(seed, opt, /*check=*/false, &config2, &steps2, &stream2), "") << "seed " << seed;
    ASSERT_EQ(stream.size(), stream2.size()) << "seed " << seed << ": event streams differ in length";
    for (size_t i = 0; i < stream.size(); ++i) {
      ASSERT_EQ(stream[i], stream2[i]) << "seed " << seed << ": event " << i << " differs";
    }
  }
  std::printf("[ coverage ] %s\n", coverage.Summary().c_str());
  if (seeds >= 50 && failures == 0) {
    // The streams reach the interesting states (else the properties above
    // hold vacuously).
    EXPECT_GT(coverage.events["reclaim"], 0);
    EXPECT_GT(coverage.events["preempt"], 0);
    EXPECT_GT(coverage.events["reject"], 0);
    EXPECT_GT(coverage.steps_with_holds, 0);
    EXPECT_GT(coverage.quota_changes, 0);
    EXPECT_GT(coverage.quota_refused, 0);
    if (!opt.adopt) {
      EXPECT_GT(coverage.infeasible_steps, 0);
    }
    if (opt.elastic) {
      EXPECT_GT(coverage.elastic_admits, 0);
      EXPECT_GT(coverage.grows, 0);
      EXPECT_GT(coverage.shrinks, 0);
      EXPECT_GT(coverage.immediate_shrinks, 0);
      EXPECT_GT(coverage.deadline_shrinks, 0);
      EXPECT_GT(coverage.deadline_grows, 0);
      EXPECT_GT(coverage.acks, 0);
      EXPECT_GT(coverage.acks_other_size, 0);
      EXPECT_GT(coverage.stale_acks, 0);
      EXPECT_GT(coverage.range_acks, 0);
      EXPECT_GT(coverage.shrink_holds, 0);
      EXPECT_GT(coverage.queue_first_checks, 0);
    }
  }
}

// ---------------------------------------------------------------- snapshots

// broker.h: Restore(Snapshot()) behaves exactly like the original for every
// future command. Runs `steps`, restoring a copy at step `at`; returns "" or
// where the two first differ.
std::string RestoreDiverges(const v1::Config& config, const std::vector<Step>& steps, size_t at) {
  auto created = Broker::Create(config, kStart);
  if (!created.ok()) return std::string(created.status().message());
  std::unique_ptr<Broker> original = *std::move(created);
  std::unique_ptr<Broker> copy;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i == at) {
      const internal::v1::CoreSnapshot snap = original->Snapshot();
      auto restored = Broker::Restore(snap);
      if (!restored.ok()) return absl::StrCat("Restore failed: ", restored.status().message());
      copy = *std::move(restored);
      if (!google::protobuf::util::MessageDifferencer::Equals(copy->Snapshot(), snap)) {
        return absl::StrCat("Snapshot() of the restored core differs:\n    ", Text(snap), "\n    ",
                            Text(copy->Snapshot()));
      }
      if (copy->NextDeadline() != original->NextDeadline()) return "NextDeadline() differs after Restore";
    }
    const std::vector<Event> a = original->Apply(steps[i].cmd, steps[i].now);
    if (!copy) continue;
    const std::vector<Event> b = copy->Apply(steps[i].cmd, steps[i].now);
    std::vector<std::string> sa, sb;
    for (const Event& e : a) sa.push_back(Serialize(e));
    for (const Event& e : b) sb.push_back(Serialize(e));
    if (sa != sb) {
      return absl::StrCat("events differ at step ", i, " (restored at ", at, "):\n    original: ",
                          absl::StrJoin(sa, "\n              "), "\n    restored: ",
                          absl::StrJoin(sb, "\n              "));
    }
    if (copy->NextDeadline() != original->NextDeadline()) return absl::StrCat("NextDeadline() differs at step ", i);
  }
  return "";
}

TEST(PropertyTest, RestoredSnapshotsBehaveLikeTheOriginal) {
  // adopt too: already-draining jobs; elastic too: sizes, pending resize
  // requests, shrinks owed to waiting jobs.
  const Options opt{.adopt = true, .elastic = true};
  for (uint64_t seed = FirstSeed(); seed < FirstSeed() + static_cast<uint64_t>(Seeds() / 4); ++seed) {
    v1::Config config;
    std::vector<Step> steps;
    std::vector<std::string> stream;
    ASSERT_EQ(RunSeed(seed, opt, /*check=*/false, &config, &steps, &stream), "");
    Rng rng(seed);
    for (int k = 0; k < 3; ++k) {
      const size_t at = static_cast<size_t>(Uniform(rng, 0, static_cast<int64_t>(steps.size()) - 1));
      const std::string err = RestoreDiverges(config, steps, at);
      if (err.empty()) continue;
      // Shrink: drop steps after the restore point, then before it.
      std::vector<Step> tail(steps.begin() + at, steps.end()), head(steps.begin(), steps.begin() + at);
      auto fails = [&](const std::vector<Step>& h, const std::vector<Step>& t) {
        std::vector<Step> all = h;
        all.insert(all.end(), t.begin(), t.end());
        return !RestoreDiverges(config, all, h.size()).empty();
      };
      for (auto* part : {&tail, &head}) {
        for (size_t chunk = std::max<size_t>(1, part->size() / 2); chunk >= 1; chunk /= 2) {
          for (size_t start = 0; start < part->size();) {
            std::vector<Step> fewer(part->begin(), part->begin() + start);
            fewer.insert(fewer.end(), part->begin() + std::min(part->size(), start + chunk), part->end());
            const bool still = part == &tail ? fails(head, fewer) : fails(fewer, tail);
            if (still) {
              *part = std::move(fewer);
            } else {
              start += chunk;
            }
          }
          if (chunk == 1) break;
        }
      }
      std::vector<Step> all = head;
      all.insert(all.end(), tail.begin(), tail.end());
      std::string out = absl::StrCat("seed ", seed, ": ", RestoreDiverges(config, all, head.size()),
                                     "\n  config: ", Text(config), "\n  steps (restore before step ", head.size(),
                                     "):\n");
      for (const Step& st : all) absl::StrAppend(&out, "    t=+", (st.now - kStart) / kSec, "s ", Text(st.cmd), "\n");
      ADD_FAILURE() << out;
      return;
    }
  }
}

TEST(PropertyTest, RandomStreamsStayFeasibleAccountedAndDeterministic) { RunProperty(Options{}, Seeds()); }

TEST(PropertyTest, StreamsWithAdoptStayAccountedAndDeterministic) { RunProperty(Options{.adopt = true}, Seeds() / 4); }

// Elastic jobs mixed in (~30% of submits), with acks (valid, stale, out of
// range): sizes followed from the events, shrinks' capacity held for the job
// they free it for, growth only after the queue and never infeasible.
TEST(PropertyTest, ElasticStreamsStayFeasibleAccountedAndDeterministic) {
  RunProperty(Options{.elastic = true}, Seeds());
}

}  // namespace
}  // namespace tidegate::core::property
