// The broker's Prometheus metrics (docs/observability.md lists them).
// Counters and histograms are fed by the core loop's batch observer on the
// writer thread (a few map updates per batch); gauges are read at scrape
// time from the published ReadModel and the services, so a scrape adds no
// work to the writer. Cardinality is bounded by the config: labels are team,
// resource, cluster and decision type, never a job; a decision about a team
// the config does not have (a reject) is counted with team="".
//
// Threading: thread-safe.
#ifndef TIDEGATE_BROKER_HTTP_BROKER_METRICS_H_
#define TIDEGATE_BROKER_HTTP_BROKER_METRICS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "broker/http/exposition.h"
#include "broker/service/core_loop.h"
#include "broker/service/read_model.h"

namespace tidegate::http {

// What the scrape reads beside the model.
struct LiveFigures {
  int64_t now_ms = 0;                          // wall clock, for wait ages
  int64_t open_streams = 0;                    // WaitAdmission, WatchResizes, agents
  std::vector<std::string> connected_clusters;  // agents said hello
  bool ledger_writable = true;
  bool ledger_lost_commits = false;            // found behind what was acknowledged
  bool writer_alive = true;
  int64_t watch_requests = 0;                  // web view long polls waiting
  int64_t lease_epoch = 0;                     // PostgreSQL: the lease led under; 0 = SQLite
  int64_t snapshot_failures = 0;               // background snapshot captures that failed
};

// A standby broker's whole exposition: tidegate_leader 0, the lease epoch
// it last read, and whether it reaches the database.
std::string RenderStandbyMetrics(int64_t lease_epoch, bool database_reachable);

class BrokerMetrics {
 public:
  BrokerMetrics();
  // Loop thread: one committed or refused batch.
  void ObserveBatch(const service::BatchStats& stats);
  // The whole exposition.
  std::string Render(const service::ReadModel& model, const LiveFigures& live) const;

 private:
  struct Reclaiming {
    int64_t since_ms = 0;  // when its victims were chosen
    double grace_s = 0;    // the longest grace period among them
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> decisions_;  // (type, team); guarded by mu_
  uint64_t commit_failures_ = 0;                                       // guarded by mu_
  Histogram commit_seconds_;                                           // guarded by mu_
  Histogram batch_commands_;                                           // guarded by mu_
  Histogram reclaim_seconds_;                                          // guarded by mu_
  Histogram reclaim_beyond_grace_seconds_;                             // guarded by mu_
  // Loop thread only: jobs whose victims drain, until they are admitted.
  absl::flat_hash_map<std::string, Reclaiming> reclaiming_;
};

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_BROKER_METRICS_H_
