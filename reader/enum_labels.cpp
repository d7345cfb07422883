// reader/enum_labels.cpp: see enum_labels.h.
#include "reader/enum_labels.h"

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <string_view>

namespace gapwatch {

std::string enumLabel(const google::protobuf::EnumDescriptor* descriptor, int value) {
  const google::protobuf::EnumValueDescriptor* named = descriptor->FindValueByNumber(value);
  if (named == nullptr) return std::to_string(value);
  // The schema's rule: every enum's zero value is <PREFIX>UNSPECIFIED, which gives the prefix.
  std::string_view name = named->name();
  const std::string& zero_name = descriptor->value(0)->name();
  constexpr std::string_view kUnspecified = "UNSPECIFIED";
  if (zero_name.size() > kUnspecified.size() && zero_name.ends_with(kUnspecified)) {
    const std::string_view prefix =
        std::string_view(zero_name).substr(0, zero_name.size() - kUnspecified.size());
    if (name.starts_with(prefix) && name.size() > prefix.size()) name.remove_prefix(prefix.size());
  }
  std::string label(name);
  for (char& c : label) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return label;
}

}  // namespace gapwatch
