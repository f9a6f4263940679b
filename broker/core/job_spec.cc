// Job specs as the core accepts them (docs/policy.md §2 inputs, docs/jobs.md):
// bounds, parsing into a Job with defaults filled in, and the texts of a
// refused spec.
#include "broker/core/job_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "broker/core/names.h"
#include "broker/core/spec_bytes.h"

namespace tidegate::core {

Event RejectEvent(const v1::JobSpec& spec, const absl::Status& why, Time now) {
  Event e;
  e.type = EventType::kReject;
  e.job = spec.job();
  e.team = spec.team();
  e.reason = std::string(why.message());
  e.at = now;
  return e;
}

std::string EndedDifferentSpecReason(const std::string& id, const EndedJob& ended, int64_t retention_s) {
  return absl::StrCat("job '", id, "' already exists: it ended at ", ended.ended_at,
                      " ms with a different spec, and its id stays taken for ", retention_s, " s after it ended");
}

std::string DifferentSpecReason(const std::string& id) {
  return absl::StrCat("job '", id, "' already exists with a different spec");
}

absl::StatusOr<Job> ParseSubmit(const CompiledConfig& config, const v1::JobSpec& spec, Time now) {
  if (spec.draining()) {
    return absl::InvalidArgumentError("draining: only adopt may record a job that is already draining");
  }
  if (absl::Status bounds = CheckSubmitBounds(spec, /*adopt=*/false); !bounds.ok()) return bounds;
  return ParseJobSpec(config, spec, now);
}

// About 100 lines: one check per field of the spec, in field order, each
// naming the field; split, it would only scatter that list.
absl::StatusOr<Job> ParseJobSpec(const CompiledConfig& c, const v1::JobSpec& in, Time now) {
  const int R = c.num_resources();
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (in.job().empty()) return bad("job: the job id is empty");
  Job job;
  job.id = in.job();
  auto team = c.node_index.find(in.team());
  if (team == c.node_index.end()) return bad("team: '", in.team(), "' is not a team");
  if (!c.nodes[team->second].leaf) return bad("team: '", in.team(), "' is not a leaf team (jobs belong to leaf teams)");
  job.team = team->second;
  if (in.cluster().empty()) {
    if (c.clusters.size() != 1) return bad("cluster: required when there are several clusters");
    job.cluster = 0;
  } else {
    auto cl = c.cluster_index.find(in.cluster());
    if (cl == c.cluster_index.end()) return bad("cluster: '", in.cluster(), "' is not a cluster");
    job.cluster = cl->second;
  }
  const bool elastic = in.elastic().min() != 0 || in.elastic().max() != 0;
  if (elastic) {
    if (in.has_replicas()) return bad("replicas: ", in.replicas(), " is for rigid jobs; an elastic job sets elastic.min and elastic.max");
    if (in.elastic().min() <= 0) return bad("elastic.min: ", in.elastic().min(), " must be > 0");
    if (in.elastic().max() < in.elastic().min()) {
      return bad("elastic.max: ", in.elastic().max(), " must be >= elastic.min (", in.elastic().min(), ")");
    }
    job.elastic_min = in.elastic().min();
    job.elastic_max = in.elastic().max();
    job.replicas = job.elastic_min;  // the gang it is admitted with.
  } else {
    job.replicas = in.has_replicas() ? in.replicas() : 1;
    if (job.replicas <= 0) return bad("replicas: ", job.replicas, " must be > 0");
  }
  const int64_t most_replicas = elastic ? job.elastic_max : job.replicas;
  if (in.per_replica().empty()) return bad("per_replica: no resources requested");
  job.demand.assign(R, 0);
  job.per_replica.assign(R, 0);
  for (const auto& [name, q] : in.per_replica()) {
    auto r = c.resource_index.find(name);
    if (r == c.resource_index.end()) return bad("per_replica.", name, ": unknown resource '", name, "'");
    if (q < 0) return bad("per_replica.", name, ": ", q, " must be >= 0");
    auto d = CheckedMul(q, most_replicas);
    if (!d) return bad("per_replica.", name, ": ", most_replicas, " replicas x ", q, " overflows int64");
    job.per_replica[r->second] = q;
    job.demand[r->second] = q * job.replicas;
    job.requested |= ResourceMask{1} << r->second;
  }
  Quantity gpus = 0, largest = 0;
  for (int r = 0; r < R; ++r) {
    if (c.is_gpu[r]) gpus = SatAdd(gpus, job.demand[r]);
    largest = std::max(largest, job.demand[r]);
  }
  job.gpus = gpus > 0 ? gpus : largest;
  job.priority = in.priority();
  const int64_t grace_s = in.has_grace_s() ? in.grace_s() : c.policy.default_grace_s;
  if (grace_s < 0) return bad("grace_s: ", grace_s, " must be >= 0");
  auto grace = CheckedMul(grace_s, kMillisPerSecond);
  if (!grace) return bad("grace_s: ", grace_s, " is out of range");
  job.grace_ms = *grace;
  job.requeue = in.has_requeue() ? in.requeue() : true;
  // Seconds to milliseconds, checked: a wrapped time would reorder queues
  // and lost work.
  auto millis = [&](const char* field, int64_t seconds) -> absl::StatusOr<Time> {
    if (seconds < 0) return bad(field, ": ", seconds, " must be >= 0");
    auto ms = CheckedMul(seconds, kMillisPerSecond);
    if (!ms) return bad(field, ": ", seconds, " is out of range (at most ", kInfinite / kMillisPerSecond, " s)");
    return *ms;
  };
  if (in.has_checkpoint_interval_s()) {
    auto ms = millis("checkpoint_interval_s", in.checkpoint_interval_s());
    if (!ms.ok()) return ms.status();
    job.checkpoint_interval_ms = *ms;
  }
  if (in.has_last_checkpoint_at()) {
    auto ms = millis("last_checkpoint_at", in.last_checkpoint_at());
    if (!ms.ok()) return ms.status();
    job.last_checkpoint = *ms;
  }
  if (in.has_created_at()) {
    auto ms = millis("created_at", in.created_at());
    if (!ms.ok()) return ms.status();
    job.created_at = *ms;
  } else {
    job.created_at = now;
  }
  if (in.has_run_s()) {
    auto ms = millis("run_s", in.run_s());
    if (!ms.ok()) return ms.status();
  }

  // The normalized spec: defaults filled in, so resubmissions compare equal.
  v1::JobSpec normalized = in;
  normalized.set_cluster(c.clusters[job.cluster].name);
  if (!elastic) normalized.set_replicas(job.replicas);
  normalized.set_grace_s(grace_s);
  normalized.set_requeue(job.requeue);
  normalized.clear_created_at();
  normalized.clear_draining();
  job.spec_bytes = SpecBytes(normalized);
  return job;
}

absl::Status CheckSubmitBounds(const v1::JobSpec& in, bool adopt) {
  if (auto st = ValidateName("job", in.job()); !st.ok()) return st;
  if (auto st = ValidateLabels("labels", in.labels()); !st.ok()) return st;
  if (in.has_elastic() && in.elastic().min() == 0 && in.elastic().max() == 0) {
    return absl::InvalidArgumentError(
        "elastic: {min: 0, max: 0} is no range; omit elastic for a rigid job, or set 1 <= min <= max");
  }
  bool positive = false, negative = false;
  for (const auto& [name, q] : in.per_replica()) {
    positive |= q > 0;
    negative |= q < 0;  // ParseJobSpec names it.
  }
  // adopt records what already runs, without quota checks (docs/design.md §9).
  if (!adopt && !in.per_replica().empty() && !positive && !negative) {
    return absl::InvalidArgumentError(
        "per_replica: every quantity is 0; a job must ask for a positive amount of some resource");
  }
  return absl::OkStatus();
}

absl::StatusOr<Job> ParseAdopted(const CompiledConfig& c, const v1::JobSpec& in, Time now) {
  const bool elastic = in.elastic().min() != 0 || in.elastic().max() != 0;
  if (!elastic || !in.has_replicas()) return ParseJobSpec(c, in, now);
  v1::JobSpec gang = in;
  gang.clear_replicas();
  absl::StatusOr<Job> job = ParseJobSpec(c, gang, now);
  if (!job.ok()) return job;
  const int64_t replicas = in.replicas();
  if (replicas <= 0) return absl::InvalidArgumentError(absl::StrCat("replicas: ", replicas, " must be > 0"));
  Quantity gpus = 0, largest = 0;
  for (int r = 0; r < c.num_resources(); ++r) {
    auto d = CheckedMul(job->per_replica[r], replicas);
    if (!d) {
      return absl::InvalidArgumentError(absl::StrCat("per_replica.", c.resources[r], ": ", replicas, " replicas x ",
                                                     job->per_replica[r], " overflows int64"));
    }
    job->demand[r] = *d;
    if (c.is_gpu[r]) gpus = SatAdd(gpus, *d);
    largest = std::max(largest, *d);
  }
  job->replicas = replicas;
  job->gpus = gpus > 0 ? gpus : largest;
  return job;
}

}  // namespace tidegate::core
