#include "broker/service/stream_limits.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tidegate::service {

std::string PeerHost(const std::string& peer) {
  if (!absl::StartsWith(peer, "ipv4:") && !absl::StartsWith(peer, "ipv6:")) return peer;
  const size_t colon = peer.rfind(':');
  return colon > 4 ? peer.substr(0, colon) : peer;
}

grpc::Status StreamLimiter::Acquire(const std::string& peer, const char* what, std::unique_ptr<Slot>* slot) {
  std::string host = PeerHost(peer);
  {
    absl::MutexLock lock(&mu_);
    if (total_ >= limits_.max_total) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat(what, ": the broker has ", total_, " streams open, its limit (--max-streams ",
                                       limits_.max_total, "); retry later"));
    }
    int64_t& mine = by_peer_[host];
    if (mine >= limits_.max_per_peer) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat(what, ": ", host, " has ", mine,
                                       " streams open, the limit per client (--max-streams-per-peer ",
                                       limits_.max_per_peer, "); close some first"));
    }
    ++mine;
    ++total_;
  }
  *slot = std::make_unique<Slot>(this, std::move(host));
  return grpc::Status::OK;
}

void StreamLimiter::Release(const std::string& host) {
  absl::MutexLock lock(&mu_);
  --total_;
  auto it = by_peer_.find(host);
  if (it != by_peer_.end() && --it->second <= 0) by_peer_.erase(it);
}

int64_t StreamLimiter::open() const {
  absl::MutexLock lock(&mu_);
  return total_;
}

}  // namespace tidegate::service
