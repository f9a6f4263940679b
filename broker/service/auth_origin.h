// The audit trail's source: who asked for the command being submitted. The
// auth guards (auth_services.h) open a ScopedOrigin around each handler call;
// CoreLoop::Submit stamps the current one on the command it queues, so the
// journal records the principal and peer of every change made through the
// API without the handlers knowing (docs/security.md).
//
// Thread-local: a handler's synchronous Submit sees it. An agent stream keeps
// the origin it was opened with (CurrentOrigin) and re-opens it for each
// message; ticks and other commands the broker makes itself carry none.
#ifndef TIDEGATE_BROKER_SERVICE_AUTH_ORIGIN_H_
#define TIDEGATE_BROKER_SERVICE_AUTH_ORIGIN_H_

#include <optional>
#include <string>

#include "tidegate/internal/v1/journal.pb.h"

namespace grpc {
class ServerContextBase;
}  // namespace grpc

namespace tidegate::service {

class ScopedOrigin {
 public:
  // The peer is read from `call` only when a command is stamped (most calls
  // submit none); `call` must outlive this scope.
  ScopedOrigin(std::string principal, const grpc::ServerContextBase* call);
  explicit ScopedOrigin(const internal::v1::CommandOrigin& origin);
  ~ScopedOrigin();
  ScopedOrigin(const ScopedOrigin&) = delete;
  ScopedOrigin& operator=(const ScopedOrigin&) = delete;

  const internal::v1::CommandOrigin& origin();

 private:
  std::string principal_;
  const grpc::ServerContextBase* call_ = nullptr;
  std::optional<internal::v1::CommandOrigin> origin_;  // made on first use
  ScopedOrigin* previous_;
};

// The innermost ScopedOrigin of this thread (empty when there is none): a
// stream captures it when it opens and restores it around the commands its
// later messages cause, on whatever thread reads them.
internal::v1::CommandOrigin CurrentOrigin();

// Sets command->origin from the innermost ScopedOrigin of this thread, if
// any and if the command has none yet.
void StampOrigin(internal::v1::Command* command);

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_AUTH_ORIGIN_H_
