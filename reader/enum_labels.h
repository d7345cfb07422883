// reader/enum_labels.h: short lower-case names for the schema's enum values, for output.
//
// API_KIND_DEVICE_SYNC becomes "device_sync", PROBE_CUPTI_ACTIVITY "cupti_activity": the value's
// name without its enum's prefix. Taken from the generated descriptors, so a value added to the
// schema gets its name without code here changing. A value this build does not know (a newer
// recorder's) comes out as its number, so output never loses it.
#pragma once

#include <google/protobuf/generated_enum_reflection.h>

#include <string>

namespace gapwatch {

std::string enumLabel(const google::protobuf::EnumDescriptor* descriptor, int value);

template <typename Enum>
std::string enumLabel(Enum value) {
  return enumLabel(google::protobuf::GetEnumDescriptor<Enum>(), static_cast<int>(value));
}

}  // namespace gapwatch
