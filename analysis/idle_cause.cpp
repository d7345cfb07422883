// analysis/idle_cause.cpp: the names of the idle causes, as reports and JSON print them.
// They are the ground truth's keys (docs/scenarios.md), so the two can be compared by name.
#include "analysis/analysis_result.h"

namespace gapwatch::analysis {

const char* idleCauseName(IdleCause cause) {
  switch (cause) {
    case IdleCause::kHostCpu:
      return "host_cpu";
    case IdleCause::kLaunchOverhead:
      return "launch_overhead";
    case IdleCause::kSyncCopy:
      return "sync_copy";
    case IdleCause::kCudaApi:
      return "cuda_api";
    case IdleCause::kNcclHost:
      return "nccl_host";
    case IdleCause::kDependency:
      return "dependency";
  }
  return "?";
}

const char* hostPartName(HostPart part) {
  switch (part) {
    case HostPart::kInputPipeline:
      return "input_pipeline";
    case HostPart::kFramework:
      return "framework";
    case HostPart::kOther:
      return "other";
    case HostPart::kUnknown:
      return "unknown";
  }
  return "?";
}

const char* hostEvidenceName(HostEvidence evidence) {
  switch (evidence) {
    case HostEvidence::kNone:
      return "none";
    case HostEvidence::kTraceHostEvents:
      return "trace_host_events";
    case HostEvidence::kPythonSamples:
      return "python_samples";
  }
  return "?";
}

}  // namespace gapwatch::analysis
