// tests/unit/python_frame_rules_test.cpp: a sampled Python stack's part, label and warm-up flag by
// the frame rules of analysis/python_frame_rules.h (docs/analysis.md, "Host time"), on stacks laid
// out as CPython has them: installed packages under site-packages, the user's files elsewhere.

#include <catch2/catch.hpp>

#include "analysis/python_frame_rules.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;

const std::string kSite = "/venv/lib/python3.11/site-packages/";
const std::string kStdlib = "/usr/lib/python3.11/";
const std::string kUser = "/home/ana/proj/";

// A STRING_KIND_PYTHON_STACK text, innermost frame first.
std::string stack(std::initializer_list<PythonFrame> frames) {
  std::string text;
  for (const PythonFrame& f : frames) text += f.function + "\t" + f.file + "\t" + std::to_string(f.line) + "\n";
  return text;
}

PythonStackClass classify(const std::string& text,
                          const std::vector<std::string>& loaders = AnalysisOptions::defaultInputPipelineFrames()) {
  return classifyPythonStack(text, loaders);
}

}  // namespace

TEST_CASE("a DataLoader wait is input pipeline, named by the user's line that asked for the batch") {
  const PythonStackClass c = classify(stack({{"get", kStdlib + "queue.py", 180},
                                             {"_get_data", kSite + "torch/utils/data/dataloader.py", 1133},
                                             {"__next__", kSite + "torch/utils/data/dataloader.py", 631},
                                             {"train", kUser + "train.py", 42},
                                             {"<module>", kUser + "train.py", 90}}));
  CHECK(c.part == HostPart::kInputPipeline);
  CHECK(c.label == "proj/train.py:42 in train");
  CHECK_FALSE(c.warmup);
}

TEST_CASE("the user's dataset code called by the loader is still input pipeline, named where the loop asked") {
  const PythonStackClass c = classify(stack({{"__getitem__", kUser + "data.py", 17},
                                             {"fetch", kSite + "torch/utils/data/_utils/fetch.py", 52},
                                             {"__next__", kSite + "torch/utils/data/dataloader.py", 631},
                                             {"train", kUser + "train.py", 42}}));
  CHECK(c.part == HostPart::kInputPipeline);
  CHECK(c.label == "proj/train.py:42 in train");
}

TEST_CASE("the default loader patterns take Hugging Face datasets, and a settable list replaces them") {
  const std::string text = stack({{"__getitem__", kSite + "datasets/arrow_dataset.py", 2800},
                                  {"next_batch", kUser + "loop.py", 12}});
  const PythonStackClass by_default = classify(text);
  CHECK(by_default.part == HostPart::kInputPipeline);
  CHECK(by_default.label == "proj/loop.py:12 in next_batch");

  const PythonStackClass without = classify(text, {"/mydata/"});
  CHECK(without.part == HostPart::kOther);
  CHECK(without.label == "proj/loop.py:12 in next_batch");

  const PythonStackClass custom = classify(stack({{"read", "/srv/mydata/reader.py", 5}, {"step", kUser + "t.py", 3}}),
                                           {"/mydata/"});
  CHECK(custom.part == HostPart::kInputPipeline);
  CHECK(custom.label == "proj/t.py:3 in step");
}

TEST_CASE("with no user frame outside it the input pipeline is named by its outermost loader frame") {
  const PythonStackClass c = classify(stack({{"_next_data", kSite + "torch/utils/data/dataloader.py", 1300},
                                             {"__next__", kSite + "torch/utils/data/dataloader.py", 631},
                                             {"fit_loop", kSite + "lightning/fit.py", 20}}));
  CHECK(c.part == HostPart::kInputPipeline);
  CHECK(c.label == "data/dataloader.py:631 in __next__");
}

TEST_CASE("torch innermost is framework, named by the user's line that called into torch") {
  const PythonStackClass c = classify(stack({{"forward", kSite + "torch/nn/modules/linear.py", 116},
                                             {"_call_impl", kSite + "torch/nn/modules/module.py", 1527},
                                             {"forward", kSite + "transformers/models/llama/modeling_llama.py", 300},
                                             {"forward", kUser + "model.py", 30},
                                             {"train", kUser + "train.py", 50}}));
  CHECK(c.part == HostPart::kFramework);
  CHECK(c.label == "proj/model.py:30 in forward");
}

TEST_CASE("framework without a user frame is named by the innermost frame outside torch") {
  const PythonStackClass c = classify(stack({{"step", kSite + "torch/optim/adam.py", 210},
                                             {"optimizer_step", kSite + "lightning/loops.py", 77},
                                             {"run", kSite + "lightning/fit.py", 20}}));
  CHECK(c.part == HostPart::kFramework);
  CHECK(c.label == "lightning/loops.py:77 in optimizer_step");
}

TEST_CASE("torch.save and torch.load are checkpoint I/O: other, named checkpoint and the user's line") {
  const PythonStackClass c = classify(stack({{"write", kSite + "torch/serialization.py", 850},
                                             {"save", kSite + "torch/serialization.py", 620},
                                             {"save_checkpoint", kUser + "train.py", 70}}));
  CHECK(c.part == HostPart::kOther);
  CHECK(c.label == "checkpoint: proj/train.py:70 in save_checkpoint");
  CHECK_FALSE(c.warmup);
}

TEST_CASE("Dynamo compiling a frame is warm-up, and its part is still the frame rules' own") {
  const PythonStackClass c = classify(stack({{"step", kSite + "torch/_dynamo/symbolic_convert.py", 900},
                                             {"_compile", kSite + "torch/_dynamo/convert_frame.py", 650},
                                             {"_fn", kSite + "torch/_dynamo/eval_frame.py", 400},
                                             {"train", kUser + "train.py", 44}}));
  CHECK(c.warmup);
  CHECK(c.warmup_frame == "_dynamo/convert_frame.py:650 in _compile");
  CHECK(c.part == HostPart::kFramework);
  CHECK(c.label == "proj/train.py:44 in train");
}

TEST_CASE("compiled code running is not warm-up: eval_frame, Triton's launch path, Inductor's runtime") {
  const PythonStackClass eager_between_graphs = classify(stack({{"forward", kUser + "model.py", 30},
                                                                {"_fn", kSite + "torch/_dynamo/eval_frame.py", 400},
                                                                {"train", kUser + "train.py", 44}}));
  CHECK_FALSE(eager_between_graphs.warmup);
  CHECK(eager_between_graphs.part == HostPart::kOther);
  CHECK(eager_between_graphs.label == "proj/model.py:30 in forward");

  const PythonStackClass launching = classify(
      stack({{"run", kSite + "triton/runtime/jit.py", 520},
             {"run", kSite + "torch/_inductor/runtime/triton_heuristics.py", 900},
             {"call", "/tmp/torchinductor_ana/xy/cxyz.py", 80},
             {"__call__", kSite + "torch/_inductor/output_code.py", 460},
             {"_fn", kSite + "torch/_dynamo/eval_frame.py", 400},
             {"train", kUser + "train.py", 44}}));
  CHECK_FALSE(launching.warmup);
}

TEST_CASE("autotuning is warm-up: Triton's autotuner and Inductor's benchmarking of configs") {
  const PythonStackClass triton = classify(stack({{"do_bench", kSite + "triton/testing.py", 110},
                                                  {"_bench", kSite + "triton/runtime/autotuner.py", 100},
                                                  {"run", kSite + "triton/runtime/autotuner.py", 140},
                                                  {"layer", kUser + "kernels.py", 9}}));
  CHECK(triton.warmup);
  CHECK(triton.warmup_frame == "runtime/autotuner.py:140 in run");
  CHECK(triton.part == HostPart::kOther);
  CHECK(triton.label == "proj/kernels.py:9 in layer");

  const PythonStackClass inductor = classify(
      stack({{"benchmark_all_configs", kSite + "torch/_inductor/runtime/triton_heuristics.py", 700},
             {"autotune_to_one_config", kSite + "torch/_inductor/runtime/triton_heuristics.py", 760},
             {"run", kSite + "torch/_inductor/runtime/triton_heuristics.py", 900},
             {"train", kUser + "train.py", 44}}));
  CHECK(inductor.warmup);
  CHECK(inductor.warmup_frame == "runtime/triton_heuristics.py:760 in autotune_to_one_config");
  CHECK(inductor.part == HostPart::kFramework);
}

TEST_CASE("other host work is named by the innermost user frame, with library frames folded under it") {
  const PythonStackClass own = classify(stack({{"compute_metrics", kUser + "metrics.py", 17},
                                               {"train", kUser + "train.py", 60}}));
  CHECK(own.part == HostPart::kOther);
  CHECK(own.label == "proj/metrics.py:17 in compute_metrics");

  const PythonStackClass via_library = classify(stack({{"dumps", kStdlib + "json/__init__.py", 231},
                                                       {"log", kUser + "logger.py", 9},
                                                       {"train", kUser + "train.py", 61}}));
  CHECK(via_library.part == HostPart::kOther);
  CHECK(via_library.label == "proj/logger.py:9 in log");
}

TEST_CASE("a stack with no readable frame is unknown") {
  CHECK(classify("").part == HostPart::kUnknown);
  CHECK(classify("...\t\t0\n").part == HostPart::kUnknown);
  CHECK(classify("not a frame\n").label.empty());
}

TEST_CASE("torch is a package directory, not a name that ends in torch") {
  CHECK(isTorchFrame({"f", kSite + "torch/nn/functional.py", 1}));
  CHECK(isTorchFrame({"f", "/opt/pytorch/torch/_tensor.py", 1}));
  CHECK(isTorchFrame({"f", "torch/_tensor.py", 1}));
  CHECK_FALSE(isTorchFrame({"f", kSite + "functorch/x.py", 1}));
  CHECK_FALSE(isTorchFrame({"f", "/home/ana/mytorch/x.py", 1}));
  CHECK(isInputPipelineFrame({"f", kSite + "torch/utils/data/sampler.py", 1}, {}));
  CHECK(isCheckpointFrame({"f", kSite + "torch/distributed/checkpoint/state_dict_saver.py", 1}));
}
