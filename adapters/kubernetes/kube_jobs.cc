#include "adapters/kubernetes/kube_jobs.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tidegate::adapters::kube {

namespace {

using json = nlohmann::json;

const json& At(const json& j, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* cur = &j;
  for (const char* p : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(p);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

std::string Str(const json& j, std::initializer_list<const char*> path) {
  const json& v = At(j, path);
  return v.is_string() ? v.get<std::string>() : "";
}

// A whole-number quantity ("2", 2); false for anything else ("500m", "1Gi").
bool Count(const json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return true;
  }
  return v.is_string() && absl::SimpleAtoi(v.get<std::string>(), out);
}

bool HasCondition(const json& job, const char* type) {
  const json& conds = At(job, {"status", "conditions"});
  if (!conds.is_array()) return false;
  for (const json& c : conds) {
    if (Str(c, {"type"}) == type && Str(c, {"status"}) == "True") return true;
  }
  return false;
}

}  // namespace

std::string JobId(const std::string& name_space, const std::string& name) {
  return absl::StrCat("k8s:", name_space, "/", name);
}

bool ParseJobId(const std::string& id, std::string* name_space, std::string* name) {
  if (id.rfind("k8s:", 0) != 0) return false;
  const auto slash = id.find('/', 4);
  if (slash == std::string::npos || slash == 4 || slash + 1 == id.size()) return false;
  *name_space = id.substr(4, slash - 4);
  *name = id.substr(slash + 1);
  return true;
}

// About 110 lines: a Job's fields mapped one after the other (team, phase,
// size and elastic range, per-replica resources, priority), each naming the
// field when it is wrong, as docs/kubernetes.md lists them.
std::optional<ClusterJob> MapJob(const json& job, const KubeOptions& options, const PodCounts& pods,
                                 const std::map<std::string, int64_t>& priority_classes) {
  const std::string ns = Str(job, {"metadata", "namespace"});
  const std::string name = Str(job, {"metadata", "name"});
  const json& labels = At(job, {"metadata", "labels"});
  std::string team;
  bool labelled = labels.is_object() && labels.contains(kTeamLabel);
  if (labelled) {
    team = labels[kTeamLabel].is_string() ? labels[kTeamLabel].get<std::string>() : "";
  } else if (auto it = options.namespace_team.find(ns); it != options.namespace_team.end()) {
    team = it->second;
  } else {
    return std::nullopt;  // not the broker's Job.
  }
  ClusterJob out;
  out.id = JobId(ns, name);
  out.note = Str(job, {"metadata", "annotations", kReasonAnnotation});
  const bool suspended = At(job, {"spec", "suspend"}).is_boolean() && At(job, {"spec", "suspend"}).get<bool>();
  if (HasCondition(job, "Complete")) {
    out.phase = JobPhase::kEnded;
    out.state = "COMPLETED";
  } else if (HasCondition(job, "Failed")) {
    out.phase = JobPhase::kEnded;
    out.state = "FAILED";
  } else if (!Str(job, {"metadata", "deletionTimestamp"}).empty()) {
    out.phase = JobPhase::kEnded;
    out.state = "DELETING";
  } else if (!suspended) {
    out.phase = JobPhase::kRunning;
    out.state = "Running";
  } else if (pods.holding > 0) {
    out.phase = JobPhase::kRunning;  // suspended, its pods still terminating: it holds its GPUs.
    out.state = "Suspending";
  } else {
    out.phase = JobPhase::kWaiting;
    out.state = "Suspended";
  }

  v1::JobSpec& spec = out.spec;
  spec.set_job(out.id);
  spec.set_team(team);
  spec.set_cluster(options.cluster);
  spec.set_requeue(true);
  (*spec.mutable_labels())["k8s_namespace"] = ns;
  (*spec.mutable_labels())["k8s_name"] = name;
  int64_t parallelism = 1;
  if (const json& p = At(job, {"spec", "parallelism"}); p.is_number_integer()) parallelism = p.get<int64_t>();
  const std::string elastic = Str(job, {"metadata", "annotations", kElasticAnnotation});
  auto problem = [&](std::string why) {
    if (out.problem.empty()) out.problem = std::move(why);
  };
  if (!elastic.empty()) {
    std::vector<std::string> parts = absl::StrSplit(elastic, ':');
    int64_t lo = 0, hi = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &lo) || !absl::SimpleAtoi(parts[1], &hi) || lo < 1 ||
        hi < lo) {
      problem(absl::StrCat("annotation ", kElasticAnnotation, " '", elastic, "': expected MIN:MAX with 1 <= MIN <= MAX"));
    } else {
      spec.mutable_elastic()->set_min(lo);
      spec.mutable_elastic()->set_max(hi);
      // It states its size only when it runs (adopted at that size); a new one starts at MIN.
      if (out.phase == JobPhase::kRunning) spec.set_replicas(parallelism);
    }
  } else {
    spec.set_replicas(parallelism);
  }
  if (parallelism < 1 && out.phase != JobPhase::kEnded) problem("spec.parallelism is 0: nothing to admit");
  if (labelled && team.empty()) problem(absl::StrCat("no team: label the Job ", kTeamLabel, "=TEAM"));
  if (Str(job, {"spec", "completionMode"}) == "Indexed") {
    problem("Indexed Jobs (spec.completionMode: Indexed) are not supported by tidegate yet");
  }
  // Per replica: what one pod asks for (limits; requests where a resource has no limit).
  const json& containers = At(job, {"spec", "template", "spec", "containers"});
  if (containers.is_array()) {
    for (const json& c : containers) {
      std::map<std::string, json> wants;
      for (const char* kind : {"requests", "limits"}) {  // limits win.
        const json& r = At(c, {"resources", kind});
        if (r.is_object()) {
          for (auto it = r.begin(); it != r.end(); ++it) wants[it.key()] = it.value();
        }
      }
      for (const auto& [resource, quantity] : wants) {
        auto mapped = options.resources.find(resource);
        if (mapped == options.resources.end()) {
          if (resource.rfind("nvidia.com/", 0) == 0) {
            problem(absl::StrCat("resource ", resource, " is not mapped to a broker resource (agent --resource)"));
          }
          continue;
        }
        int64_t n = 0;
        if (!Count(quantity, &n) || n < 0) {
          problem(absl::StrCat("resource ", resource, ": '", quantity.dump(), "' is not a whole number"));
          continue;
        }
        if (n > 0) (*spec.mutable_per_replica())[mapped->second] += n;
      }
    }
  }
  if (options.gpu_jobs_only && spec.per_replica().empty()) {
    problem("the Job asks for no GPU (limits nvidia.com/gpu) and this agent gates GPU Jobs only");
  }
  if (const std::string pc = Str(job, {"spec", "template", "spec", "priorityClassName"}); !pc.empty()) {
    auto it = priority_classes.find(pc);
    if (it == priority_classes.end()) {
      problem(absl::StrCat("PriorityClass '", pc, "' not found"));
    } else {
      spec.set_priority(static_cast<int32_t>(it->second));
    }
  }
  return out;
}

std::map<std::string, int64_t> NodeCapacity(const std::vector<json>& nodes, const KubeOptions& options) {
  std::map<std::string, int64_t> out;
  for (const auto& [k8s, broker] : options.resources) out[broker] += 0;
  for (const json& node : nodes) {
    if (At(node, {"spec", "unschedulable"}).is_boolean() && At(node, {"spec", "unschedulable"}).get<bool>()) continue;
    bool ready = false;
    if (const json& conds = At(node, {"status", "conditions"}); conds.is_array()) {
      for (const json& c : conds) ready = ready || (Str(c, {"type"}) == "Ready" && Str(c, {"status"}) == "True");
    }
    if (!ready) continue;
    const json& alloc = At(node, {"status", "allocatable"});
    if (!alloc.is_object()) continue;
    for (const auto& [k8s, broker] : options.resources) {
      int64_t n = 0;
      if (alloc.contains(k8s) && Count(alloc[k8s], &n) && n > 0) out[broker] += n;
    }
  }
  return out;
}

std::map<std::string, PodCounts> CountPods(const std::vector<json>& pods) {
  std::map<std::string, PodCounts> out;
  for (const json& pod : pods) {
    const std::string phase = Str(pod, {"status", "phase"});
    if (phase == "Succeeded" || phase == "Failed") continue;
    const json& owners = At(pod, {"metadata", "ownerReferences"});
    if (!owners.is_array()) continue;
    for (const json& o : owners) {
      if (Str(o, {"kind"}) != "Job") continue;
      PodCounts& c = out[Str(o, {"uid"})];
      ++c.holding;
      if (Str(pod, {"metadata", "deletionTimestamp"}).empty()) ++c.active;
      else ++c.terminating;
    }
  }
  return out;
}

}  // namespace tidegate::adapters::kube
