#include "adapters/slurm/slurm_driver.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"

namespace tidegate::adapters {

namespace {

using json = nlohmann::json;

constexpr char kPrefix[] = "slurm:";

std::string SlurmId(const std::string& job) {
  return job.rfind(kPrefix, 0) == 0 ? job.substr(sizeof(kPrefix) - 1) : job;
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}
int64_t Int(const json& j, const char* key, int64_t fallback = 0) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  return it->get<int64_t>();
}
bool Bool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return fallback;
  return it->get<bool>();
}

// One gres request: "gres:gpu:h100:2", "gres/gpu:2", "gpu:2", "gres:gpu".
struct Gres {
  std::string name, type;
  int64_t count = 1;
};
absl::StatusOr<std::vector<Gres>> ParseGresList(const std::string& text) {
  std::vector<Gres> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::string s(item);
    for (const char* p : {"gres:", "gres/"}) {
      if (s.rfind(p, 0) == 0) s = s.substr(5);
    }
    std::vector<std::string> parts = absl::StrSplit(s, ':');
    Gres g;
    g.name = parts[0];
    if (parts.size() >= 2) {
      int64_t n = 0;
      const std::string& last = parts.back();
      if (absl::SimpleAtoi(last, &n)) {
        g.count = n;
        if (parts.size() >= 3) g.type = parts[1];
      } else {
        g.type = last;
      }
    }
    if (g.count <= 0) return absl::InvalidArgumentError(absl::StrCat("gres '", std::string(item), "': bad count"));
    out.push_back(g);
  }
  return out;
}

bool IsTerminal(const std::string& state) {
  static const char* kTerminal[] = {"COMPLETED", "CANCELLED", "FAILED",   "TIMEOUT",      "NODE_FAIL",
                                    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED"};
  for (const char* t : kTerminal) {
    if (state == t) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    close(out[1]);
    close(err[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  std::string stdout_text, stderr_text;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? stdout_text : stderr_text).append(buf, n);
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!stderr_text.empty() && stderr_text.back() == '\n') stderr_text.pop_back();
    return absl::UnavailableError(absl::StrCat(argv[0], " ", argv.size() > 1 ? argv[1] : "", ": ",
                                               stderr_text.empty() ? "failed" : stderr_text));
  }
  return stdout_text;
}

absl::StatusOr<std::vector<ClusterJob>> ParseSqueue(const std::string& text, const SlurmOptions& options) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("jobs") || !doc["jobs"].is_array()) {
    return absl::InvalidArgumentError("squeue --json: not the expected document");
  }
  std::vector<ClusterJob> out;
  for (const json& j : doc["jobs"]) {
    const std::string partition = Str(j, "partition");
    if (!options.partitions.empty() &&
        std::find(options.partitions.begin(), options.partitions.end(), partition) == options.partitions.end()) {
      continue;
    }
    ClusterJob job;
    job.id = absl::StrCat(kPrefix, Int(j, "job_id"));
    job.state = Str(j, "job_state");
    job.note = Str(j, "comment");
    const std::string reason = Str(j, "state_reason");
    if (IsTerminal(job.state)) {
      job.phase = JobPhase::kEnded;
    } else if (job.state == "PENDING") {
      job.phase = (reason == "JobHeldUser" || reason == "JobHeldAdmin") ? JobPhase::kWaiting : JobPhase::kPending;
    } else {
      job.phase = JobPhase::kRunning;  // RUNNING, CONFIGURING, COMPLETING, SUSPENDED, ...
    }
    // Which resources and how many replicas.
    const std::string per_node = Str(j, "tres_per_node");
    const std::string per_task = Str(j, "tres_per_task");
    const std::string per_job = Str(j, "tres_per_job");
    std::string gres_text;
    int64_t replicas = 1;
    if (!per_node.empty()) {
      gres_text = per_node;
      replicas = std::max<int64_t>(1, Int(j, "node_count", 1));
    } else if (!per_task.empty()) {
      gres_text = per_task;
      replicas = std::max<int64_t>(1, Int(j, "tasks", 1));
    } else {
      gres_text = per_job;
    }
    if (gres_text.empty()) continue;  // no gres: not the broker's job.
    v1::JobSpec& spec = job.spec;
    spec.set_job(job.id);
    spec.set_team(Str(j, "account"));
    spec.set_cluster(options.cluster);
    spec.set_replicas(replicas);
    spec.set_priority(static_cast<int32_t>(-Int(j, "nice", 0)));
    spec.set_requeue(options.requeue && Bool(j, "requeue", false));
    (*spec.mutable_labels())["slurm_user"] = Str(j, "user_name");
    (*spec.mutable_labels())["slurm_name"] = Str(j, "name");
    (*spec.mutable_labels())["slurm_partition"] = partition;
    auto gres = ParseGresList(gres_text);
    if (!gres.ok()) {
      job.problem = std::string(gres.status().message());
    } else {
      for (const Gres& g : *gres) {
        if (g.name != "gpu") {
          job.problem = absl::StrCat("gres '", g.name, "' is not one tidegate counts (only gpu)");
          break;
        }
        std::string resource = "gpu";
        if (auto it = options.type_resource.find(g.type); !g.type.empty() && it != options.type_resource.end()) {
          resource = it->second;
        }
        (*spec.mutable_per_replica())[resource] += g.count;
      }
    }
    if (job.problem.empty() && spec.team().empty()) {
      job.problem = "the job has no account; submit it with --account=TEAM";
    }
    if (job.problem.empty() && (Int(j, "array_job_id") != 0 || Int(j, "het_job_id") != 0)) {
      job.problem = "array and heterogeneous jobs are not supported by tidegate yet";
    }
    out.push_back(std::move(job));
  }
  return out;
}

absl::StatusOr<std::map<std::string, int64_t>> ParseSinfo(const std::string& text, const SlurmOptions& options) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("nodes") || !doc["nodes"].is_array()) {
    return absl::InvalidArgumentError("sinfo --json: not the expected document");
  }
  std::map<std::string, int64_t> capacity;
  capacity["gpu"] = 0;
  for (const json& n : doc["nodes"]) {
    // Nodes that cannot run jobs do not count (down, drained, failed).
    std::string state = Str(n, "state");
    std::transform(state.begin(), state.end(), state.begin(), ::tolower);
    // "unknown" is a node slurmctld has not heard from since it started: not
    // a reason to take its GPUs away from the ledger.
    bool usable = state != "down" && state != "future";
    if (auto it = n.find("state_flags"); it != n.end() && it->is_array()) {
      for (const json& f : *it) {
        if (!f.is_string()) continue;
        const std::string flag = f.get<std::string>();
        if (flag == "DRAIN" || flag == "FAIL" || flag == "MAINTENANCE") usable = false;
      }
    }
    if (!usable) continue;
    if (!options.partitions.empty()) {
      bool in = false;
      if (auto it = n.find("partitions"); it != n.end() && it->is_array()) {
        for (const json& p : *it) {
          if (p.is_string() &&
              std::find(options.partitions.begin(), options.partitions.end(), p.get<std::string>()) !=
                  options.partitions.end()) {
            in = true;
          }
        }
      }
      if (!in) continue;
    }
    // "gpu:h100:8,gpu:a100:4(S:0)" -> per type.
    for (absl::string_view item : absl::StrSplit(Str(n, "gres"), ',', absl::SkipEmpty())) {
      std::string s(item.substr(0, item.find('(')));
      auto gres = ParseGresList(s);
      if (!gres.ok()) continue;
      for (const Gres& g : *gres) {
        if (g.name != "gpu") continue;
        std::string resource = "gpu";
        if (auto it = options.type_resource.find(g.type); !g.type.empty() && it != options.type_resource.end()) {
          resource = it->second;
        }
        capacity[resource] += g.count;
      }
    }
  }
  return capacity;
}

absl::StatusOr<ClusterView> SlurmDriver::Observe() {
  auto squeue = RunCommand({"squeue", "--json"});
  if (!squeue.ok()) return squeue.status();
  auto sinfo = RunCommand({"sinfo", "--json"});
  if (!sinfo.ok()) return sinfo.status();
  ClusterView view;
  auto jobs = ParseSqueue(*squeue, options_);
  if (!jobs.ok()) return jobs.status();
  auto capacity = ParseSinfo(*sinfo, options_);
  if (!capacity.ok()) return capacity.status();
  view.jobs = *std::move(jobs);
  view.capacity = *std::move(capacity);
  requeueable_.clear();
  for (const auto& j : view.jobs) requeueable_[j.id] = j.spec.requeue();
  restarts_.clear();
  if (json doc = json::parse(*squeue, nullptr, false); !doc.is_discarded()) {
    for (const json& j : doc["jobs"]) {
      if (Int(j, "restart_cnt") > 0) restarts_[absl::StrCat(kPrefix, Int(j, "job_id"))] = Int(j, "restart_cnt");
    }
  }
  return view;
}

absl::Status SlurmDriver::Start(const std::string& job) {
  auto r = RunCommand({"scontrol", "release", SlurmId(job)});
  if (!r.ok()) return r.status();
  if (restarts_.contains(job)) {
    // SLURM delays a requeued job (reason BeginTime); the broker admitted it
    // now and counts its GPUs now, so let it start now.
    RunCommand({"scontrol", "update", absl::StrCat("JobId=", SlurmId(job)), "StartTime=now"}).ok();
  }
  // Best effort: the comment no longer says why it waits.
  RunCommand({"scontrol", "update", absl::StrCat("JobId=", SlurmId(job)), "Comment=tidegate: admitted"}).ok();
  return absl::OkStatus();
}

absl::Status SlurmDriver::Signal(const std::string& job) {
  // --full: the batch script itself gets the signal, not only its steps.
  return RunCommand({"scancel", "--full", "--signal=TERM", SlurmId(job)}).status();
}

absl::Status SlurmDriver::Stop(const std::string& job) {
  auto it = requeueable_.find(job);
  if (options_.requeue && it != requeueable_.end() && it->second) {
    // Back to the queue, held: it waits for the broker's admission again.
    if (RunCommand({"scontrol", "requeuehold", SlurmId(job)}).ok()) return absl::OkStatus();
  }
  return RunCommand({"scancel", SlurmId(job)}).status();
}

absl::Status SlurmDriver::Requeue(const std::string& job) {
  // Works on a finished batch job too (within MinJobAge).
  return RunCommand({"scontrol", "requeuehold", SlurmId(job)}).status();
}

absl::Status SlurmDriver::Hold(const std::string& job) {
  return RunCommand({"scontrol", "hold", SlurmId(job)}).status();
}

absl::Status SlurmDriver::Annotate(const std::string& job, const std::string& text) {
  return RunCommand({"scontrol", "update", absl::StrCat("JobId=", SlurmId(job)), absl::StrCat("Comment=", text)})
      .status();
}

}  // namespace tidegate::adapters
