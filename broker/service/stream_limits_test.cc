#include "broker/service/stream_limits.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tidegate::service {
namespace {

using ::testing::HasSubstr;

TEST(StreamLimitsTest, PeerHostDropsTheClientPort) {
  EXPECT_EQ(PeerHost("ipv4:10.0.0.7:51234"), "ipv4:10.0.0.7");
  EXPECT_EQ(PeerHost("ipv6:[::1]:51234"), "ipv6:[::1]");
  EXPECT_EQ(PeerHost("unix:/run/tidegate.sock"), "unix:/run/tidegate.sock");
}

TEST(StreamLimitsTest, EachHostGetsItsShareAndSlotsComeBackWhenStreamsEnd) {
  StreamLimiter limiter(StreamLimits{/*max_total=*/3, /*max_per_peer=*/2});
  std::vector<std::unique_ptr<StreamLimiter::Slot>> slots(5);
  EXPECT_TRUE(limiter.Acquire("ipv4:10.0.0.1:1000", "WaitAdmission", &slots[0]).ok());
  EXPECT_TRUE(limiter.Acquire("ipv4:10.0.0.1:1001", "WaitAdmission", &slots[1]).ok());
  const grpc::Status per_peer = limiter.Acquire("ipv4:10.0.0.1:1002", "WaitAdmission", &slots[2]);
  EXPECT_EQ(per_peer.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(per_peer.error_message(), HasSubstr("ipv4:10.0.0.1 has 2 streams open"));
  EXPECT_THAT(per_peer.error_message(), HasSubstr("--max-streams-per-peer 2"));
  EXPECT_TRUE(limiter.Acquire("ipv4:10.0.0.2:1000", "WatchResizes", &slots[3]).ok());
  const grpc::Status total = limiter.Acquire("ipv4:10.0.0.3:1000", "Connect", &slots[4]);
  EXPECT_EQ(total.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(total.error_message(), HasSubstr("--max-streams 3"));
  EXPECT_EQ(limiter.open(), 3);
  slots[0].reset();
  EXPECT_EQ(limiter.open(), 2);
  EXPECT_TRUE(limiter.Acquire("ipv4:10.0.0.1:1003", "WaitAdmission", &slots[2]).ok());
}

}  // namespace
}  // namespace tidegate::service
