// tools/duration_text.h: durations as users type them on the command line: "30us", "1.5ms", "2s".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gapwatch::cli {

// A non-negative number (fractions allowed) followed by a unit: ns, us (or µs), ms, s; a space
// between them is allowed. nullopt for anything else, a bare number included: "30" could mean 30
// ns or 30 us, and guessing wrong by a factor of 1000 is worse than asking.
std::optional<uint64_t> parseDuration(std::string_view text);

}  // namespace gapwatch::cli
