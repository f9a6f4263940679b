#include "cli/leader_channel.h"

#include <thread>

#include "grpcpp/impl/codegen/client_unary_call.h"

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tidegate::cli {

std::vector<std::string> SplitServers(const std::string& servers) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(servers, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

bool IsLeader(const std::shared_ptr<grpc::Channel>& channel, std::chrono::milliseconds wait) {
  // grpc.health.v1.Health/Check, encoded by hand (field 1: the service name;
  // the answer's field 1 is 1 for SERVING), to need no health stubs.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + wait);
  const std::string service = kLeaderHealthService;
  const std::string raw = std::string("\x0a") + static_cast<char>(service.size()) + service;
  grpc::Slice slice(raw);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  const grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC);
  const grpc::Status status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(channel.get(), method, &context, request,
                                                                            &response);
  if (!status.ok()) return false;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes.size() == 2 && bytes[0] == 0x08 && bytes[1] == 1;
}

std::string FindLeader(const std::string& servers, const ChannelSecurity& security, std::chrono::milliseconds wait) {
  const std::vector<std::string> addresses = SplitServers(servers);
  if (addresses.size() <= 1) return addresses.empty() ? servers : addresses.front();
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const std::string& address : addresses) {
    auto channel = MakeBrokerChannel(address, security, grpc::ChannelArguments());
    channels.push_back(channel.ok() ? *channel : nullptr);
  }
  const auto deadline = std::chrono::steady_clock::now() + wait;
  do {
    for (size_t i = 0; i < channels.size(); ++i) {
      if (channels[i] != nullptr && IsLeader(channels[i], std::chrono::milliseconds(500))) return addresses[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  return addresses.front();
}

std::string LeaderHint(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kLeaderMetadataKey);
  if (it == trailers.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace tidegate::cli
