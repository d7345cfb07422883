// tests/unit/first_pass_test.cpp: the window's first pass and steady state (steady_state.h,
// DeviceIdleStage's marks), the GPU-bound bottleneck and the kernel kinds it reads from names
// (kernel_class.h), through the whole engine and the diagnosis on event streams made by hand.

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/diagnosis.h"
#include "analysis/kernel_class.h"
#include "analysis/steady_state.h"

#include <algorithm>
#include <string>

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

constexpr uint32_t kMain = 100;
constexpr uint32_t kGemm = 1;
constexpr uint32_t kFirstLoaded = 10;  // kernels 10.. are loaded lazily, one each

bool has(const ProcessAnalysis& p, const char* id) {
  return std::any_of(p.findings.begin(), p.findings.end(), [&](const Finding& f) { return f.id == id; });
}

// `lazy` kernels each behind a `load_ms` first launch (module loading), starting at `lazy_at`,
// `lazy_every` apart; around them, FP32 GEMMs queued ahead so the device stays busy: 400 us
// each, launched 20 us apart while the queue is shorter than 4.
struct Run {
  uint64_t window_ms = 1000;
  int lazy = 10;
  uint64_t lazy_at_ms = 0, lazy_every_ms = 12, load_ms = 10;
};

ProcessAnalysis feedRun(const Run& r) {
  EngineFeed feed;
  feed.name(v1::STRING_KIND_KERNEL_NAME, kGemm, "volta_sgemm_128x64_nn");
  for (int i = 0; i < r.lazy; ++i) {
    feed.name(v1::STRING_KIND_KERNEL_NAME, kFirstLoaded + i, "void lazy_kernel_" + std::to_string(i) + "<float>(float*)");
  }
  uint64_t host = 0, device_free = 0, id = 1;
  int next_lazy = 0;
  while (host < ms(r.window_ms)) {
    const bool load = next_lazy < r.lazy && host >= ms(r.lazy_at_ms + r.lazy_every_ms * next_lazy);
    if (load) {
      // The thread sits in the launch call while the module loads; the device drains meanwhile.
      const uint64_t exit = host + ms(r.load_ms);
      feed.add(launch(kMain, host, exit, id));
      DeviceActivityEvent k = kernelAt(std::max(exit + us(5), device_free), std::max(exit + us(5), device_free) + us(30), id);
      k.name_id = kFirstLoaded + next_lazy++;
      feed.add(k);
      device_free = k.end_ns;
      host = exit + us(2);
      ++id;
      continue;
    }
    feed.add(launch(kMain, host, host + us(5), id));
    const uint64_t start = std::max(host + us(8), device_free);
    DeviceActivityEvent k = kernelAt(start, start + us(400), id);
    k.name_id = kGemm;
    feed.add(k);
    device_free = k.end_ns;
    ++id;
    // Keep up to three kernels queued: the host waits (in no call the device sees) until then.
    host = std::max(host + us(20), device_free > us(1200) ? device_free - us(1200) : 0);
  }
  ProcessAnalysis p = feed.run();
  diagnose(p, AnalysisOptions{});
  return p;
}

}  // namespace

TEST_CASE("one-time costs at the start are a first pass, and the steady state after it is GPU-bound") {
  // The mixture-of-experts trace in small: ten slow first launches (100 ms of lazy loading) in the
  // first 120 ms, then FP32 GEMMs back to back for the rest of the second.
  const ProcessAnalysis p = feedRun(Run{});
  REQUIRE(p.devices.size() == 1);
  const DeviceAnalysis& d = p.devices[0];
  REQUIRE(d.first_pass);
  // It ends with the last slow launch's gap (the tenth, at 108 ms, 10 ms long).
  CHECK(d.first_pass->window_end_ns > ms(118));
  CHECK(d.first_pass->window_end_ns < ms(120));
  // Nine loads inside the window (the first comes before any work), each idle but for the 1.2 ms
  // the device drains its queue: 9 x 8.8 ms.
  CHECK(d.first_pass->one_time_ns >= ms(79));
  const DeviceAnalysis steady = steadyStateOf(d);
  CHECK(steady.idle_fraction < 0.02);
  CHECK(steady.one_time_ns == 0);
  // The one-time launch time feeds no steady-state finding: not launch overhead, not warm-up.
  CHECK_FALSE(has(p, kFindingLaunchOverhead));
  CHECK_FALSE(has(p, kFindingSlowLaunchCalls));
  CHECK_FALSE(has(p, kFindingWarmup));
  REQUIRE(has(p, kFindingFirstPass));
  CHECK(p.findings.back().id == kFindingFirstPass);
  CHECK(p.findings.back().title == "in the first pass: one-time set-up (lazy kernel loading)");
  CHECK(p.findings.back().fix.find("CUDA_MODULE_LOADING=EAGER") != std::string::npos);
  // GPU-bound, said, with the lever of FP32 GEMMs.
  REQUIRE(p.bottleneck);
  CHECK(p.bottleneck->id == kFindingGpuBound);
  CHECK(p.bottleneck->idle_ns == 0);
  CHECK(p.bottleneck->title.find("FP32 GEMMs without tensor cores") != std::string::npos);
  CHECK(p.bottleneck->fix.find("set_float32_matmul_precision") != std::string::npos);
  const std::string v = verdict(p);
  CHECK(v.find("a first pass of ") != std::string::npos);
  CHECK(v.find("(lazy kernel loading)), then steady state ") != std::string::npos);
  CHECK(v.find("the GPU is the bottleneck: busy time mostly FP32 GEMMs") != std::string::npos);
}

TEST_CASE("one-time evidence all through the run is no first pass: it recurs") {
  // A new kernel loaded every 100 ms through the whole second (recompiles, new shapes).
  Run r;
  r.lazy = 10;
  r.lazy_at_ms = 50;
  r.lazy_every_ms = 100;
  const ProcessAnalysis p = feedRun(r);
  CHECK_FALSE(p.devices[0].first_pass);
  CHECK_FALSE(has(p, kFindingFirstPass));
  CHECK(has(p, kFindingWarmup));
  CHECK(verdict(p).find("first pass") == std::string::npos);
}

TEST_CASE("one slow first launch late in a long GPU-bound run does not make a first pass of what came before") {
  Run r;
  r.lazy = 1;
  r.lazy_at_ms = 800;
  const ProcessAnalysis p = feedRun(r);
  CHECK_FALSE(p.devices[0].first_pass);
}

TEST_CASE("a first pass at 40% of the window still is one, when the run settles after it") {
  Run r;
  r.lazy = 10;
  r.lazy_at_ms = 300;
  r.lazy_every_ms = 10;
  const ProcessAnalysis p = feedRun(r);
  REQUIRE(p.devices[0].first_pass);
  CHECK(p.devices[0].first_pass->window_end_ns > ms(400));
  CHECK(p.devices[0].first_pass->window_end_ns < ms(402));
}

TEST_CASE("kernel kinds come from the names' conventions, and a name without one is other") {
  CHECK(classifyKernel("volta_sgemm_128x64_nn") == KernelClass::kGemmFp32);
  CHECK(classifyKernel("ampere_sgemm_64x32_sliced1x4_tn") == KernelClass::kGemmFp32);
  CHECK(classifyKernel("cutlass_80_simt_sgemm_128x128_8x4_nn_align1") == KernelClass::kGemmFp32);
  CHECK(classifyKernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn") == KernelClass::kGemmTensorCore);
  CHECK(classifyKernel("volta_h884gemm_64x64_ldg8_nn") == KernelClass::kGemmTensorCore);
  CHECK(classifyKernel("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16") == KernelClass::kGemmTensorCore);
  CHECK(classifyKernel("nvjet_hsh_128x256_64x4_1x2_h_bz_coopA_NTN") == KernelClass::kGemmTensorCore);
  CHECK(classifyKernel("gemmk1_kernel<int, float, 256, 5>") == KernelClass::kGemmOther);
  CHECK(classifyKernel("volta_scudnn_128x64_relu_interior_nn_v1") == KernelClass::kConvolution);
  CHECK(classifyKernel("sm86_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc") == KernelClass::kConvolution);
  CHECK(classifyKernel("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128>>") ==
        KernelClass::kAttentionFused);
  CHECK(classifyKernel("void (anonymous namespace)::softmax_warp_forward<float, float, float, 9, false>") ==
        KernelClass::kSoftmax);
  CHECK(classifyKernel("void at::native::batch_norm_collect_statistics_kernel<float>") == KernelClass::kNormalization);
  CHECK(classifyKernel("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>") ==
        KernelClass::kElementwise);
  CHECK(classifyKernel("triton_poi_fused_add_relu_0") == KernelClass::kElementwise);
  CHECK(classifyKernel("void at::native::reduce_kernel<512, 1, ReduceOp<float>>") == KernelClass::kReduction);
  CHECK(classifyKernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)") ==
        KernelClass::kCommunication);
  CHECK(classifyKernel("my_custom_op_kernel") == KernelClass::kOther);
  CHECK(std::string(kernelClassKey(KernelClass::kGemmFp32)) == "fp32_gemm");
  CHECK(kernelClassLever(KernelClass::kSoftmax, false).find("scaled_dot_product_attention") != std::string::npos);
}

TEST_CASE("host time inside a compiled region every step is the host between kernels, with the compiled fix") {
  // Inductor's Python wrapper: each step, 2 ms of host time inside "Torch-Compiled Region: 0/0"
  // before its Triton kernels launch back to back. Not warm-up (the region wraps every call),
  // not "use torch.compile" (it is on).
  constexpr uint32_t kRegion = 50, kTriton = 51;
  EngineFeed feed;
  feed.name(v1::STRING_KIND_KERNEL_NAME, kTriton, "triton_poi_fused_add_mul_relu_0")
      .name(v1::STRING_KIND_HOST_RANGE_NAME, kRegion, "Torch-Compiled Region: 0/0");
  uint64_t t = 0, id = 1;
  for (int step = 0; step < 50; ++step) {
    const uint64_t region_start = t;
    t += ms(2);  // the wrapper's Python: asserts, allocations, argument handling
    for (int k = 0; k < 10; ++k, ++id) {
      feed.add(launch(kMain, t, t + us(5), id));
      DeviceActivityEvent e = kernelAt(t + us(8), t + us(208), id);
      e.name_id = kTriton;
      feed.add(e);
      t += us(200);
    }
    feed.add(hostRange(v1::HOST_RANGE_KIND_ANNOTATION, kMain, region_start, t, kRegion));
  }
  ProcessAnalysis p = feed.run();
  diagnose(p, AnalysisOptions{});
  CHECK_FALSE(p.devices[0].first_pass);
  CHECK_FALSE(has(p, kFindingWarmup));
  REQUIRE_FALSE(p.findings.empty());
  const Finding& f = p.findings.front();
  CHECK(f.id == kFindingHostOther);
  CHECK(f.fix.find("already runs compiled") != std::string::npos);
  CHECK(f.fix.find("reduce-overhead") != std::string::npos);
  CHECK(f.fix.find("cpp_wrapper") != std::string::npos);
  bool says_compiled = false;
  for (const auto& [name, value] : f.evidence) says_compiled = says_compiled || name == "already compiled";
  CHECK(says_compiled);
}
