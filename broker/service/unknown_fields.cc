#include "broker/service/unknown_fields.h"

#include "google/protobuf/unknown_field_set.h"

namespace tidegate::service {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

UnknownFieldScrubber::UnknownFieldScrubber(const Descriptor* root) { PlanFor(root); }

const UnknownFieldScrubber::Plan* UnknownFieldScrubber::PlanFor(const Descriptor* type) {
  if (auto it = plans_.find(type); it != plans_.end()) return it->second.get();
  // Made before its fields are, so a type that contains itself finds it.
  Plan* plan = (plans_[type] = std::make_unique<Plan>()).get();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_map() && field->message_type()->map_value()->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      continue;  // parsed entries keep only key and value
    }
    const Plan* inner = PlanFor(field->message_type());
    plan->fields.push_back({field, inner});
  }
  return plan;
}

bool UnknownFieldScrubber::HasUnknownFields(const Message& message, const Plan& plan) const {
  const Reflection* reflection = message.GetReflection();
  if (!reflection->GetUnknownFields(message).empty()) return true;
  for (const Plan::Field& f : plan.fields) {
    if (f.field->is_repeated()) {
      const int n = reflection->FieldSize(message, f.field);
      for (int i = 0; i < n; ++i) {
        if (HasUnknownFields(reflection->GetRepeatedMessage(message, f.field, i), *f.plan)) return true;
      }
    } else if (reflection->HasField(message, f.field) &&
               HasUnknownFields(reflection->GetMessage(message, f.field), *f.plan)) {
      return true;
    }
  }
  return false;
}

bool UnknownFieldScrubber::HasUnknownFields(const Message& message) const {
  // The root and every type it contains are planned; of any other type,
  // nothing is known, so it may hold some.
  auto it = plans_.find(message.GetDescriptor());
  return it == plans_.end() || HasUnknownFields(message, *it->second);
}

bool UnknownFieldScrubber::Scrub(Message* message) const {
  if (!HasUnknownFields(*message)) return false;
  message->DiscardUnknownFields();
  return true;
}

}  // namespace tidegate::service
