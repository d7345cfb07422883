// analysis/findings.h: each finding's evidence and fix, built from the numbers of one process
// and the split of its idle time (IdleExplanation). The diagnosis (diagnosis.h) decides which
// findings a process gets; these say what each one shows and what to change, a fix that follows
// from the finding's own evidence (docs/analysis.md, "A fix that follows from the evidence").
// Internal to analysis/.
#pragma once

#include "analysis/diagnosis.h"
#include "analysis/steady_state.h"

namespace gapwatch::analysis::findings {

// "2.70x", "14x": a speed-up bound as reports print it.
std::string formatSpeedup(double factor);

// The host_cpu time of one HostPart that is neither a stall nor a sync point's: input_pipeline,
// framework_overhead, host_other or host_unknown.
Finding hostPart(const ProcessAnalysis& p, const IdleExplanation& x, const AnalysisOptions& o, HostPart part);
Finding pageableCopies(const ProcessAnalysis& p, const IdleExplanation& x);
Finding launchOverhead(const ProcessAnalysis& p, const IdleExplanation& x, const AnalysisOptions& o,
                       const DiagnosisThresholds& t);
Finding syncPoints(const ProcessAnalysis& p, const IdleExplanation& x);
// exposure_only: no NCCL host idle passed the threshold; the kernels' share of busy time did.
Finding nccl(const ProcessAnalysis& p, const IdleExplanation& x, bool exposure_only);
Finding warmup(const IdleExplanation& x);
Finding cudaApi(const ProcessAnalysis& p, const IdleExplanation& x);
Finding dependency(const ProcessAnalysis& p, const IdleExplanation& x);
// The host running the model slower than the GPU, as one cause: framework, other and unknown host
// time and launch overhead (`launch_ns`: the part of it that passed its own rule), titled by the
// largest, with the split and one fix chosen by the evidence (docs/analysis.md, "One cause, one
// finding").
Finding hostBound(const ProcessAnalysis& p, const IdleExplanation& x, const AnalysisOptions& o,
                  const DiagnosisThresholds& t, uint64_t launch_ns);
// The profiler's own cost in a trace whose host events are dense (a note: it explains no idle).
Finding profilerCost(const ProcessAnalysis& p, const IdleExplanation& x, const DiagnosisThresholds& t);
// Launch-call time in gaps of kLongGapNs or more that is neither warm-up nor a sync point's.
Finding slowLaunchCalls(const ProcessAnalysis& p, const IdleExplanation& x);
// The steady state is GPU-bound: what its busy time goes to, from kernel names, and the usual lever.
// `x`: the steady state's (idle_ns its own).
Finding gpuBound(const ProcessAnalysis& p, const IdleExplanation& x);
// The first pass's one-time costs: `p` the whole process, `x` the steady state's explanation.
Finding firstPass(const ProcessAnalysis& p, const FirstPassTotals& totals, const IdleExplanation& x);

}  // namespace gapwatch::analysis::findings
