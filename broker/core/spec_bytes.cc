#include "broker/core/spec_bytes.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace tidegate::core {

std::string SpecBytes(const v1::JobSpec& spec) {
  const size_t size = spec.ByteSizeLong();
  std::string out(size, '\0');
  google::protobuf::io::ArrayOutputStream array(out.data(), static_cast<int>(size));
  google::protobuf::io::CodedOutputStream coded(&array);
  coded.SetSerializationDeterministic(true);
  spec.SerializeWithCachedSizes(&coded);
  return out;
}

v1::JobSpec ParseSpecBytes(const std::string& bytes) {
  v1::JobSpec spec;
  if (!spec.ParseFromString(bytes)) spec.Clear();
  return spec;
}

}  // namespace tidegate::core
