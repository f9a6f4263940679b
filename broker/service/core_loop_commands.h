// What the writer needs to know about a command, shared by core_loop*.cc:
// its journal kind, which size limit applies, whether it changes the config,
// and the jobs it names. Internal to the CoreLoop.
#ifndef TIDEGATE_BROKER_SERVICE_CORE_LOOP_COMMANDS_H_
#define TIDEGATE_BROKER_SERVICE_CORE_LOOP_COMMANDS_H_

#include <algorithm>
#include <string>
#include <vector>

#include "broker/core/broker.h"
#include "tidegate/v1/config.pb.h"

namespace tidegate::service::loop_internal {

// The journal's `kind` column.
inline const char* KindOf(const internal::v1::Command& c) {
  switch (c.kind_case()) {
    case internal::v1::Command::kSubmit: return "submit";
    case internal::v1::Command::kAdopt: return "adopt";
    case internal::v1::Command::kFinish: return "finish";
    case internal::v1::Command::kCheckpoint: return "checkpoint";
    case internal::v1::Command::kSetQuota: return "set_quota";
    case internal::v1::Command::kSetCapacity: return "set_capacity";
    case internal::v1::Command::kTick: return "tick";
    case internal::v1::Command::kApplyConfig: return "apply_config";
    case internal::v1::Command::kAckResize: return "ack_resize";
    case internal::v1::Command::kVacate: return "vacate";
    case internal::v1::Command::KIND_NOT_SET: return "none";
  }
  return "none";
}

inline core::Time TickMs(const core::Broker& broker) {
  const auto& policy = broker.Config().policy();
  return std::max<int64_t>(1, policy.has_tick_s() ? policy.tick_s() : 10) * core::kMillisPerSecond;
}

// Commands that may carry a whole config or an agent's whole view.
inline bool ConfigSized(const internal::v1::Command& c) {
  return c.has_apply_config() || c.has_set_quota() || c.has_set_capacity() || c.has_adopt();
}

inline bool ChangesConfig(const internal::v1::Command& c) {
  return c.has_set_quota() || c.has_set_capacity() || c.has_apply_config();
}

// The jobs a command names, if any.
inline void CommandJobs(const internal::v1::Command& c, std::vector<std::string>* out) {
  if (c.has_submit()) out->push_back(c.submit().job());
  if (c.has_finish()) out->push_back(c.finish());
  if (c.has_checkpoint()) out->push_back(c.checkpoint());
  if (c.has_ack_resize()) out->push_back(c.ack_resize().job());
  if (c.has_vacate()) out->push_back(c.vacate());
  if (c.has_adopt()) {
    for (const auto& j : c.adopt().jobs()) out->push_back(j.job());
  }
}

}  // namespace tidegate::service::loop_internal

#endif  // TIDEGATE_BROKER_SERVICE_CORE_LOOP_COMMANDS_H_
