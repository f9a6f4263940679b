// Benchmarks of the broker core (docs/design.md §10: speed is measured here, never
// by timed assertions in tests).
//
//   bench_core --benchmark_min_time=0.2
//
// Targets: >= 200,000 non-preempting decisions/s on a 1,000-team tree with
// 100,000 running jobs; a victim search over 10,000 candidates < 1 ms; core
// memory for 100,000 jobs < 150 MB; per-event cost flat in the queue length,
// also when teams may preempt their own jobs; decisions with 10,000 teams
// (after ApplyConfig) and with a 1,000-rule tide calendar within 2x of a
// small config; no insert into the live jobs' index pausing for the whole of
// it as it grows to a million.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "broker/core/broker.h"
#include "broker/core/job_index.h"
#include "broker/core/state.h"

namespace tidegate::core {
namespace {

constexpr Time kSec = kMillisPerSecond;

v1::ResourceQuota Quota(Quantity g) {
  v1::ResourceQuota q;
  q.set_guaranteed(g);
  return q;
}

v1::Team* AddTeam(v1::Config* c, const std::string& name, const std::string& parent) {
  v1::Team* t = c->add_teams();
  t->set_name(name);
  t->set_parent(parent);
  return t;
}

void SetCapacity(v1::Config* c, Quantity gpus) {
  v1::Cluster* k = c->add_clusters();
  k->set_name("k1");
  (*k->mutable_capacity())["gpu"] = gpus;
}

internal::v1::Command Submit(const std::string& id, const std::string& team, Quantity gpus, int64_t grace_s = 30,
                   bool requeue = true) {
  internal::v1::Command cmd;
  v1::JobSpec* s = cmd.mutable_submit();
  s->set_job(id);
  s->set_team(team);
  (*s->mutable_per_replica())["gpu"] = gpus;
  s->set_grace_s(grace_s);
  if (!requeue) s->set_requeue(false);
  return cmd;
}

internal::v1::Command Finish(const std::string& id) {
  internal::v1::Command cmd;
  cmd.set_finish(id);
  return cmd;
}

std::unique_ptr<Broker> Create(const v1::Config& c) {
  auto b = Broker::Create(c, 0);
  if (!b.ok()) {
    std::fprintf(stderr, "config: %s\n", std::string(b.status().message()).c_str());
    std::abort();
  }
  return *std::move(b);
}

// Asserts the outcome a benchmark relies on, so a behaviour change cannot
// silently turn it into a benchmark of something else.
void Expect(const std::vector<Event>& events, EventType type, const char* what) {
  for (const Event& e : events) {
    if (e.type == type) return;
  }
  std::fprintf(stderr, "benchmark precondition failed: %s (no %s event)\n", what, EventTypeName(type));
  for (const Event& e : events) {
    std::fprintf(stderr, "  got %s %s: %s\n", EventTypeName(e.type), e.job.c_str(), e.reason.c_str());
  }
  std::abort();
}

// ---------------------------------------------------------------- big tree

// 10 orgs x 10 groups x 10 leaf teams, each leaf guaranteed 100 GPUs and
// running 100 one-GPU jobs: 1,000 teams and 100,000 running jobs, every team
// exactly at its guarantee. `spare` GPUs of capacity are left free.
constexpr int kFanout = 10;
constexpr int kJobsPerLeaf = 100;

std::string Leaf(int i) { return absl::StrCat("o", i / 100, "/g", i / 10 % 10, "/t", i % 10); }

v1::Config BigTree(Quantity spare) {
  v1::Config c;
  SetCapacity(&c, Quantity{kFanout * kFanout * kFanout * kJobsPerLeaf} + spare);
  for (int o = 0; o < kFanout; ++o) {
    const std::string org = absl::StrCat("o", o);
    AddTeam(&c, org, "");
    for (int g = 0; g < kFanout; ++g) {
      const std::string group = absl::StrCat(org, "/g", g);
      AddTeam(&c, group, org);
      for (int t = 0; t < kFanout; ++t) {
        (*AddTeam(&c, absl::StrCat(group, "/t", t), group)->mutable_quota())["gpu"] = Quota(kJobsPerLeaf);
      }
    }
  }
  return c;
}

std::unique_ptr<Broker> BigState(Quantity spare) {
  std::unique_ptr<Broker> b = Create(BigTree(spare));
  for (int leaf = 0; leaf < kFanout * kFanout * kFanout; ++leaf) {
    const std::string team = Leaf(leaf);
    for (int j = 0; j < kJobsPerLeaf; ++j) {
      Expect(b->Apply(Submit(absl::StrCat(team, "-", j), team, 1), 0), EventType::kAdmit, "big state: every job runs");
    }
  }
  if (b->ClusterUsed("k1", "gpu") != kFanout * kFanout * kFanout * kJobsPerLeaf) {
    std::fprintf(stderr, "big state: %lld GPUs used\n", static_cast<long long>(b->ClusterUsed("k1", "gpu")));
    std::abort();
  }
  return b;
}

// Resident set size in bytes (/proc/self/statm, second field in pages).
size_t Rss() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long size = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}
size_t HeapInUse() { return mallinfo2().uordblks; }

// (d) Core memory for 100,000 running jobs. Registered first, so earlier
// benchmarks' freed memory does not hide the growth.
void BM_MemoryFor100kJobs(benchmark::State& state) {
  for (auto _ : state) {
    malloc_trim(0);
    const size_t rss0 = Rss(), heap0 = HeapInUse();
    std::unique_ptr<Broker> b = BigState(/*spare=*/0);
    const size_t rss1 = Rss(), heap1 = HeapInUse();
    state.counters["rss_MB"] = static_cast<double>(rss1 - rss0) / (1 << 20);
    state.counters["heap_MB"] = static_cast<double>(heap1 - heap0) / (1 << 20);
    state.counters["bytes_per_job"] = static_cast<double>(heap1 - heap0) / b->JobCount();
    state.counters["jobs"] = static_cast<double>(b->JobCount());
  }
}
BENCHMARK(BM_MemoryFor100kJobs)->Iterations(1)->Unit(benchmark::kMillisecond);

// (a) Non-preempting decisions on the big tree. Capacity has 10 GPUs spare.
// Each item is one submit decision plus the finish that restores the state:
//   0: admitted (1 GPU, borrowing the spare capacity);
//   1: queued at the preemption gate (2,000 GPUs: above every guarantee on
//      the path, borrow_within_cohort never);
//   2: queued after a victim search that finds nobody (50 GPUs, within the
//      team's guarantee, but no team borrows).
// As in a broker that has run for a while, the retained finished jobs are at
// their bound from the start (each finish also forgets the oldest), not only
// in runs long enough to get there, and the clock moves: the retained jobs
// ended over the 1,000 s before the first decision, and the decisions come
// 100 to a millisecond.
constexpr Time kDecisionsFrom = 1000 * kSec;
constexpr int kDecisionsPerMilli = 100;
std::unique_ptr<Broker>& Shared() {
  static std::unique_ptr<Broker> b;
  if (!b) {
    b = BigState(/*spare=*/10);
    const size_t kept = State::kMaxEndedKept;
    for (size_t i = 0; i < kept; ++i) {
      const std::string id = absl::StrCat("ended", i);
      const Time at = static_cast<Time>(i) * kDecisionsFrom / static_cast<Time>(kept);
      b->Apply(Submit(id, Leaf(static_cast<int>(i % 1000)), 1), at);
      b->Apply(Finish(id), at);
    }
  }
  return b;
}

// One item of BM_Decision; not inlined, so that callgrind can count it alone
// (--toggle-collect=*DecisionWithFinish*).
[[gnu::noinline]] void DecisionWithFinish(Broker& b, const std::string& id, const std::string& team, Quantity gpus,
                                          Time now) {
  benchmark::DoNotOptimize(b.Apply(Submit(id, team, gpus), now));
  benchmark::DoNotOptimize(b.Apply(Finish(id), now));
}

void BM_Decision(benchmark::State& state) {
  Broker& b = *Shared();
  const int kind = static_cast<int>(state.range(0));
  const Quantity gpus = kind == 0 ? 1 : kind == 1 ? 2000 : 50;
  const EventType expect = kind == 0 ? EventType::kAdmit : EventType::kQueue;
  static int64_t decisions = 0;  // over every run: the shared broker's clock.
  auto now = [] { return kDecisionsFrom + decisions / kDecisionsPerMilli; };
  // The broker is shared by every run of every kind, and a finished job's id
  // is retained (a resubmit is an idempotent no-op), so each run's ids are
  // its own.
  static int64_t runs = 0;
  const int64_t run = runs++;
  int64_t i = 0;
  const std::string probe = absl::StrCat("probe", run);
  Expect(b.Apply(Submit(probe, Leaf(0), gpus), now()), expect, "decision kind");
  b.Apply(Finish(probe), now());
  for (auto _ : state) {
    DecisionWithFinish(b, absl::StrCat("d", run, ".", i), Leaf(static_cast<int>(i % 1000)), gpus, now());
    ++i;
    ++decisions;
  }
  state.SetItemsProcessed(state.iterations());  // decisions (each with its finish)
  state.counters["jobs"] = static_cast<double>(b.JobCount());
}
BENCHMARK(BM_Decision)->Arg(0)->Arg(1)->Arg(2)->ArgName("kind");

// ---------------------------------------------------------------- victims

// (b) One borrowing team with 10,000 one-GPU running jobs (grace 0, no
// requeue); the owner asks for `victims` GPUs of its guarantee, so the search
// sees 10,000 candidates. Timed: that one Apply (search, evictions, the
// owner's admission). Untimed: the owner finishes, the victims come back.
void BM_VictimSearch10k(benchmark::State& state) {
  const Quantity need = state.range(0);
  const bool fair = state.range(1) != 0;
  v1::Config c;
  SetCapacity(&c, 10000);
  (*AddTeam(&c, "owner", "")->mutable_quota())["gpu"] = Quota(9000);
  (*AddTeam(&c, "borrower", "")->mutable_quota())["gpu"] = Quota(1000);
  c.mutable_policy()->set_fair_sharing(fair);
  std::unique_ptr<Broker> b = Create(c);
  for (int j = 0; j < 10000; ++j) b->Apply(Submit(absl::StrCat("b", j), "borrower", 1, 0, false), 0);
  Time now = kSec;
  int64_t i = 0;
  for (auto _ : state) {
    const std::string id = absl::StrCat("owner", i++);
    const std::vector<Event> events = b->Apply(Submit(id, "owner", need), now);
    state.PauseTiming();
    std::vector<std::string> victims;
    for (const Event& e : events) {
      if (e.type == EventType::kReclaim) victims = e.victims;
    }
    if (static_cast<Quantity>(victims.size()) != need) {
      state.SkipWithError("the owner's submit did not reclaim the expected victims");
      break;
    }
    b->Apply(Finish(id), now);
    // New ids: an ended job's id stays known (retention), so a resubmit
    // under it would not run again.
    for (size_t v = 0; v < victims.size(); ++v) b->Apply(Submit(absl::StrCat("b", i, ".", v), "borrower", 1, 0, false), now);
    now += kSec;
    state.ResumeTiming();
  }
  state.counters["candidates"] = 10000;
}
BENCHMARK(BM_VictimSearch10k)
    ->ArgNames({"victims", "fair"})
    ->Args({1, 0})
    ->Args({100, 0})
    ->Args({1, 1})
    ->Args({100, 1})
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------- queue

// (c) Per-event cost beside a long queue of jobs that cannot fit now (500
// GPUs each; 10 of 1,000 are free) but could under the config (not
// exceeds_max). Args: queued jobs, teams they are spread over, and whether
// the waiting teams allow within-team preemption (which makes the cheap
// "nobody in this team can be admitted or preempt" skip unusable). Timed: a
// one-GPU job of another team submitted (admitted) and finished.
void BM_EventBesideLongQueue(benchmark::State& state) {
  const int queued = static_cast<int>(state.range(0));
  const int teams = static_cast<int>(state.range(1));
  const bool within_team = state.range(2) != 0;
  v1::Config c;
  SetCapacity(&c, 1000);
  (*AddTeam(&c, "hog", "")->mutable_quota())["gpu"] = Quota(500);
  (*AddTeam(&c, "fit", "")->mutable_quota())["gpu"] = Quota(10);
  for (int t = 0; t < teams; ++t) {
    v1::Team* w = AddTeam(&c, absl::StrCat("wait", t), "");
    if (within_team) w->mutable_preemption()->set_within_team(v1::WITHIN_TEAM_LOWER_PRIORITY);
  }
  std::unique_ptr<Broker> b = Create(c);
  Expect(b->Apply(Submit("hog", "hog", 980), 0), EventType::kAdmit, "hog admitted");
  for (int j = 0; j < queued; ++j) {
    b->Apply(Submit(absl::StrCat("w", j), absl::StrCat("wait", j % teams), 500), 0);
  }
  Time now = kSec;
  int64_t i = 0;
  Expect(b->Apply(Submit("probe", "fit", 1), now), EventType::kAdmit, "small job admitted");
  b->Apply(Finish("probe"), now);
  for (auto _ : state) {
    const std::string id = absl::StrCat("f", i++);
    benchmark::DoNotOptimize(b->Apply(Submit(id, "fit", 1), now));
    benchmark::DoNotOptimize(b->Apply(Finish(id), now));
    now += kSec;
  }
  state.SetItemsProcessed(state.iterations() * 2);  // events
  state.counters["queued"] = static_cast<double>(b->JobCount() - 1);
}
BENCHMARK(BM_EventBesideLongQueue)
    ->ArgNames({"queued", "teams", "within_team"})
    ->Args({0, 1, 0})
    ->Args({1000, 1, 0})
    ->Args({10000, 1, 0})
    ->Args({1000, 100, 0})
    ->Args({10000, 100, 0})
    ->Args({0, 1, 1})
    ->Args({1000, 1, 1})
    ->Args({10000, 1, 1})
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------- config size

// (e) Decisions after ApplyConfig replaced a 10-team config by one of `teams`
// top-level teams (10 GPUs guaranteed each, capacity to match). Timed: a
// one-GPU submit (admitted) and its finish, one team after another, the
// clock advancing one second per item.
void BM_DecisionAfterApplyConfig(benchmark::State& state) {
  const int teams = static_cast<int>(state.range(0));
  auto config = [](int n) {
    v1::Config c;
    SetCapacity(&c, Quantity{10} * n);
    for (int t = 0; t < n; ++t) (*AddTeam(&c, absl::StrCat("t", t), "")->mutable_quota())["gpu"] = Quota(10);
    return c;
  };
  std::unique_ptr<Broker> b = Create(config(10));
  internal::v1::Command apply;
  *apply.mutable_apply_config() = config(teams);
  b->Apply(apply, 0);
  Time now = kSec;
  int64_t i = 0;
  Expect(b->Apply(Submit("probe", absl::StrCat("t", teams - 1), 1), now), EventType::kAdmit, "new team admits");
  b->Apply(Finish("probe"), now);
  for (auto _ : state) {
    const std::string id = absl::StrCat("d", i);
    const std::string team = absl::StrCat("t", i++ % teams);
    benchmark::DoNotOptimize(b->Apply(Submit(id, team, 1), now));
    benchmark::DoNotOptimize(b->Apply(Finish(id), now));
    now += kSec;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecisionAfterApplyConfig)->ArgName("teams")->Arg(10)->Arg(10000)->Unit(benchmark::kMicrosecond);

// (f) Decisions under a tide calendar of `rules` rules: 100 teams, each with
// rules/100 one-hour windows on distinct weekdays and hours (UTC), raising
// its guarantee from 10 to 12 GPUs. Timed as (e), the clock advancing one
// minute per item, so tide boundaries pass during the run.
void BM_DecisionTideCalendar(benchmark::State& state) {
  const int rules = static_cast<int>(state.range(0));
  constexpr int kTeams = 100;
  v1::Config c;
  SetCapacity(&c, 12 * kTeams);
  for (int t = 0; t < kTeams; ++t) {
    v1::Team* team = AddTeam(&c, absl::StrCat("t", t), "");
    (*team->mutable_quota())["gpu"] = Quota(10);
    for (int k = 0; k < rules / kTeams; ++k) {
      const int slot = (t + k * 17) % (7 * 24);  // one hour of the week, distinct per team.
      v1::TideRule* r = team->add_tide();
      r->add_days(static_cast<v1::Weekday>(1 + slot / 24));
      r->set_from(absl::StrCat(slot % 24 < 10 ? "0" : "", slot % 24, ":00"));
      r->set_to(absl::StrCat(slot % 24 < 9 ? "0" : "", slot % 24 + 1, ":00"));
      r->set_timezone("UTC");
      (*r->mutable_quota())["gpu"] = Quota(12);
    }
  }
  std::unique_ptr<Broker> b = Create(c);
  Time now = kSec;
  int64_t i = 0;
  Expect(b->Apply(Submit("probe", "t0", 1), now), EventType::kAdmit, "small job admitted");
  b->Apply(Finish("probe"), now);
  for (auto _ : state) {
    DecisionWithFinish(*b, absl::StrCat("d", i), absl::StrCat("t", i % kTeams), 1, now);
    ++i;
    now += 60 * kSec;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecisionTideCalendar)->ArgName("rules")->Arg(0)->Arg(1000)->Unit(benchmark::kMicrosecond);

// (g) The longest single insert while the live jobs' index grows to a
// million ids: the core's own pause when a broker keeps every job. sharded:0
// is one hash map of them all (what State kept before JobIndex), sharded:1
// the JobIndex. The counters are the slowest insert and the mean.
template <typename Index, typename Set>
void GrowIndex(benchmark::State& state, Set set) {
  constexpr int kIds = 1000000;
  std::vector<std::string> ids;
  ids.reserve(kIds);
  for (int i = 0; i < kIds; ++i) ids.push_back(absl::StrCat("lg-", i % 32, "-", i));
  for (auto _ : state) {
    Index index;
    double slowest_us = 0;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < kIds; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      set(index, ids[i], i);
      slowest_us = std::max(slowest_us, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    const double total_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
    state.counters["slowest_insert_us"] = slowest_us;
    state.counters["mean_insert_us"] = total_us / kIds;
  }
}
void BM_JobIndexGrowth(benchmark::State& state) {
  if (state.range(0) == 0) {
    GrowIndex<absl::flat_hash_map<std::string, int>>(
        state, [](absl::flat_hash_map<std::string, int>& m, const std::string& id, int slot) { m[id] = slot; });
  } else {
    GrowIndex<JobIndex>(state, [](JobIndex& m, const std::string& id, int slot) { m.Set(id, slot); });
  }
}
BENCHMARK(BM_JobIndexGrowth)->ArgName("sharded")->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidegate::core

BENCHMARK_MAIN();
