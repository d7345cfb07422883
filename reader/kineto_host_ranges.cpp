// reader/kineto_host_ranges.cpp: see kineto_host_ranges.h.
#include "reader/kineto_host_ranges.h"

#include "reader/warmup_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace gapwatch {
namespace {

// Whether `text` contains `needle` (lower case), ignoring case, without copying.
bool containsNoCase(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= text.size(); ++i) {
    std::size_t j = 0;
    while (j < needle.size() && std::tolower(static_cast<unsigned char>(text[i + j])) == needle[j]) ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

// Names that say data loading. PyTorch's own: the DataLoader wraps each __next__ in a range
// named "enumerate(DataLoader)#<iterator class>.__next__", and its frames live in
// torch/utils/data/. Users' ranges: the names seen in real traces ("## load_batch ##",
// "## wait_for_batch ##", "## data_load ##") and their usual variants. Kept short on purpose: a
// name wrongly taken for data loading sends a user to the wrong fix, so "batch" or "data" alone
// do not count ("all2all_data" is TorchRec's input distribution, a collective).
constexpr std::array<std::string_view, 9> kInputPipelineNames = {
    "dataloader", "torch/utils/data/", "data_load", "dataload", "load_batch",
    "wait_for_batch", "next_batch", "get_batch", "fetch_batch",
};

bool namesInputPipeline(std::string_view name) {
  for (std::string_view needle : kInputPipelineNames) {
    if (containsNoCase(name, needle)) return true;
  }
  return false;
}

}  // namespace

v1::HostRangeKind hostRangeKindOf(KinetoHostSource source, std::string_view name) {
  if (namesInputPipeline(name)) return v1::HOST_RANGE_KIND_INPUT_PIPELINE;
  switch (source) {
    case KinetoHostSource::kCpuOp:
      return v1::HOST_RANGE_KIND_FRAMEWORK_OP;
    case KinetoHostSource::kUserAnnotation:
      return v1::HOST_RANGE_KIND_ANNOTATION;
    case KinetoHostSource::kPythonFunction:
      // A compiler's frames are the evidence that a gap was compiling (warmup_names.h); other
      // frames hold every op below them and say nothing of whether the host was in one.
      return isWarmupHostRangeName(name) ? v1::HOST_RANGE_KIND_ANNOTATION : v1::HOST_RANGE_KIND_UNSPECIFIED;
  }
  return v1::HOST_RANGE_KIND_UNSPECIFIED;
}

bool KinetoHostRanges::add(v1::HostRangeKind kind, uint32_t thread_id, uint64_t start_ns, uint64_t end_ns,
                           uint32_t name_id, std::vector<HostRangeEvent>& out) {
  if (kind == v1::HOST_RANGE_KIND_UNSPECIFIED || end_ns <= start_ns) return false;
  if (kind == v1::HOST_RANGE_KIND_FRAMEWORK_OP) {
    auto [it, first] = last_op_.try_emplace(thread_id);
    Outer& last = it->second;
    if (!first && start_ns >= last.start_ns && end_ns <= last.end_ns) {
      ++nested_;
      return false;
    }
    last = {start_ns, end_ns};
  }
  out.push_back({kind, thread_id, start_ns, end_ns, name_id});
  ++kept_;
  return true;
}

}  // namespace gapwatch
