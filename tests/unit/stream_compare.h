// tests/unit/stream_compare.h: comparing what two StreamDecoders produced, for the tests and fuzz
// targets that decode the same bytes two ways (the batch fast path and libprotobuf's parse).
#pragma once

#include "reader/stream_decoder.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace gapwatch::test {

inline bool sameBatch(const DecodedBatch& a, const DecodedBatch& b) {
  return a.sequence == b.sequence && a.base_time_ns == b.base_time_ns && a.frame_offset == b.frame_offset &&
         a.strings == b.strings && a.api_calls == b.api_calls && a.activities == b.activities &&
         a.nccl_calls == b.nccl_calls && a.markers == b.markers && a.host_ranges == b.host_ranges &&
         a.python_samples == b.python_samples && a.drops == b.drops && a.activity_api_spans == b.activity_api_spans;
}

inline auto healthFields(const StreamHealth& h) {
  return std::make_tuple(h.has_hello, h.has_goodbye, h.batches, h.batches_missing, h.batches_out_of_order,
                         h.frames_before_hello, h.extra_hellos, h.frames_after_goodbye);
}

// Every definition, sorted: two tables compare equal when they hold the same texts.
inline std::vector<std::tuple<int, uint32_t, std::string>> tableOf(const StringTable& strings) {
  std::vector<std::tuple<int, uint32_t, std::string>> entries;
  strings.forEach([&](v1::StringKind kind, uint32_t id, const std::string& text) { entries.emplace_back(kind, id, text); });
  std::sort(entries.begin(), entries.end());
  return entries;
}

}  // namespace gapwatch::test
