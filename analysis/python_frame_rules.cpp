// analysis/python_frame_rules.cpp: see python_frame_rules.h.
#include "analysis/python_frame_rules.h"

#include "reader/warmup_names.h"

#include <cstddef>

namespace gapwatch::analysis {
namespace {

// `dir` ("torch/utils/data/") as a directory of the path: at its start (a relative path) or after
// a '/', so that "mytorch/" is not "torch/".
bool underDirectory(std::string_view file, std::string_view dir) {
  if (file.substr(0, dir.size()) == dir) return true;
  for (std::size_t at = file.find(dir); at != std::string_view::npos; at = file.find(dir, at + 1)) {
    if (at > 0 && file[at - 1] == '/') return true;
  }
  return false;
}

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// The innermost user frame at or outside `from`: none of torch, a loader, an installed package or
// the standard library.
std::size_t userFrameFrom(const std::vector<PythonFrame>& frames, std::size_t from,
                          const std::vector<std::string>& loader_patterns) {
  for (std::size_t i = from; i < frames.size(); ++i) {
    const PythonFrame& f = frames[i];
    if (!isTorchFrame(f) && !isInputPipelineFrame(f, loader_patterns) && !isLibraryFrame(f)) return i;
  }
  return kNone;
}

}  // namespace

bool isTorchFrame(const PythonFrame& frame) { return underDirectory(frame.file, "torch/"); }

bool isInputPipelineFrame(const PythonFrame& frame, const std::vector<std::string>& loader_patterns) {
  if (underDirectory(frame.file, "torch/utils/data/")) return true;
  for (const std::string& pattern : loader_patterns) {
    if (!pattern.empty() && frame.file.find(pattern) != std::string::npos) return true;
  }
  return false;
}

bool isCheckpointFrame(const PythonFrame& frame) {
  return underDirectory(frame.file, "torch/serialization.py") ||
         underDirectory(frame.file, "torch/distributed/checkpoint/");
}

PythonStackClass classifyPythonFrames(const std::vector<PythonFrame>& frames,
                                      const std::vector<std::string>& loader_patterns) {
  PythonStackClass c;
  if (frames.empty()) return c;
  // The outermost frame of each kind: where the user's code (outside it) called in.
  std::size_t loader = kNone, checkpoint = kNone, compiler = kNone;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (isInputPipelineFrame(frames[i], loader_patterns)) loader = i;
    if (isCheckpointFrame(frames[i])) checkpoint = i;
    if (isWarmupPythonFrame(frames[i].file, frames[i].function)) compiler = i;
  }
  if (compiler != kNone) {
    c.warmup = true;
    c.warmup_frame = frameText(frames[compiler]);
  }
  if (loader != kNone) {
    const std::size_t user = userFrameFrom(frames, loader + 1, loader_patterns);
    c.part = HostPart::kInputPipeline;
    c.label = frameText(frames[user != kNone ? user : loader]);
  } else if (checkpoint != kNone) {
    const std::size_t user = userFrameFrom(frames, checkpoint + 1, loader_patterns);
    c.part = HostPart::kOther;
    c.label = "checkpoint: " + frameText(frames[user != kNone ? user : checkpoint]);
  } else if (isTorchFrame(frames[0])) {
    // The user's line that called into torch; else the innermost frame outside torch (a library
    // such as transformers); else torch's own innermost frame.
    std::size_t named = userFrameFrom(frames, 1, loader_patterns);
    for (std::size_t i = 1; named == kNone && i < frames.size(); ++i) {
      if (!isTorchFrame(frames[i])) named = i;
    }
    c.part = HostPart::kFramework;
    c.label = frameText(frames[named != kNone ? named : 0]);
  } else {
    c.part = HostPart::kOther;
    c.label = frameText(frames[namedFrameIndex(frames)]);
  }
  return c;
}

PythonStackClass classifyPythonStack(std::string_view stack_text, const std::vector<std::string>& loader_patterns) {
  return classifyPythonFrames(parsePythonStack(stack_text), loader_patterns);
}

}  // namespace gapwatch::analysis
