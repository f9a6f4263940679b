// tidegate-agent: one per cluster, near it (docs/design.md §7).
//
//   tidegate-agent --kind slurm --cluster NAME --broker HOST:PORT [--ca F --cert F --key F | --token-file F]
//
// Runs until SIGTERM or SIGINT, then exits 0. Exit 2 on bad flags.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "CLI/CLI.hpp"
#include "adapters/agent/agent.h"
#include "adapters/slurm/slurm_driver.h"
#include "cli/auth_channel.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

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
  app.add_option("--kind", kind, "cluster kind (slurm)")->check(CLI::IsMember({"slurm"}));
  app.add_option("--cluster", options.cluster, "the cluster's name in the broker's config")->required();
  app.add_option("--broker", broker, "the broker's address (default $TIDEGATE_SERVER or 127.0.0.1:50051)");
  app.add_option("--poll-ms", options.poll_ms, "milliseconds between observations (default 1000)")
      ->check(CLI::Range(50, 600000));
  app.add_option("--partition", slurm.partitions, "only jobs and nodes of these partitions (repeatable)");
  app.add_option("--gres-resource", type_resources,
                 "TYPE=RESOURCE: count gres gpu:TYPE as the broker's RESOURCE (default: gpu; repeatable)");
  app.add_flag("--no-requeue", no_requeue, "stop victims with scancel even when they are requeueable");
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
  slurm.cluster = options.cluster;
  slurm.requeue = !no_requeue;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  options.agent_id = kind + "@" + host + ":" + std::to_string(getpid());
  options.kind = tidegate::v1::CLUSTER_KIND_SLURM;

  spdlog::set_default_logger(spdlog::stderr_color_mt("tidegate-agent"));
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  SlurmDriver driver(slurm);
  tidegate::cli::ApplySecurityEnvironment(&security);
  auto made = tidegate::cli::MakeBrokerChannel(broker, security, grpc::ChannelArguments());
  if (!made.ok()) {
    std::cerr << "tidegate-agent: " << made.status().message() << "\n";
    return 2;
  }
  auto channel = *std::move(made);
  Agent agent(options, channel, &driver);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("signal {}: stopping", sig);
    agent.Stop();
  });
  spdlog::info("agent for SLURM cluster {} -> broker {}", options.cluster, broker);
  const int code = agent.Run();
  // The waiter may still wait for a signal: end it the same way.
  kill(getpid(), SIGTERM);
  waiter.join();
  spdlog::info("stopped");
  return code;
}
