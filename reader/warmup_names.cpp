// reader/warmup_names.cpp: see warmup_names.h.
#include "reader/warmup_names.h"

#include <array>

namespace gapwatch {
namespace {

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool isWarmupApiName(std::string_view name) {
  // Module and library loading (the driver's and the runtime's names; HIP's for ROCm traces).
  static constexpr std::array<std::string_view, 12> kPrefixes = {
      "cuModuleLoad", "cuLibraryLoad", "cudaLibraryLoad", "cuLinkCreate", "cuLinkComplete", "nvrtc",
      "hipModuleLoad", "cudnnCreate", "cublasCreate", "cublasLtCreate", "cudnnFind", "cudaGraphInstantiate"};
  for (std::string_view p : kPrefixes) {
    if (startsWith(name, p)) return true;
  }
  // Graph capture: a step's work recorded once, then replayed.
  return name == "cudaStreamBeginCapture" || name == "cudaStreamEndCapture" || name == "cuStreamBeginCapture" ||
         name == "cuStreamEndCapture" || name == "cuGraphInstantiate" || name == "cuGraphInstantiateWithFlags" ||
         name == "hipGraphInstantiate";
}

bool isWarmupHostRangeName(std::string_view name) {
  // Annotations and ops that torch.compile opens around its own work. Not "Torch-Compiled Region",
  // "CompiledFunction" nor "TorchDynamo Cache Lookup": they wrap every call of compiled code, and
  // Inductor's Python wrapper runs inside them each step (a real trace: 1,231 assert_size_stride
  // calls in each of four 14.5 ms gaps, all inside the region), so they say the code is compiled,
  // not that it is compiling (analysis/findings.cpp reads them so).
  static constexpr std::array<std::string_view, 9> kParts = {
      "(dynamo_timed)", "compile_fx", "inductor_compile", "aot_autograd", "call_user_compiler", "cudnn_autotune",
      "triton_autotune", "CachingAutotuner", "cuda_graph_capture"};
  for (std::string_view p : kParts) {
    if (contains(name, p)) return true;
  }
  // Python frames of the compilers ("path/torch/_dynamo/convert_frame.py(123): _compile").
  // Not torch/_dynamo/eval_frame.py: it wraps every call of a compiled function, compiling or not.
  return contains(name, "torch/_dynamo/convert_frame.py") || contains(name, "torch/_dynamo/output_graph.py") ||
         contains(name, "torch/_inductor/compile_fx.py") || contains(name, "torch/_functorch/aot_autograd.py") ||
         contains(name, "triton/compiler/compiler.py") || contains(name, "triton/runtime/autotuner.py") ||
         contains(name, "torch/cuda/graphs.py");
}

bool isWarmupPythonFrame(std::string_view file, std::string_view function) {
  // A sample is taken only after the thread has been out of CUDA calls for a while, so a frame
  // that merely wraps compiled code (and all the eager Python between its graphs) must not count:
  // those are left out by name, and every compiling path keeps some frame below that does count.
  if (contains(file, "torch/_dynamo/")) {
    return !endsWith(file, "/eval_frame.py") && !endsWith(file, "/external_utils.py");
  }
  if (contains(file, "torch/_inductor/")) {
    if (contains(file, "torch/_inductor/runtime/")) {
      // The compiled kernels' launchers; only their autotuning is warm-up.
      return contains(function, "autotune") || contains(function, "bench") || contains(function, "precompile");
    }
    if (endsWith(file, "/output_code.py") || endsWith(file, "/codecache.py") || endsWith(file, "/cudagraph_trees.py") ||
        endsWith(file, "/_inductor/utils.py")) {
      return false;  // a compiled graph's call, its CUDA graph replay, helpers of both paths
    }
    return !(endsWith(file, "/compile_fx.py") && function == "run");  // older releases' call wrappers
  }
  if (contains(file, "triton/compiler/")) return true;
  if (contains(file, "triton/runtime/")) return !endsWith(file, "/jit.py") && !endsWith(file, "/driver.py");
  if (endsWith(file, "triton/testing.py")) return contains(function, "bench");
  return contains(file, "torch/_functorch/aot_autograd.py") || contains(file, "torch/cuda/graphs.py");
}

}  // namespace gapwatch
