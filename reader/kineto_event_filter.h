// reader/kineto_event_filter.h: which traceEvents elements the Kineto import reads, told from ph
// and cat, and, before simdjson sees a batch, from an element's first bytes (plainlyUnused): most
// of a trace (cpu_op, flows, instants) is skipped at a cost of a few compares each.
#pragma once

#include <string_view>

namespace gapwatch::kineto {

enum class Category { kSkip, kKernel, kMemcpy, kMemset, kSync, kRuntime, kDriver, kUserAnnotation, kCpuOp, kPythonFunction };

Category categoryOf(std::string_view cat);

// Whether an element with this ph and cat is read past them. Kineto writes ph and cat first, so
// the many events the import does not use (cpu_op, flows, instants) cost two fields each.
bool isWanted(std::string_view ph, Category category);

// Whether an element is plainly one the import does not use, told from its first bytes when they
// are written as Kineto writes them; false whenever unsure (kineto_event_filter.cpp).
bool plainlyUnused(std::string_view element);

}  // namespace gapwatch::kineto
