// reader/kineto_numbers.h: the numbers of a PyTorch profiler (Kineto) trace, read from their JSON
// text exactly: microseconds with up to three decimals to integer nanoseconds (no binary floating
// point: "4458676522690.655" us is 4458676522690655 ns), and integers within int64 (refused past
// it, never wrapped). The JSON parser hands over the raw text of a number; these decide what it is.
#pragma once

#include <cstdint>
#include <string_view>

namespace gapwatch {

// The text without trailing JSON whitespace (a raw number token may carry it).
std::string_view trimRight(std::string_view s);

// A non-negative decimal number of microseconds ("12", "68.0", "4458676522690.655") to integer
// nanoseconds, exactly (digits past the third decimal are cut). False for anything else (a sign,
// an exponent, NaN, or a value over UINT64_MAX ns).
bool microsToNs(std::string_view text, uint64_t& ns);

// An integer (optionally negative) that fits int64; a float with no fractional part ("7.0") is
// accepted too. Anything past int64's range is refused rather than wrapped into another number.
bool parseInt(std::string_view text, int64_t& value);

// A pointer as C++ formats one ("0x55d3c8a0e000", "0x0"): Kineto's ROCm back ends write a HIP
// call's stream so (libkineto/src/RoctracerActivity_inl.h). 1 to 16 hex digits after "0x"; the
// value is the pointer's bits.
bool parsePointer(std::string_view text, uint64_t& value);

}  // namespace gapwatch
