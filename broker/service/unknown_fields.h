// Finding and dropping the protobuf fields this build does not know, in a
// command before it is journalled (core_loop.h: a client could otherwise
// store anything in the ledger through them and have it served back).
//
// Protobuf's own Message::DiscardUnknownFields lists every set field by
// reflection and walks a map as its repeated entries, which leaves the map
// in its repeated form (the core's first read of it rebuilds the map). Almost
// no command carries unknown fields, so the scrubber first looks for any,
// reading only the fields that can hold them — the message fields, found once
// per message type — and calls DiscardUnknownFields only when it found some.
// Maps of scalar values are not looked into: parsing keeps only a map
// entry's key and value, so an entry holds no unknown fields; a map of
// messages is, since its values may.
//
// Thread-safe: the plan of each message type is made in the constructor and
// only read afterwards.
#ifndef TIDEGATE_BROKER_SERVICE_UNKNOWN_FIELDS_H_
#define TIDEGATE_BROKER_SERVICE_UNKNOWN_FIELDS_H_

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace tidegate::service {

class UnknownFieldScrubber {
 public:
  // For messages of type `root` (e.g. internal::v1::Command::descriptor()).
  explicit UnknownFieldScrubber(const google::protobuf::Descriptor* root);

  // Whether `message` or any message inside it holds unknown fields. Does not
  // change `message`'s contents (a map of messages may gain its repeated form).
  // A message of a type the root does not contain: true (it may).
  bool HasUnknownFields(const google::protobuf::Message& message) const;
  // Drops every unknown field of `message`, at any depth; true when there
  // were some.
  bool Scrub(google::protobuf::Message* message) const;

 private:
  // The fields of one message type that may hold unknown fields: singular
  // and repeated message fields, maps whose values are messages (walked as
  // their entries, whose plan holds the value).
  struct Plan {
    struct Field {
      const google::protobuf::FieldDescriptor* field;
      const Plan* plan;  // of the field's message type
    };
    std::vector<Field> fields;
  };
  const Plan* PlanFor(const google::protobuf::Descriptor* type);
  bool HasUnknownFields(const google::protobuf::Message& message, const Plan& plan) const;

  absl::flat_hash_map<const google::protobuf::Descriptor*, std::unique_ptr<Plan>> plans_;
};

}  // namespace tidegate::service

#endif  // TIDEGATE_BROKER_SERVICE_UNKNOWN_FIELDS_H_
