#include "adapters/kubernetes/kube_driver.h"

#include <chrono>
#include <ctime>
#include <set>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tidegate::adapters::kube {

namespace {

using json = nlohmann::json;

std::string Escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string Key(const json& obj) {
  const json& m = obj["metadata"];
  return absl::StrCat(m.value("namespace", ""), "/", m.value("name", ""));
}

// The message of a Status body, else the body itself.
std::string Why(const KubeResponse& r) {
  json s = json::parse(r.body, nullptr, false);
  if (!s.is_discarded() && s.is_object() && s.contains("message")) {
    return absl::StrCat(r.code, " ", s.value("reason", ""), ": ", s.value("message", ""));
  }
  return absl::StrCat(r.code, ": ", r.body.substr(0, 200));
}

std::string Now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm;
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string JobPath(const std::string& ns, const std::string& name) {
  return absl::StrCat("/apis/batch/v1/namespaces/", ns, "/jobs/", name);
}

}  // namespace

// ---------------------------------------------------------------- Reflector

Reflector::Reflector(const KubeClient* client, std::string path, std::string selector)
    : client_(client), path_(std::move(path)), selector_(std::move(selector)) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() { thread_ = std::thread([this] { Run(); }); }

void Reflector::Stop() {
  stop_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Reflector::Snapshot(std::vector<json>* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!synced_) return false;
  out->clear();
  for (const auto& [k, v] : items_) out->push_back(v);
  return true;
}

void Reflector::Backoff(int64_t* ms) {
  *ms = *ms == 0 ? 200 : std::min<int64_t>(*ms * 2, 5000);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(*ms), [&] { return stop_.load(); });
}

bool Reflector::List() {
  auto r = client_->Request("GET", absl::StrCat(path_, selector_.empty() ? "" : "?labelSelector=", Escape(selector_)));
  if (!r.ok() || r->code != 200) {
    spdlog::warn("list {}: {}", path_, r.ok() ? Why(*r) : std::string(r.status().message()));
    return false;
  }
  json doc = json::parse(r->body, nullptr, false);
  if (doc.is_discarded() || !doc["items"].is_array()) {
    spdlog::warn("list {}: not a list", path_);
    return false;
  }
  std::map<std::string, json> items;
  for (json& o : doc["items"]) {
    std::string key = Key(o);  // before the move: the right side of `=` is evaluated first.
    items[key] = std::move(o);
  }
  std::lock_guard<std::mutex> lock(mu_);
  items_ = std::move(items);
  version_ = doc["metadata"].value("resourceVersion", "");
  synced_ = true;
  ++lists_;
  return true;
}

void Reflector::Run() {
  int64_t backoff = 0;
  bool need_list = true;
  while (!stop_) {
    if (need_list) {
      if (!List()) {
        Backoff(&backoff);
        continue;
      }
      need_list = false;
      backoff = 0;
    }
    std::string version;
    {
      std::lock_guard<std::mutex> lock(mu_);
      version = version_;
    }
    const std::string path = absl::StrCat(path_, "?watch=1&allowWatchBookmarks=true&timeoutSeconds=300",
                                          "&resourceVersion=", Escape(version),
                                          selector_.empty() ? "" : "&labelSelector=", Escape(selector_));
    bool expired = false, failed = false;
    auto code = client_->Stream(
        path,
        [&](const std::string& line) {
          json ev = json::parse(line, nullptr, false);
          if (ev.is_discarded() || !ev.is_object()) return true;
          const std::string type = ev.value("type", "");
          json& obj = ev["object"];
          if (type == "ERROR" || (type.empty() && ev.value("kind", "") == "Status")) {
            const json& st = type.empty() ? ev : obj;
            if (st.value("code", 0) == 410) {
              expired = true;
            } else {
              spdlog::warn("watch {}: {}", path_, st.value("message", line));
              failed = true;
            }
            return false;
          }
          if (!obj.is_object() || !obj["metadata"].is_object()) return true;
          const std::string rv = obj["metadata"].value("resourceVersion", "");
          std::lock_guard<std::mutex> lock(mu_);
          if (type == "ADDED" || type == "MODIFIED") items_[Key(obj)] = obj;
          else if (type == "DELETED") items_.erase(Key(obj));
          if (!rv.empty()) version_ = rv;  // BOOKMARK: only the version moves.
          return !stop_.load();
        },
        &stop_);
    if (stop_) break;
    if (!code.ok()) {
      spdlog::warn("{} (reconnecting)", std::string(code.status().message()));
      Backoff(&backoff);
      continue;
    }
    if (expired || *code == 410) {
      spdlog::info("watch {}: resourceVersion {} expired (410); relisting", path_, version);
      need_list = true;
      continue;
    }
    if (failed || *code != 200) {
      if (!failed) spdlog::warn("watch {}: HTTP {}", path_, *code);
      need_list = true;
      Backoff(&backoff);
      continue;
    }
    backoff = 0;  // the server ended the watch (timeout): watch again from the last version.
  }
}

// ---------------------------------------------------------------- KubeDriver

KubeDriver::KubeDriver(KubeOptions options, std::shared_ptr<KubeClient> client)
    : options_(std::move(options)),
      client_(std::move(client)),
      jobs_(client_.get(), "/apis/batch/v1/jobs", ""),
      pods_(client_.get(), "/api/v1/pods", "batch.kubernetes.io/job-name"),
      nodes_(client_.get(), "/api/v1/nodes", ""),
      priority_classes_(client_.get(), "/apis/scheduling.k8s.io/v1/priorityclasses", "") {
  jobs_.Start();
  pods_.Start();
  nodes_.Start();
  priority_classes_.Start();
}

KubeDriver::~KubeDriver() {
  jobs_.Stop();
  pods_.Stop();
  nodes_.Stop();
  priority_classes_.Stop();
}

absl::StatusOr<ClusterView> KubeDriver::Observe() {
  std::vector<json> jobs, pods, nodes, pcs;
  if (!jobs_.Snapshot(&jobs) || !pods_.Snapshot(&pods) || !nodes_.Snapshot(&nodes) ||
      !priority_classes_.Snapshot(&pcs)) {
    return absl::UnavailableError(absl::StrCat("the API server ", client_->connection().server,
                                               " was not listed yet (jobs, pods, nodes, priorityclasses)"));
  }
  std::map<std::string, int64_t> priorities;
  for (const json& pc : pcs) {
    if (pc["value"].is_number_integer()) priorities[pc["metadata"].value("name", "")] = pc["value"].get<int64_t>();
  }
  const auto counts = CountPods(pods);
  ClusterView view;
  view.capacity = NodeCapacity(nodes, options_);
  std::set<std::string> ids;
  for (const json& job : jobs) {
    auto it = counts.find(job["metadata"].value("uid", ""));
    auto mapped = MapJob(job, options_, it == counts.end() ? PodCounts{} : it->second, priorities);
    if (!mapped) continue;
    ids.insert(mapped->id);
    view.jobs.push_back(*std::move(mapped));
  }
  std::erase_if(written_, [&](const auto& w) { return !ids.contains(w.first); });
  return view;
}

std::optional<json> KubeDriver::CachedJob(const std::string& job) {
  std::string ns, name;
  if (!ParseJobId(job, &ns, &name)) return std::nullopt;
  std::vector<json> jobs;
  jobs_.Snapshot(&jobs);
  for (json& j : jobs) {
    if (j["metadata"].value("namespace", "") == ns && j["metadata"].value("name", "") == name) return std::move(j);
  }
  return std::nullopt;
}

absl::Status KubeDriver::PatchJob(const std::string& job, const json& patch) {
  std::string ns, name;
  if (!ParseJobId(job, &ns, &name)) return absl::InvalidArgumentError(absl::StrCat("not a Kubernetes job id: ", job));
  auto r = client_->Request("PATCH", JobPath(ns, name), patch.dump(), "application/merge-patch+json");
  if (!r.ok()) return r.status();
  if (r->code == 404) return absl::NotFoundError(absl::StrCat(job, ": ", Why(*r)));
  if (r->code != 200) return absl::UnavailableError(absl::StrCat("patch ", job, ": ", Why(*r)));
  return absl::OkStatus();
}

absl::Status KubeDriver::Start(const std::string& job) {
  json patch = {{"spec", {{"suspend", false}}}};
  if (auto cached = CachedJob(job)) {
    // An elastic Job is admitted at MIN; the broker grows it with resizes.
    auto mapped = MapJob(*cached, options_, PodCounts{}, {});
    if (mapped && mapped->spec.has_elastic()) {
      std::optional<int64_t> size = start_size_ ? start_size_(job) : std::nullopt;
      patch["spec"]["parallelism"] = size.value_or(mapped->spec.elastic().min());
    }
  }
  // The reason it waited no longer holds: say so where the user looks.
  const std::string admitted = "tidegate: admitted";
  patch["metadata"]["annotations"][kReasonAnnotation] = admitted;
  if (auto s = PatchJob(job, patch); !s.ok()) return s;
  written_[job] = admitted;
  if (auto s = RecordEvent(job, admitted); !s.ok()) spdlog::warn("event for {}: {}", job, std::string(s.message()));
  return absl::OkStatus();
}

absl::Status KubeDriver::Signal(const std::string& job) { return PatchJob(job, {{"spec", {{"suspend", true}}}}); }

absl::Status KubeDriver::Hold(const std::string& job) { return PatchJob(job, {{"spec", {{"suspend", true}}}}); }

absl::Status KubeDriver::Stop(const std::string& job) {
  if (auto s = PatchJob(job, {{"spec", {{"suspend", true}}}}); !s.ok() && !absl::IsNotFound(s)) return s;
  auto cached = CachedJob(job);
  if (!cached) return absl::OkStatus();
  const std::string uid = (*cached)["metadata"].value("uid", "");
  std::vector<json> pods;
  pods_.Snapshot(&pods);
  for (const json& pod : pods) {
    bool owned = false;
    if (pod["metadata"]["ownerReferences"].is_array()) {
      for (const json& o : pod["metadata"]["ownerReferences"]) owned = owned || o.value("uid", "") == uid;
    }
    if (!owned) continue;
    auto r = client_->Request("DELETE",
                              absl::StrCat("/api/v1/namespaces/", pod["metadata"].value("namespace", ""), "/pods/",
                                           pod["metadata"].value("name", "")),
                              R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0})");
    if (!r.ok()) return r.status();
    if (r->code != 200 && r->code != 404) return absl::UnavailableError(absl::StrCat("delete pod: ", Why(*r)));
  }
  return absl::OkStatus();
}

absl::Status KubeDriver::Requeue(const std::string& job) {
  return absl::UnimplementedError(absl::StrCat(job, ": a finished Kubernetes Job cannot run again"));
}

absl::Status KubeDriver::Annotate(const std::string& job, const std::string& text) {
  // The cache may not show our last patch yet: one patch and one Event per change.
  if (auto it = written_.find(job); it != written_.end() && it->second == text) return absl::OkStatus();
  if (auto s = PatchJob(job, {{"metadata", {{"annotations", {{kReasonAnnotation, text}}}}}}); !s.ok()) return s;
  written_[job] = text;
  return RecordEvent(job, text);
}

absl::Status KubeDriver::RecordEvent(const std::string& job, const std::string& text) {
  auto cached = CachedJob(job);
  if (!cached) return absl::OkStatus();
  const json& m = (*cached)["metadata"];
  const std::string ns = m.value("namespace", ""), name = m.value("name", "");
  const std::string now = Now();
  char suffix[32];
  snprintf(suffix, sizeof suffix, "%llx",
           static_cast<unsigned long long>(std::chrono::system_clock::now().time_since_epoch().count()));
  const bool held = text.rfind("tidegate: held", 0) == 0;
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", absl::StrCat(name, ".", suffix)}, {"namespace", ns}}},
             {"involvedObject",
              {{"apiVersion", "batch/v1"},
               {"kind", "Job"},
               {"namespace", ns},
               {"name", name},
               {"uid", m.value("uid", "")},
               {"resourceVersion", m.value("resourceVersion", "")}}},
             {"reason", held ? "TidegateHeld" : "Tidegate"},
             {"message", text},
             {"type", held ? "Warning" : "Normal"},
             {"count", 1},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"source", {{"component", "tidegate-agent"}}},
             {"reportingComponent", "tidegate-agent"},
             {"reportingInstance", options_.cluster}};
  auto r = client_->Request("POST", absl::StrCat("/api/v1/namespaces/", ns, "/events"), ev.dump());
  if (!r.ok()) return r.status();
  if (r->code != 201 && r->code != 200) return absl::UnavailableError(absl::StrCat("event: ", Why(*r)));
  return absl::OkStatus();
}

absl::Status KubeDriver::SetParallelism(const std::string& job, int64_t replicas) {
  return PatchJob(job, {{"spec", {{"parallelism", replicas}}}});
}

std::optional<PodCounts> KubeDriver::Pods(const std::string& job) {
  auto cached = CachedJob(job);
  if (!cached) return std::nullopt;
  std::vector<json> pods;
  pods_.Snapshot(&pods);
  const auto counts = CountPods(pods);
  auto it = counts.find((*cached)["metadata"].value("uid", ""));
  return it == counts.end() ? PodCounts{} : it->second;
}

std::map<std::string, int64_t> KubeDriver::ElasticParallelism() {
  std::map<std::string, int64_t> out;
  std::vector<json> jobs;
  jobs_.Snapshot(&jobs);
  for (const json& j : jobs) {
    auto mapped = MapJob(j, options_, PodCounts{}, {});
    if (mapped && mapped->spec.has_elastic()) {
      out[mapped->id] = j["spec"].value("parallelism", 1);
    }
  }
  return out;
}

}  // namespace tidegate::adapters::kube
