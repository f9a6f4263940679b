// Following the leader among brokers that share a PostgreSQL ledger
// (docs/ha.md). Clients take `--server a,b,c`; the leader is the broker whose
// gRPC health reports `tidegate.leader` SERVING, and a standby's UNAVAILABLE
// names it in the trailing metadata `tidegate-leader`. With a single address
// nothing is probed: it is used as given.
//
// Threading: free functions, thread-safe.
#ifndef TIDEGATE_CLI_LEADER_CHANNEL_H_
#define TIDEGATE_CLI_LEADER_CHANNEL_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "cli/auth_channel.h"
#include "grpcpp/grpcpp.h"

namespace tidegate::cli {

inline constexpr char kLeaderHealthService[] = "tidegate.leader";
inline constexpr char kLeaderMetadataKey[] = "tidegate-leader";

// "a,b,c" -> {"a", "b", "c"} (spaces trimmed, empty parts dropped).
std::vector<std::string> SplitServers(const std::string& servers);

// True when `channel`'s broker answers that it leads, within `wait`.
bool IsLeader(const std::shared_ptr<grpc::Channel>& channel, std::chrono::milliseconds wait);

// The leader among `servers`: asks each in turn, again and again until one
// leads or `wait` passed (an election takes up to one lease); then the first
// address, so the caller's error names a broker. One address: returned as is.
std::string FindLeader(const std::string& servers, const ChannelSecurity& security, std::chrono::milliseconds wait);

// The leader a standby named in a finished call's trailing metadata, or "".
std::string LeaderHint(const grpc::ClientContext& context);

}  // namespace tidegate::cli

#endif  // TIDEGATE_CLI_LEADER_CHANNEL_H_
