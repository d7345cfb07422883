// python_debug_offsets.h: what a CPython 3.13+ says of its own layout, checked against ours.
//
// From 3.13 the interpreter keeps a _Py_DebugOffsets at the start of _PyRuntime for tools that
// read it from outside: a cookie ("xdebugpy"), its PY_VERSION_HEX, whether it is a free-threaded
// build, and the offsets of the thread, frame, code and object fields a stack walk reads. The walk
// (python_stack.cpp) uses the generated table (python_layout.h); before it is trusted, the table
// is compared here, once at lookup, with what the running interpreter describes. A debug build, a
// distribution's patched build or a free-threaded one lays its structs out otherwise: it gets no
// stack (each call counted under its own reason), never a walk through a wrong layout.
//
// The _Py_DebugOffsets struct itself is not stable across minor versions (CPython says so in
// pycore_runtime.h): where each offset sits in it is known here for 3.13 and 3.14 (positions read
// with offsetof against 3.13.0's and 3.14.10's own headers; docs/design/python-stacks.md has the
// command).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "python_layout.h"

namespace gapwatch {

enum class DebugOffsetsVerdict : uint8_t {
  kAgrees,            // the table and the interpreter agree on every field the walk reads
  kNotDescribed,      // a version whose _Py_DebugOffsets gapwatch cannot place (before 3.13, after 3.14)
  kNoCookie,          // no "xdebugpy" at the start of _PyRuntime: not the struct we know
  kOtherVersion,      // its version is not the one the interpreter reports (Py_Version)
  kFreeThreaded,      // a free-threaded build (3.13t): other object and frame layouts
  kDiffers,           // an offset differs from the table's (a debug or patched build)
};

// How many bytes of _PyRuntime's start the check reads.
inline constexpr size_t kDebugOffsetsBytes = 648;

// `runtime_start`: the first kDebugOffsetsBytes bytes of _PyRuntime; `version_hex`: Py_Version.
// `layout`: the table's entry for that version. On kDiffers, *field names the first field that
// differs (a static string) for the log.
DebugOffsetsVerdict check_debug_offsets(const uint8_t* runtime_start, uint64_t version_hex, const PythonLayout& layout,
                                        const char** field);

}  // namespace gapwatch
