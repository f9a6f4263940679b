// tidegate-agent: one per cluster, near it (docs/design.md §7).
//
//   tidegate-agent --kind slurm --cluster NAME --broker HOST:PORT [--ca F --cert F --key F | --token-file F]
//   tidegate-agent --kind kubernetes --cluster NAME --broker HOST:PORT [--kubeconfig F [--context C]]
//                  [--namespace-team NS=TEAM]... [--resource K8S=RESOURCE]... [--gpu-jobs-only]
//                  [--webhook-listen ADDR:PORT --webhook-cert F --webhook-key F]
//
// Runs until SIGTERM or SIGINT, then exits 0. Exit 2 on bad flags.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "adapters/agent/agent.h"
#include "adapters/kubernetes/kube_driver.h"
#include "adapters/kubernetes/kube_elastic.h"
#include "adapters/kubernetes/webhook.h"
#include "adapters/slurm/slurm_driver.h"
#include "cli/auth_channel.h"
#include "cli/leader_channel.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

// About 170 lines: the flags of both cluster kinds and their checks, then the
// driver (and the Kubernetes webhook), the broker connection and the run, in
// start-up order.
int main(int argc, char** argv) {
  using namespace tidegate::adapters;
  CLI::App app{"tidegate-agent: drives one cluster for the Tidegate broker"};
  std::string kind = "slurm";
  std::string broker = "127.0.0.1:50051";
  if (const char* s = std::getenv("TIDEGATE_SERVER")) broker = s;
  AgentOptions options;
  SlurmOptions slurm;
  std::vector<std::string> type_resources;
  bool no_requeue = false;
  tidegate::cli::ChannelSecurity security;  // --tls, --ca, --cert, --key, --token-file (docs/security.md)
  tidegate::cli::AddChannelSecurityOptions(app, &security);
  app.add_option("--kind", kind, "cluster kind (slurm, kubernetes)")->check(CLI::IsMember({"slurm", "kubernetes"}));
  app.add_option("--cluster", options.cluster, "the cluster's name in the broker's config")->required();
  app.add_option("--broker,--server", broker,
                 "the broker's address (default $TIDEGATE_SERVER or 127.0.0.1:50051); several (a,b,c): the one\n"
                 "that leads, followed when it changes (docs/ha.md)");
  app.add_option("--poll-ms", options.poll_ms, "milliseconds between observations (default 1000)")
      ->check(CLI::Range(50, 600000));
  app.add_option("--partition", slurm.partitions, "only jobs and nodes of these partitions (repeatable)");
  app.add_option("--gres-resource", type_resources,
                 "TYPE=RESOURCE: count gres gpu:TYPE as the broker's RESOURCE (default: gpu; repeatable)");
  app.add_flag("--no-requeue", no_requeue, "stop victims with scancel even when they are requeueable");
  // Kubernetes (docs/kubernetes.md).
  std::string kubeconfig, kube_context;
  std::vector<std::string> namespace_teams, kube_resources;
  kube::KubeOptions kube_options;
  kube::WebhookOptions webhook;
  app.add_option("--kubeconfig", kubeconfig,
                 "kubeconfig file (default $KUBECONFIG, ~/.kube/config, or the Pod's service account)");
  app.add_option("--context", kube_context, "kubeconfig context (default: current-context)");
  app.add_option("--namespace-team", namespace_teams, "NS=TEAM: Jobs of namespace NS without a team label belong to TEAM (repeatable)");
  app.add_option("--resource", kube_resources,
                 "K8S=RESOURCE: count Kubernetes resource K8S (e.g. nvidia.com/mig-1g.10gb) as the broker's RESOURCE "
                 "(default nvidia.com/gpu=gpu; repeatable)");
  app.add_flag("--gpu-jobs-only", kube_options.gpu_jobs_only, "a managed Job that asks for no GPU stays suspended");
  app.add_option("--webhook-listen", webhook.listen, "serve the mutating admission webhook on ADDR:PORT (HTTPS)");
  app.add_option("--webhook-cert", webhook.cert_file, "the webhook's TLS certificate (PEM)");
  app.add_option("--webhook-key", webhook.key_file, "the webhook's TLS key (PEM)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (const auto& tr : type_resources) {
    auto eq = tr.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == tr.size()) {
      std::cerr << "tidegate-agent: --gres-resource " << tr << ": expected TYPE=RESOURCE\n";
      return 2;
    }
    slurm.type_resource[tr.substr(0, eq)] = tr.substr(eq + 1);
  }
  auto pairs = [](const std::vector<std::string>& items, const char* flag,
                  std::map<std::string, std::string>* out) -> bool {
    for (const auto& item : items) {
      auto eq = item.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
        std::cerr << "tidegate-agent: " << flag << " " << item << ": expected KEY=VALUE\n";
        return false;
      }
      (*out)[item.substr(0, eq)] = item.substr(eq + 1);
    }
    return true;
  };
  if (!pairs(namespace_teams, "--namespace-team", &kube_options.namespace_team)) return 2;
  if (!pairs(kube_resources, "--resource", &kube_options.resources)) return 2;
  if (!webhook.listen.empty() && (webhook.cert_file.empty() || webhook.key_file.empty())) {
    std::cerr << "tidegate-agent: --webhook-listen needs --webhook-cert and --webhook-key (AdmissionReview is HTTPS)\n";
    return 2;
  }
  kube_options.cluster = options.cluster;
  slurm.cluster = options.cluster;
  slurm.requeue = !no_requeue;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  options.agent_id = kind + "@" + host + ":" + std::to_string(getpid());
  options.kind = kind == "kubernetes" ? tidegate::v1::CLUSTER_KIND_KUBERNETES : tidegate::v1::CLUSTER_KIND_SLURM;

  spdlog::set_default_logger(spdlog::stderr_color_mt("tidegate-agent"));
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<ClusterDriver> driver;
  kube::KubeDriver* kube_driver = nullptr;
  std::unique_ptr<kube::WebhookServer> webhook_server;
  if (kind == "kubernetes") {
    absl::StatusOr<kube::KubeConnection> connection;
    if (kubeconfig.empty() && !std::getenv("KUBECONFIG") && std::getenv("KUBERNETES_SERVICE_HOST")) {
      connection = kube::LoadInCluster();
    } else {
      connection = kube::LoadKubeconfig(kubeconfig, kube_context);
    }
    if (!connection.ok()) {
      std::cerr << "tidegate-agent: " << connection.status().message() << "\n";
      return 2;
    }
    spdlog::info("Kubernetes API server {} ({})", connection->server, connection->source);
    auto client = std::make_shared<kube::KubeClient>(*connection);
    auto k = std::make_unique<kube::KubeDriver>(kube_options, client);
    kube_driver = k.get();
    driver = std::move(k);
    if (!webhook.listen.empty()) {
      webhook.options = kube_options;
      webhook_server = std::make_unique<kube::WebhookServer>(webhook);
      if (auto s = webhook_server->Start(); !s.ok()) {
        std::cerr << "tidegate-agent: webhook: " << s.message() << "\n";
        return 2;
      }
      spdlog::info("admission webhook on https://{}", webhook_server->address());
    }
  } else {
    driver = std::make_unique<SlurmDriver>(slurm);
  }
  tidegate::cli::ApplySecurityEnvironment(&security);
  for (const std::string& address : tidegate::cli::SplitServers(broker)) {
    if (absl::Status bad = tidegate::cli::CheckBrokerTarget(address); !bad.ok()) {
      std::cerr << "tidegate-agent: " << bad.message() << "\n";
      return 2;
    }
  }
  if (tidegate::cli::SplitServers(broker).size() > 1) {
    const std::string all = broker;
    options.find_leader = [all, security]() -> std::shared_ptr<grpc::Channel> {
      auto leader = tidegate::cli::MakeBrokerChannel(tidegate::cli::FindLeader(all, security, std::chrono::seconds(2)),
                                                     security, grpc::ChannelArguments());
      return leader.ok() ? *leader : nullptr;
    };
    broker = tidegate::cli::FindLeader(all, security, std::chrono::seconds(10));
  }
  auto made = tidegate::cli::MakeBrokerChannel(broker, security, grpc::ChannelArguments());
  if (!made.ok()) {
    std::cerr << "tidegate-agent: " << made.status().message() << "\n";
    return 2;
  }
  auto channel = *std::move(made);
  Agent agent(options, channel, driver.get());
  std::unique_ptr<kube::ElasticFollower> elastic;
  std::thread elastic_thread;
  if (kube_driver) {
    elastic = std::make_unique<kube::ElasticFollower>(channel, kube_driver, options.cluster, options.poll_ms);
    kube_driver->SetStartSize([admission = std::shared_ptr<tidegate::v1::AdmissionService::Stub>(
                                   tidegate::v1::AdmissionService::NewStub(channel))](
                                  const std::string& job) -> std::optional<int64_t> {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      tidegate::v1::GetJobRequest req;
      req.set_job(job);
      tidegate::v1::JobInfo info;
      if (!admission->GetJob(&ctx, req, &info).ok() || info.replicas() <= 0) return std::nullopt;
      return info.has_resize() && info.resize().target_replicas() > 0 ? info.resize().target_replicas()
                                                                      : info.replicas();
    });
    elastic_thread = std::thread([&] { elastic->Run(); });
  }
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("signal {}: stopping", sig);
    agent.Stop();
  });
  spdlog::info("agent for {} cluster {} -> broker {}", kind == "kubernetes" ? "Kubernetes" : "SLURM", options.cluster,
               broker);
  const int code = agent.Run();
  if (elastic) {
    elastic->Stop();
    elastic_thread.join();
  }
  if (webhook_server) webhook_server->Stop();
  // The waiter may still wait for a signal: end it the same way.
  kill(getpid(), SIGTERM);
  waiter.join();
  spdlog::info("stopped");
  return code;
}
