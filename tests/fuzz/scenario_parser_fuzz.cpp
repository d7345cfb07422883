// tests/fuzz/scenario_parser_fuzz.cpp: libFuzzer target for gapwatch-sim's scenario file parser
// (tests/simcuda/workload/json_reader.* and scenario.*: parse_scenario on the file's text).
//
// Every input must either parse into a scenario or be refused with an InputError, the one kind of
// error gapwatch-sim's main() turns into its one-line message; any other exception escapes and
// aborts, which libFuzzer reports. A parsed scenario must keep the promises the runner relies on
// (scenario.h): references resolve, counts are non-negative, every op's step window is sane.

#include "fuzz_check.h"

#include "json_reader.h"
#include "scenario.h"

#include <string>

namespace {

using namespace gapwatch_sim;

void checkOps(const Scenario& s, const std::vector<Op>& ops, int depth) {
  FUZZ_CHECK(depth < 10000, "op lists nest without end");
  for (const Op& op : ops) {
    FUZZ_CHECK(op.count >= 0, "a negative count");
    FUZZ_CHECK(op.kernel == -1 || (op.kernel >= 0 && std::size_t(op.kernel) < s.kernels.size()), "a kernel index out of range");
    FUZZ_CHECK(op.kind != OpKind::Kernel || op.kernel >= 0, "a kernel op without its kernel");
    FUZZ_CHECK(op.stream >= 0 && std::size_t(op.stream) <= s.streams.size(), "a stream index out of range");
    FUZZ_CHECK(op.event >= -1 && (op.event == -1 || std::size_t(op.event) < s.events.size()), "an event index out of range");
    FUZZ_CHECK(op.every >= 1 && op.from_step >= 0 && op.from_step <= op.until_step, "a bad step window");
    FUZZ_CHECK(op.duration_us >= 0 && op.jitter_us >= 0, "a negative duration");
    checkOps(s, op.body, depth + 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Scenario s;
  try {
    s = parse_scenario(text, "fuzz.json");
  } catch (const InputError& e) {
    FUZZ_CHECK(std::string(e.what()).size() > 0, "an InputError says what is wrong");
    return 0;
  }
  FUZZ_CHECK(s.format == kScenarioFormat, "a parsed scenario of another format");
  FUZZ_CHECK(s.processes >= 1 && s.processes <= kMaxProcesses, "processes out of range");
  FUZZ_CHECK(s.steps >= 0, "negative steps");
  FUZZ_CHECK(!s.threads.empty(), "a scenario without a thread");
  FUZZ_CHECK(s.kernels.size() <= kMaxKernels, "too many kernels");
  for (const KernelDef& k : s.kernels) {
    FUZZ_CHECK(k.load_phase >= -1 && k.load_phase <= int(s.recompiles.size()), "a kernel loaded by no phase");
  }
  for (const RankOverride& o : s.rank_overrides) FUZZ_CHECK(o.rank >= 0 && o.rank < s.processes, "an override of no rank");
  if (s.warmup) checkOps(s, s.warmup->ops, 0);
  for (const Phase& p : s.recompiles) {
    FUZZ_CHECK(p.at_step >= 0 && p.at_step < s.steps, "a recompile outside the steps");
    checkOps(s, p.ops, 0);
  }
  for (const ThreadPlan& t : s.threads) checkOps(s, t.ops, 0);
  return 0;
}
