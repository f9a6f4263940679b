// The Kubernetes mapping (Job -> broker job, Nodes -> capacity), the
// webhook's mutation and kubeconfig loading, on JSON as the API serves it.
#include "adapters/kubernetes/kube_jobs.h"

#include <cstdlib>
#include <fstream>

#include "absl/strings/escaping.h"
#include "adapters/kubernetes/kube_client.h"
#include "adapters/kubernetes/webhook.h"
#include "gtest/gtest.h"

namespace tidegate::adapters::kube {
namespace {

using json = nlohmann::json;

json Job(json labels = {{"tidegate.io/team", "research"}}) {
  json j = json::parse(R"({
    "metadata": {"name": "train", "namespace": "ml", "uid": "u1", "annotations": {}},
    "spec": {"suspend": true, "parallelism": 2, "completionMode": "NonIndexed",
             "template": {"spec": {"containers": [
               {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "4"}}},
               {"name": "b", "resources": {"requests": {"nvidia.com/mig-1g.10gb": 1}}}]}}},
    "status": {}})");
  j["metadata"]["labels"] = labels;
  return j;
}

KubeOptions Options() {
  KubeOptions o;
  o.cluster = "k8s";
  o.resources["nvidia.com/mig-1g.10gb"] = "mig-1g";
  return o;
}

TEST(MapJob, SuspendedLabelledJobWaitsWithItsDemand) {
  auto j = MapJob(Job(), Options(), {}, {});
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->id, "k8s:ml/train");
  EXPECT_EQ(j->phase, JobPhase::kWaiting);
  EXPECT_EQ(j->problem, "");
  EXPECT_EQ(j->spec.team(), "research");
  EXPECT_EQ(j->spec.cluster(), "k8s");
  EXPECT_EQ(j->spec.replicas(), 2);
  EXPECT_EQ(j->spec.per_replica().at("gpu"), 2);
  EXPECT_EQ(j->spec.per_replica().at("mig-1g"), 1);
  EXPECT_EQ(j->spec.per_replica().size(), 2u);
  EXPECT_TRUE(j->spec.requeue());
}

TEST(MapJob, UnlabelledJobIsNotTheBrokersUnlessItsNamespaceMaps) {
  EXPECT_FALSE(MapJob(Job(json::object()), Options(), {}, {}).has_value());
  KubeOptions o = Options();
  o.namespace_team["ml"] = "vision";
  auto j = MapJob(Job(json::object()), o, {}, {});
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->spec.team(), "vision");
}

TEST(MapJob, Phases) {
  json running = Job();
  running["spec"]["suspend"] = false;
  EXPECT_EQ(MapJob(running, Options(), {}, {})->phase, JobPhase::kRunning);
  // Suspended with pods still terminating: a draining victim holds its GPUs.
  EXPECT_EQ(MapJob(Job(), Options(), PodCounts{1, 0, 1}, {})->phase, JobPhase::kRunning);
  json done = running;
  done["status"]["conditions"] = json::array({{{"type", "Complete"}, {"status", "True"}}});
  EXPECT_EQ(MapJob(done, Options(), {}, {})->phase, JobPhase::kEnded);
  EXPECT_EQ(MapJob(done, Options(), {}, {})->state, "COMPLETED");
  json failed = running;
  failed["status"]["conditions"] = json::array({{{"type", "Failed"}, {"status", "True"}}});
  EXPECT_EQ(MapJob(failed, Options(), {}, {})->state, "FAILED");
}

TEST(MapJob, BadInputNamesTheProblem) {
  EXPECT_NE(MapJob(Job({{"tidegate.io/team", ""}}), Options(), {}, {})->problem.find("no team"), std::string::npos);
  json indexed = Job();
  indexed["spec"]["completionMode"] = "Indexed";
  EXPECT_NE(MapJob(indexed, Options(), {}, {})->problem.find("Indexed"), std::string::npos);
  json unmapped = Job();
  unmapped["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-3g.40gb"] = 1;
  EXPECT_NE(MapJob(unmapped, Options(), {}, {})->problem.find("nvidia.com/mig-3g.40gb"), std::string::npos);
  json cpu = Job();
  cpu["spec"]["template"]["spec"]["containers"] = json::array({{{"name", "a"}}});
  KubeOptions gpu_only = Options();
  EXPECT_EQ(MapJob(cpu, gpu_only, {}, {})->problem, "");
  gpu_only.gpu_jobs_only = true;
  EXPECT_NE(MapJob(cpu, gpu_only, {}, {})->problem.find("no GPU"), std::string::npos);
  json elastic = Job();
  elastic["metadata"]["annotations"]["tidegate.io/elastic"] = "4:2";
  EXPECT_NE(MapJob(elastic, Options(), {}, {})->problem.find("MIN:MAX"), std::string::npos);
  json pc = Job();
  pc["spec"]["template"]["spec"]["priorityClassName"] = "urgent";
  EXPECT_NE(MapJob(pc, Options(), {}, {})->problem.find("urgent"), std::string::npos);
  EXPECT_EQ(MapJob(pc, Options(), {}, {{"urgent", 1000}})->spec.priority(), 1000);
}

TEST(MapJob, ElasticStatesItsSizeOnlyWhenRunning) {
  json j = Job();
  j["metadata"]["annotations"]["tidegate.io/elastic"] = "1:4";
  auto waiting = MapJob(j, Options(), {}, {});
  EXPECT_EQ(waiting->spec.elastic().min(), 1);
  EXPECT_EQ(waiting->spec.elastic().max(), 4);
  EXPECT_FALSE(waiting->spec.has_replicas());
  j["spec"]["suspend"] = false;
  EXPECT_EQ(MapJob(j, Options(), {}, {})->spec.replicas(), 2);
}

TEST(NodeCapacity, ReadySchedulableNodesOnly) {
  auto node = [](const char* name, const char* ready, bool unschedulable, json alloc) {
    return json{{"metadata", {{"name", name}}},
                {"spec", {{"unschedulable", unschedulable}}},
                {"status", {{"allocatable", alloc}, {"conditions", {{{"type", "Ready"}, {"status", ready}}}}}}};
  };
  std::vector<json> nodes = {node("a", "True", false, {{"nvidia.com/gpu", "8"}, {"cpu", "64"}}),
                             node("b", "False", false, {{"nvidia.com/gpu", "8"}}),
                             node("c", "True", true, {{"nvidia.com/gpu", "8"}}),
                             node("d", "True", false, {{"nvidia.com/mig-1g.10gb", "7"}})};
  auto cap = NodeCapacity(nodes, Options());
  EXPECT_EQ(cap, (std::map<std::string, int64_t>{{"gpu", 8}, {"mig-1g", 7}}));
}

TEST(CountPods, TerminatingPodsHoldButAreNotActive) {
  auto pod = [](const char* phase, bool deleting) {
    json p = {{"metadata", {{"ownerReferences", {{{"kind", "Job"}, {"uid", "u1"}}}}}}, {"status", {{"phase", phase}}}};
    if (deleting) p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
    return p;
  };
  auto c = CountPods({pod("Running", false), pod("Running", true), pod("Succeeded", false), pod("Pending", false)});
  EXPECT_EQ(c["u1"].holding, 3);
  EXPECT_EQ(c["u1"].active, 2);
  EXPECT_EQ(c["u1"].terminating, 1);
}

TEST(JobIds, RoundTrip) {
  std::string ns, name;
  EXPECT_TRUE(ParseJobId("k8s:ml/train", &ns, &name));
  EXPECT_EQ(ns + "|" + name, "ml|train");
  EXPECT_FALSE(ParseJobId("slurm:1", &ns, &name));
  EXPECT_FALSE(ParseJobId("k8s:/x", &ns, &name));
}

json Review(json labels, bool suspend) {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "abc"},
            {"kind", {{"group", "batch"}, {"version", "v1"}, {"kind", "Job"}}},
            {"operation", "CREATE"},
            {"namespace", "ml"},
            {"object", {{"metadata", {{"name", "t"}, {"labels", labels}}}, {"spec", {{"suspend", suspend}}}}}}}};
}

TEST(Webhook, SuspendsGatedJobsOnly) {
  json r = Mutate(Review({{"tidegate.io/team", "research"}}, false), Options());
  EXPECT_EQ(r["response"]["uid"], "abc");
  EXPECT_EQ(r["response"]["allowed"], true);
  ASSERT_EQ(r["response"]["patchType"], "JSONPatch");
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(r["response"]["patch"].get<std::string>(), &patch));
  EXPECT_EQ(json::parse(patch), json::parse(R"([{"op":"add","path":"/spec/suspend","value":true}])"));
  EXPECT_FALSE(Mutate(Review(json::object(), false), Options())["response"].contains("patch"));
  EXPECT_FALSE(Mutate(Review({{"tidegate.io/team", "r"}}, true), Options())["response"].contains("patch"));
}

TEST(Kubeconfig, CurrentContextWithCaDataTokenFileAndRelativePaths) {
  const std::string dir = ::testing::TempDir() + "/kubecfg";
  std::system(("mkdir -p " + dir).c_str());
  std::ofstream(dir + "/config") << R"(apiVersion: v1
kind: Config
current-context: b
clusters:
- name: c1
  cluster: {server: "https://one:6443/", certificate-authority-data: )"
                                 << absl::Base64Escape("PEM") << R"(}
- name: c2
  cluster: {server: "https://two:6443", certificate-authority: ca.crt}
users:
- name: u1
  user: {tokenFile: token}
- name: u2
  user: {client-certificate: c.crt, client-key: /abs/c.key}
contexts:
- name: a
  context: {cluster: c1, user: u1, namespace: ml}
- name: b
  context: {cluster: c2, user: u2}
)";
  auto b = LoadKubeconfig(dir + "/config", "");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->server, "https://two:6443");
  EXPECT_EQ(b->ca_file, dir + "/ca.crt");
  EXPECT_EQ(b->cert_file, dir + "/c.crt");
  EXPECT_EQ(b->key_file, "/abs/c.key");
  EXPECT_EQ(b->name_space, "default");
  auto a = LoadKubeconfig(dir + "/config", "a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->server, "https://one:6443");
  EXPECT_EQ(a->ca_pem, "PEM");
  EXPECT_EQ(a->token_file, dir + "/token");
  EXPECT_EQ(a->name_space, "ml");
  auto missing = LoadKubeconfig(dir + "/config", "nope");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("'nope'"), std::string::npos);
}

}  // namespace
}  // namespace tidegate::adapters::kube

namespace tidegate::adapters::kube {
namespace {

TEST(InCluster, ServiceAccountFilesAndServiceEnvironment) {
  const std::string dir = ::testing::TempDir() + "/sa";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());  // no token from an earlier run.
  unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_EQ(LoadInCluster(dir).status().code(), absl::StatusCode::kFailedPrecondition);
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  EXPECT_EQ(LoadInCluster(dir).status().code(), absl::StatusCode::kNotFound);  // no token yet.
  std::ofstream(dir + "/token") << "tok";
  std::ofstream(dir + "/ca.crt") << "PEM";
  std::ofstream(dir + "/namespace") << "tidegate-system\n";
  auto c = LoadInCluster(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, dir + "/token");
  EXPECT_EQ(c->ca_file, dir + "/ca.crt");
  EXPECT_EQ(c->name_space, "tidegate-system");
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  EXPECT_EQ(LoadInCluster(dir)->server, "https://[fd00::1]:443");
  unsetenv("KUBERNETES_SERVICE_HOST");
}

TEST(Kubeconfig, InsecureSkipVerifyIsRefused) {
  const std::string path = ::testing::TempDir() + "/insecure-kubeconfig";
  std::ofstream(path) << R"(current-context: a
clusters: [{name: c, cluster: {server: "https://x:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: a, context: {cluster: c, user: u}}]
)";
  auto c = LoadKubeconfig(path, "");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(c.status().message()).find("insecure-skip-tls-verify"), std::string::npos);
}

}  // namespace
}  // namespace tidegate::adapters::kube
