#include "broker/sim/records.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/text/enum_names.h"
#include "api/text/json_writer.h"

namespace tidegate::sim {
namespace {

using text::JsonWriter;

void WriteSeconds(JsonWriter& w, core::Time ms) {
  if (ms % 1000 == 0) {
    w.Int(ms / 1000);
  } else {
    w.Double(static_cast<double>(ms) / 1000.0);
  }
}

void WriteQuantities(JsonWriter& w, const core::NamedQuantities& quantities) {
  w.BeginObject();
  for (const auto& [name, quantity] : quantities) w.Key(name).Int(quantity);
  w.EndObject();
}

void WriteOptional(JsonWriter& w, const std::optional<double>& value) {
  if (value) {
    w.Double(*value);
  } else {
    w.Null();
  }
}

}  // namespace

std::string FormatSeconds(core::Time ms) {
  JsonWriter w;
  WriteSeconds(w, ms);
  return w.Take();
}

std::string RecordJson(const core::Event& e, core::Time start_ms) {
  using core::EventType;
  JsonWriter w;
  w.BeginObject();
  w.Key("at");
  WriteSeconds(w, e.at - start_ms);
  w.Key("type").String(core::EventTypeName(e.type));
  w.Key("job").String(e.job);
  switch (e.type) {
    case EventType::kAdmit:
      w.Key("team").String(e.team);
      w.Key("replicas").Int(e.replicas);
      w.Key("borrowed");
      WriteQuantities(w, e.borrowed);
      if (e.adopted) w.Key("adopted").Bool(true);
      break;
    case EventType::kQueue:
      w.Key("team").String(e.team);
      w.Key("reason").String(e.reason);
      if (e.requeued) w.Key("requeued").Bool(true);
      break;
    case EventType::kPreempt:
      w.Key("team").String(e.team);
      w.Key("by").String(e.by);
      w.Key("reason").String(e.reason);
      break;
    case EventType::kReclaim:
      w.Key("team").String(e.team);
      w.Key("decision").String(text::DecisionName(e.decision));
      w.Key("victims").BeginArray();
      for (const std::string& victim : e.victims) w.String(victim);
      w.EndArray();
      break;
    case EventType::kResize:
      w.Key("team").String(e.team);
      if (!e.by.empty()) w.Key("by").String(e.by);
      w.Key("from").Int(e.from);
      w.Key("to").Int(e.to);
      w.Key("borrowed");
      WriteQuantities(w, e.borrowed);
      w.Key("reason").String(e.reason);
      break;
    case EventType::kEnd:
      break;
    case EventType::kReject:
    case EventType::kError:
      w.Key("reason").String(e.reason);
      break;
  }
  w.EndObject();
  return w.Take();
}

std::string SummaryJson(const Summary& s) {
  JsonWriter w;
  w.BeginObject();
  w.Key("type").String("summary");
  w.Key("utilization");
  WriteOptional(w, s.utilization);
  w.Key("teams").BeginObject();
  for (const TeamSummary& t : s.teams) {
    w.Key(t.name).BeginObject();
    w.Key("gpu_hours").Double(t.gpu_hours);
    w.Key("borrowed_gpu_hours").Double(t.borrowed_gpu_hours);
    w.Key("wait_p50_s");
    WriteOptional(w, t.wait_p50_s);
    w.Key("wait_p95_s");
    WriteOptional(w, t.wait_p95_s);
    w.Key("preemptions").Int(t.preemptions);
    w.Key("lost_gpu_hours").Double(t.lost_gpu_hours);
    w.Key("grown_gpu_hours").Double(t.grown_gpu_hours);
    w.EndObject();
  }
  w.EndObject();
  w.Key("reclaim_latency_p99_s");
  WriteOptional(w, s.reclaim_latency_p99_s);
  w.Key("grown_gpu_hours").Double(s.grown_gpu_hours);
  w.Key("lost_gpu_hours").Double(s.lost_gpu_hours);
  w.Key("jobs").BeginObject();
  w.Key("submitted").Int(s.jobs.submitted);
  w.Key("adopted").Int(s.jobs.adopted);
  w.Key("admitted").Int(s.jobs.admitted);
  w.Key("rejected").Int(s.jobs.rejected);
  w.Key("queued_at_end").Int(s.jobs.queued_at_end);
  w.EndObject();
  w.Key("duration_s").Double(s.duration_s);
  if (s.trace) {
    w.Key("trace").BeginObject();
    w.Key("rows").Int(s.trace->rows);
    w.Key("submitted").Int(s.trace->submitted);
    w.Key("unknown_team").Int(s.trace->unknown_team);
    w.Key("zero_gpu").Int(s.trace->zero_gpu);
    w.EndObject();
  }
  w.EndObject();
  return w.Take();
}

}  // namespace tidegate::sim
