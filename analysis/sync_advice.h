// analysis/sync_advice.h: what to change, for each type of sync point.
//
// A finding's fix must follow from its own evidence (docs/analysis.md, "Diagnosis"): the
// after-sync finding gives the fix of the sync types that drained the queue, in the order of the
// idle after them, and the blocking-copy finding tells reads of a value (`.item()`) from copies
// of data. The advice for each type lives here, once, so that every finding that names a type
// says the same thing about it.
#pragma once

#include "analysis/analysis_result.h"

#include <string>
#include <vector>

namespace gapwatch::analysis {

// True when at least half of the type's calls are device-to-host copies of at most
// kSmallReadBytes: reads of a value, whose fix is to read less often, not to pin memory.
bool mostlySmallReads(const SyncTypeStats& stats);

// One sentence: what to change about this type of sync point, given its own numbers.
std::string syncAdvice(const SyncTypeStats& stats);

// The advice of each type in `types`, in that order, one sentence each, a sentence that another
// type already gave said once.
std::string syncAdviceInOrder(const std::vector<const SyncTypeStats*>& types);

}  // namespace gapwatch::analysis
