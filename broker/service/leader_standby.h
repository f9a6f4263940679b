// The gRPC face of a standby broker: every method of every service answers
// UNAVAILABLE ("standby: the leader is at ADDR") with the leader's address in
// the trailing metadata `tidegate-leader`, so clients given several brokers
// go straight to the leader (docs/ha.md). gRPC health answers NOT_SERVING for
// the server ("") and for `tidegate.leader`; the leader answers SERVING.
//
// Threading: SetLeader is thread-safe; gRPC calls it from its threads.
#ifndef TIDEGATE_BROKER_SERVICE_LEADER_STANDBY_H_
#define TIDEGATE_BROKER_SERVICE_LEADER_STANDBY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace tidegate::service {

// The health service name that is SERVING only on the leader.
inline constexpr char kLeaderHealthService[] = "tidegate.leader";
// Trailing metadata of a standby's UNAVAILABLE: the leader's address.
inline constexpr char kLeaderMetadataKey[] = "tidegate-leader";

class StandbyServer {
 public:
  // Listens on `listen` with `credentials`; UNAVAILABLE naming the address
  // when it cannot.
  static absl::StatusOr<std::unique_ptr<StandbyServer>> Start(const std::string& listen,
                                                             std::shared_ptr<grpc::ServerCredentials> credentials);
  ~StandbyServer();  // stops listening, so the leader's server can bind the port

  // The leader to name ("" while none is known).
  void SetLeader(const std::string& address);
  std::string leader() const;
  // What the standby's HTTP endpoint shows: the lease's epoch as last read
  // (0 = never held), and why the last round failed ("" = the database
  // answered: the lease polled and the journal tailed).
  void SetLeaseRound(int64_t epoch, const std::string& problem);
  int64_t lease_epoch() const;
  std::string problem() const;

 private:
  class Service;
  StandbyServer() = default;
  mutable absl::Mutex mu_;
  std::string leader_ ABSL_GUARDED_BY(mu_);
  int64_t lease_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::string problem_ ABSL_GUARDED_BY(mu_) = "the database has not answered yet";
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_LEADER_STANDBY_H_
