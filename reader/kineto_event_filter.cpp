// reader/kineto_event_filter.cpp: see kineto_event_filter.h.
#include "reader/kineto_event_filter.h"

#include "reader/json_text.h"

#include <cstddef>

namespace gapwatch::kineto {

Category categoryOf(std::string_view cat) {
  // PyTorch 1.8-1.10 (Kineto before its categories were unified, 2022) wrote capitalised names
  // for the same events: Kernel, Memcpy, Memset, Runtime, Operator (a cpu_op), Python; and
  // tools of that time lowercased them. Their events carry the same args (correlation, stream,
  // device, bytes) and the same copy names (docs/usage.md, "Trace schemas").
  if (cat == "Kernel") return Category::kKernel;
  if (cat == "Memcpy" || cat == "memcpy") return Category::kMemcpy;
  if (cat == "Memset" || cat == "memset") return Category::kMemset;
  if (cat == "Runtime" || cat == "runtime") return Category::kRuntime;
  if (cat == "Operator" || cat == "operator") return Category::kCpuOp;
  if (cat == "Python" || cat == "python") return Category::kPythonFunction;
  if (cat == "kernel") return Category::kKernel;
  if (cat == "gpu_memcpy") return Category::kMemcpy;
  if (cat == "gpu_memset") return Category::kMemset;
  if (cat == "cuda_sync") return Category::kSync;
  if (cat == "cuda_runtime") return Category::kRuntime;
  if (cat == "cuda_driver") return Category::kDriver;
  if (cat == "user_annotation") return Category::kUserAnnotation;
  if (cat == "cpu_op") return Category::kCpuOp;  // only record_param_comms is used
  if (cat == "python_function") return Category::kPythonFunction;  // call sites (with_stack=True)
  return Category::kSkip;
}

// Whether an element with this ph and cat is read past them. Kineto writes ph and cat first, so
// the many events the import does not use (cpu_op, flows, instants) cost two fields each.
bool isWanted(std::string_view ph, Category category) {
  return ph == "M" || (ph == "X" && category != Category::kSkip);
}

// Whether an element is plainly one the import does not use, told from its first bytes when they
// are written as Kineto writes them (`{"ph": "X", "cat": "cpu_op", ...`, or `{"ph": "f", ...`);
// false whenever unsure (other key order, an escape), and then simdjson reads ph and cat. Such
// elements are blanked to `{}` before the batch is parsed, so they cost simdjson nearly nothing
// (they are most of a trace: cpu_op, flows). The same isWanted() decides both ways: an event the
// mapping starts to use must be wanted there.
bool plainlyUnused(std::string_view e) {
  std::size_t i = 0;
  const auto space = [&] {
    while (i < e.size() && isJsonSpace(e[i])) ++i;
  };
  const auto take = [&](std::string_view text) {
    space();
    if (e.substr(i, text.size()) != text) return false;
    i += text.size();
    return true;
  };
  // The string value at i, if short and without escapes.
  const auto value = [&](std::size_t max, std::string_view& out) {
    if (!take("\"")) return false;
    const std::size_t end = e.find('"', i);
    if (end == std::string_view::npos || end - i > max) return false;
    out = e.substr(i, end - i);
    i = end + 1;
    return out.find('\\') == std::string_view::npos;
  };
  std::string_view ph, cat;
  if (!take("{") || !take("\"ph\"") || !take(":") || !value(8, ph)) return false;
  if (ph != "X") return !isWanted(ph, Category::kSkip);
  if (!take(",") || !take("\"cat\"") || !take(":") || !value(64, cat)) return false;
  const Category category = categoryOf(cat);
  // Every cpu_op is used (host ranges: kineto_host_ranges.h); parseEvent stops before their args
  // unless the op is record_param_comms.
  return !isWanted(ph, category);
}

}  // namespace gapwatch::kineto
