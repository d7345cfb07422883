// reader/python_stack_text.h: a recorded Python stack (STRING_KIND_PYTHON_STACK) as frames, and
// which frame a report names.
//
// A report says "train.py:142 in train_step", not the innermost frame (often torch/_tensor.py or
// threading.py): the innermost frame of the user's own code, with the frames of installed
// packages and the standard library folded beneath it, as py-spy and austin show them. The whole
// stack stays available (--json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch {

struct PythonFrame {
  std::string function;  // the qualified name ("Trainer.step"), "<module>" for a module's code
  std::string file;      // as the interpreter has it (absolute, or relative to the start directory)
  uint32_t line = 0;     // 0: not known
};

// The frames of a stack's text, innermost first; a line that is not "function\tfile\tline" is
// skipped (the "..." line that marks a stack cut at its depth limit among them).
std::vector<PythonFrame> parsePythonStack(std::string_view text);

// Whether a frame belongs to an installed package (site-packages, dist-packages), the standard
// library (under lib/python3.X/) or the interpreter's own frozen modules, not to the user's code;
// in a Kineto trace's stacks also a frame with no file (a built-in, a module range) and torch's
// files, which the profiler writes relative to site-packages (other packages' relative paths
// cannot be told from the user's and count as the user's).
bool isLibraryFrame(const PythonFrame& frame);

// The index of the frame a report names: the innermost user frame, else (a stack of library code
// only) the innermost frame. `frames` must not be empty.
std::size_t namedFrameIndex(const std::vector<PythonFrame>& frames);

// "train.py:142 in train_step": the file by its last two path components at most.
std::string frameText(const PythonFrame& frame);

// The site a report lists for a stack: frameText of its named frame, with "(via torch/_tensor.py:
// 41 in item)" when library frames sit beneath it. Empty for a stack with no frames.
std::string pythonSiteText(std::string_view stack_text);

// Why a call went without its stack, for a DROP_SOURCE_PYTHON_STACK counter's id (events.proto).
std::string pythonStackMissReason(uint64_t id);

}  // namespace gapwatch
