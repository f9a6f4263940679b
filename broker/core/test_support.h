// Test support for the core's tests: a config from text, a fluent job-spec
// builder and the commands the tests send, shared by broker_test,
// broker_elastic_test, the property tests and the HTTP endpoint's tests so a
// spec is built one way.
#ifndef TIDEGATE_BROKER_CORE_TEST_SUPPORT_H_
#define TIDEGATE_BROKER_CORE_TEST_SUPPORT_H_

#include <cstdint>
#include <string>
#include <utility>

#include <memory>

#include "broker/core/broker.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::core::test_support {

// A config (or any message) from protobuf text; a parse failure fails the test.
inline v1::Config ParseConfig(const std::string& text) {
  v1::Config c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

// The smallest fleet: cluster "a" with 8 GPUs and one leaf team, "red",
// guaranteed all 8 (it may borrow; there is nobody to lend).
inline v1::Config OneTeamConfig() {
  return ParseConfig(R"pb(
    clusters { name: "a" capacity { key: "gpu" value: 8 } }
    teams { name: "red" quota { key: "gpu" value { guaranteed: 8 } } }
  )pb");
}

// A broker created from config text at `now`; a refused config fails the
// test (and returns nullptr).
inline std::unique_ptr<Broker> MakeBroker(const std::string& text, Time now) {
  auto b = Broker::Create(ParseConfig(text), now);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *std::move(b) : nullptr;
}

// A fluent JobSpec builder: JobSpecBuilder("a1").Team("a").Gpus(2).Submit().
// Only what a test sets is set, so defaults stay the core's to fill in.
class JobSpecBuilder {
 public:
  explicit JobSpecBuilder(std::string id) { spec_.set_job(std::move(id)); }
  JobSpecBuilder& Team(const std::string& team) { spec_.set_team(team); return *this; }
  JobSpecBuilder& Cluster(const std::string& cluster) { spec_.set_cluster(cluster); return *this; }
  JobSpecBuilder& Gpus(int64_t per_replica) { return Per("gpu", per_replica); }
  JobSpecBuilder& Per(const std::string& resource, int64_t per_replica) {
    (*spec_.mutable_per_replica())[resource] = per_replica;
    return *this;
  }
  JobSpecBuilder& Replicas(int64_t n) { spec_.set_replicas(n); return *this; }
  JobSpecBuilder& ClearReplicas() { spec_.clear_replicas(); return *this; }
  JobSpecBuilder& Priority(int32_t p) { spec_.set_priority(p); return *this; }
  JobSpecBuilder& Grace(int64_t seconds) { spec_.set_grace_s(seconds); return *this; }
  JobSpecBuilder& Requeue(bool requeue) { spec_.set_requeue(requeue); return *this; }
  JobSpecBuilder& CheckpointInterval(int64_t seconds) { spec_.set_checkpoint_interval_s(seconds); return *this; }
  JobSpecBuilder& Elastic(int64_t min, int64_t max) {
    spec_.mutable_elastic()->set_min(min);
    spec_.mutable_elastic()->set_max(max);
    return *this;
  }
  const v1::JobSpec& Build() const { return spec_; }
  internal::v1::Command Submit() const;

 private:
  v1::JobSpec spec_;
};

inline internal::v1::Command SubmitCommand(v1::JobSpec spec) {
  internal::v1::Command c;
  *c.mutable_submit() = std::move(spec);
  return c;
}
inline internal::v1::Command JobSpecBuilder::Submit() const { return SubmitCommand(spec_); }

inline internal::v1::Command FinishCommand(const std::string& id) {
  internal::v1::Command c;
  c.set_finish(id);
  return c;
}

inline internal::v1::Command TickCommand() {
  internal::v1::Command c;
  c.mutable_tick();
  return c;
}

}  // namespace tidegate::core::test_support

#endif  // TIDEGATE_BROKER_CORE_TEST_SUPPORT_H_
