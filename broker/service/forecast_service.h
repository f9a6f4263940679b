// ForecastService (docs/design.md §6-7; api/tidegate/v1/forecast.proto):
// forecasts, reservation sizing and tide proposals made from the ledger's
// hourly usage rows (ledger/store.h UsageRow) with the forecast/ library.
//
// The series: the team's rows (an inner team: the sum of its leaves') for one
// resource, from the first hour with a row to the last complete hour with one;
// hours between without a row are 0, since the ledger leaves out all-zero
// rows. Hours after the last row are not added: the ledger cannot tell an idle
// team from a broker that was not running (an import followed by a later
// start). Values are resource-seconds / 3600, rounded to 1e-6 so that a value
// imported from a CSV comes back as the same double, and an online forecast
// equals the offline `--input` one on the same data.
//
// Errors: INVALID_ARGUMENT naming the field and value; NOT_FOUND for a team
// not in the config; FAILED_PRECONDITION when the series is too short ("team
// vc3sl has 40 hours of gpu demand in the ledger; a forecast needs at least
// 49"); RESOURCE_EXHAUSTED when too many requests already wait.
//
// Threading: thread-safe. Fitting is CPU-heavy (a fraction of a second to
// seconds), so handlers only queue the request: the service's own worker
// threads read the ledger, fit and answer. Neither gRPC's threads nor the
// core loop's ever fit. The destructor answers what is queued, then joins.
#ifndef TIDEGATE_BROKER_SERVICE_FORECAST_SERVICE_H_
#define TIDEGATE_BROKER_SERVICE_FORECAST_SERVICE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "broker/service/clock.h"
#include "broker/service/core_loop.h"
#include "ledger/store.h"
#include "tidegate/v1/forecast.grpc.pb.h"

namespace tidegate::service {

// The leaf teams under `team` in `config` (`team` itself when it is a leaf),
// sorted. Empty when `team` is not in the config.
std::vector<std::string> LeavesOf(const v1::Config& config, const std::string& team);

struct UsageSeries {
  int64_t start_s = 0;          // Unix seconds of values[0]; a whole hour.
  std::vector<double> values;   // one per hour.
  int64_t zero_hours = 0;       // hours without a row.
};

// Pure: the hourly series of selector.metric() and `resource` for `leaves`
// (summed) out of `rows` (any order; other teams and resources are skipped),
// as the header says. Rows in the hour containing now_ms or later, or at or
// after selector.until_ms() when set, are left out. An empty series when no
// row is left.
UsageSeries BuildUsageSeries(const std::vector<ledger::UsageRow>& rows,
                             const std::vector<std::string>& leaves, const std::string& resource,
                             const v1::SeriesSelector& selector, int64_t now_ms);

struct ForecastServiceOptions {
  int workers = 1;      // fitting threads; the broker's other work keeps the rest.
  int max_queued = 16;  // requests waiting beyond this get RESOURCE_EXHAUSTED.
};

class ForecastServiceImpl final : public v1::ForecastService::CallbackService {
 public:
  // `reader` is a read-only connection to the ledger, used by the workers
  // under a lock; `loop` gives the config (which teams exist); `clock` says
  // which hour is unfinished.
  ForecastServiceImpl(CoreLoop* loop, std::unique_ptr<ledger::Store> reader, Clock* clock,
                      ForecastServiceOptions options = {});
  ~ForecastServiceImpl() override;

  grpc::ServerUnaryReactor* Forecast(grpc::CallbackServerContext* ctx,
                                     const v1::ForecastRequest* req,
                                     v1::ForecastResponse* resp) override;
  grpc::ServerUnaryReactor* RecommendReservations(
      grpc::CallbackServerContext* ctx, const v1::RecommendReservationsRequest* req,
      v1::RecommendReservationsResponse* resp) override;
  grpc::ServerUnaryReactor* ProposeTide(grpc::CallbackServerContext* ctx,
                                        const v1::ProposeTideRequest* req,
                                        v1::ProposeTideResponse* resp) override;

  // The work behind each RPC, synchronous (for the workers and for tests).
  absl::StatusOr<v1::ForecastResponse> RunForecast(const v1::ForecastRequest& req);
  absl::StatusOr<v1::RecommendReservationsResponse> RunReserve(
      const v1::RecommendReservationsRequest& req);
  absl::StatusOr<v1::ProposeTideResponse> RunTide(const v1::ProposeTideRequest& req);

 private:
  // The series a request selects: checks the selector, the team, reads the ledger.
  absl::StatusOr<UsageSeries> LoadSeries(const v1::SeriesSelector& selector);
  // Queues `work` for a worker, which finishes `reactor` with its status;
  // finishes it at once with RESOURCE_EXHAUSTED when the queue is full.
  void Enqueue(grpc::CallbackServerContext* ctx, grpc::ServerUnaryReactor* reactor,
               std::function<grpc::Status()> work);
  void WorkerMain();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_);

  CoreLoop* loop_;
  Clock* clock_;
  ForecastServiceOptions options_;
  absl::Mutex reader_mu_;
  std::unique_ptr<ledger::Store> reader_ ABSL_GUARDED_BY(reader_mu_);

  absl::Mutex queue_mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_FORECAST_SERVICE_H_
