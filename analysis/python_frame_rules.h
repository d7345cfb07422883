// analysis/python_frame_rules.h: what a sampled Python stack says the host was doing.
//
// A live recording has no host ranges; its Python sampler reads the launching thread's stack while
// that thread stays outside CUDA calls (events.proto PythonSample). Each stack is put into one of
// the host parts by the frames on it (docs/analysis.md, "Host time", has the same rules in words):
//   1. input_pipeline: some frame's file is under torch/utils/data/ or contains one of the loader
//      patterns (AnalysisOptions::input_pipeline_frames: Hugging Face datasets, WebDataset, DALI,
//      Ray Data). Label: the user's line that called into the loader (the innermost user frame
//      outside the outermost loader frame), else that loader frame;
//   2. other, as checkpoint I/O: some frame is torch/serialization.py (torch.save, torch.load) or
//      under torch/distributed/checkpoint/. Label: "checkpoint: " and the user's line that called it;
//   3. framework: the innermost frame is under a torch/ package (the thread in torch's Python, or
//      in native code it called). Label: the innermost user frame, which called into torch;
//   4. other: anything else. Label: the innermost user frame (a library's or the standard
//      library's frames are folded under the user's line that called them, as call sites are:
//      reader/python_stack_text.h), else the innermost frame.
// Independently, a stack with a frame of the compilers (reader/warmup_names.h,
// isWarmupPythonFrame) is warm-up evidence, as a torch.compile host range is; its part is still
// the one the rules above give.
// A "user frame" is one of neither torch, a loader, an installed package nor the standard library.
// Labels are reader/python_stack_text.h's frameText: "train.py:42 in train".
#pragma once

#include "analysis/analysis_result.h"
#include "reader/python_stack_text.h"

#include <string>
#include <string_view>
#include <vector>

namespace gapwatch::analysis {

struct PythonStackClass {
  HostPart part = HostPart::kUnknown;  // unknown: a stack with no readable frame
  std::string label;                   // "" for unknown
  bool warmup = false;
  std::string warmup_frame;  // the outermost compiler frame ("_dynamo/convert_frame.py:1064 in __call__")
};

// A frame of PyTorch itself (torch/ as a package directory), data loading included.
bool isTorchFrame(const PythonFrame& frame);
// A frame of data loading: torch/utils/data/, or a file that contains one of `loader_patterns`.
bool isInputPipelineFrame(const PythonFrame& frame, const std::vector<std::string>& loader_patterns);
// A frame of checkpoint reading or writing: torch/serialization.py, torch/distributed/checkpoint/.
bool isCheckpointFrame(const PythonFrame& frame);

// The class of a stack's frames, innermost first.
PythonStackClass classifyPythonFrames(const std::vector<PythonFrame>& frames,
                                      const std::vector<std::string>& loader_patterns);
// The same for a STRING_KIND_PYTHON_STACK text.
PythonStackClass classifyPythonStack(std::string_view stack_text, const std::vector<std::string>& loader_patterns);

}  // namespace gapwatch::analysis
