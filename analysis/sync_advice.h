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

// What a report calls the type: its name (syncPointName), except for copies that are mostly
// small reads: "reads of values" (async copies into pageable memory, what .item() makes) and
// "memcpy value reads" (synchronous copies). Naming them after pageable memory sends the reader to
// pin_memory, which would not help: they wait for the queue, not for the copy.
std::string syncTypeLabel(const SyncTypeStats& stats);

// One sentence: what to change about this type of sync point, given its own numbers.
std::string syncAdvice(const SyncTypeStats& stats);

// The advice of each type in `types`, in that order, one sentence each, a sentence that another
// type already gave said once.
std::string syncAdviceInOrder(const std::vector<const SyncTypeStats*>& types);

}  // namespace gapwatch::analysis
