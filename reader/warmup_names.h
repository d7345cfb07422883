// reader/warmup_names.h: which names are evidence of compilation or first-time set-up.
//
// A long one-off gap (a "stall") is a shape, not a cause: its idle goes to the cause its evidence
// shows, like any gap's (docs/analysis.md, "Stalls and warm-up"). Warm-up is one such cause, and
// only with evidence of compiling or doing something for the first time. This file is the one list
// of that evidence by name: for the engine (analysis/device_idle.cpp), which measures per gap how
// much of the launching thread's time was inside it, and for the Kineto import, which sends the
// compilers' Python frames as host ranges (kineto_host_ranges.h):
//   - CUDA calls that load code or create library state: cuModuleLoad*, cuLibraryLoad*,
//     cudaLibraryLoad*, cuLinkCreate/Complete, nvrtc*, cuDNN / cuBLAS handle creation and cuDNN's
//     algorithm search (cudnnFind*), CUDA graph capture and instantiation;
//   - host ranges (ops, annotations, Python frames) of torch.compile and its parts: Dynamo's
//     frame conversion and its timed phases ("(dynamo_timed)"), AOT autograd, Inductor's
//     compile_fx, Triton's compiler and autotuner (not "Torch-Compiled Region" nor "CompiledFunction",
//     which wrap every call of compiled code)
//     (host time inside them during a long gap is their first call compiling: a compiled region's
//     steady-state calls only launch);
//   - a kernel's first launch on a device when the launch call itself held the gap (lazy module
//     loading, a PTX JIT), decided by the engine from the kernel's name;
//   - a sampled Python stack (a live recording's PythonSample) with a frame of the compilers:
//     Dynamo, Inductor, Triton's compiler and autotuner, AOT autograd, CUDA graph capture. Not the
//     frames that stay on the stack while compiled code runs (Dynamo's eval_frame.py and
//     external_utils.py, Inductor's runtime and compiled-graph wrappers, Triton's jit.py launch
//     path): a sample under those alone is the compiled code's own host time.
// Everything else in a long gap (a data wait, ops, Python, a sync) is what it is.
#pragma once

#include <string_view>

namespace gapwatch {

// A CUDA (or HIP) API name that loads code, builds a library's state or captures a graph.
bool isWarmupApiName(std::string_view api_name);
// A host range name (an op, an annotation, a Python frame "file.py(12): fn") of compilation.
bool isWarmupHostRangeName(std::string_view name);
// A frame of a sampled Python stack (its file as the interpreter has it, and its function) that
// only runs while compiling or autotuning.
bool isWarmupPythonFrame(std::string_view file, std::string_view function);

}  // namespace gapwatch
