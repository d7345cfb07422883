#!/usr/bin/env python3
"""Generated PyTorch profiler (Kineto) traces of the five patterns an expert read differently from
gapwatch (issue 35), each with the verdict it must get (tests/unit/kineto_patterns_test.py):

- first_pass_fp32_gemm: a first step spent in one-time set-up (a 600 ms cudaFree inside the first
  aten::linear, the first launch of each kernel taking 4-14 ms while CUDA loads its module lazily),
  then a GPU-bound steady state of FP32 SGEMMs: the verdict says first pass, then GPU-bound on FP32
  GEMMs with TF32 / bf16 as the lever;
- copy_behind_stream_wait: on ROCm, a 60-byte host-to-device hipMemcpyWithStream held 493 ms right
  after a hipStreamWaitEvent whose event no call in the trace recorded (work from before the
  window): a dependency, not a copy to pin nor a one-time stall;
- copy_behind_named_event: the same on CUDA, two pipeline stages on two GPUs of one process, with the
  trace's "Stream Wait Event" record (enable_cuda_sync_events) naming the event's record call and
  stream: the dependency names them;
- all_to_all_8_ranks/rank-N: a mixture-of-experts step on 8 ranks, two all_to_alls per layer, rank 7
  reaching each about 2 ms after the others (its expert routing is slower); every rank's SendRecv
  kernel ends when rank 7's data arrives, so rank 0's run ~2 ms and rank 7's ~10 us: rank 0 is
  waiting for rank 7, not communicating;
- sync_storm: detection post-processing, a Python loop with aten::nonzero and .item() (a small
  device-to-host copy and a cudaStreamSynchronize each) per candidate box, 1,200 syncs a step: a
  sync storm, with its lines and the fix for data-dependent shapes (not CUDA graphs);
- compiled_region_host: a model already under torch.compile whose Inductor wrapper (Python: its
  assert_size_stride checks and Triton launches through cuLaunchKernel) holds four ~14.5 ms gaps a
  step inside "Torch-Compiled Region: 0/0": host-bound, and the fix is what comes after compiling
  (mode="reduce-overhead", cpp_wrapper), not torch.compile.

Shaped as Kineto writes traces, through the corpus's Trace (../kineto/make_corpus.py): the CPU block
first, then the device block with each GPU record near its call. Deterministic (fixed seeds).

    make_patterns.py OUT_DIR     # writes OUT_DIR/<pattern>.json.gz and OUT_DIR/all_to_all_8_ranks/
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kineto"))
from make_corpus import Trace, annotation  # noqa: E402

SGEMM = ["ampere_sgemm_128x64_nn", "ampere_sgemm_64x64_tn"]
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >"
RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar>"


def python_function(t, name, start, end):
    t.cpu.append({"ph": "X", "cat": "python_function", "name": name, "pid": t.pid, "tid": t.tid,
                  "ts": t.t(start), "dur": t.d(max(end - start, 1)), "args": {}})


def first_pass_fp32_gemm(out):
    t = Trace(31, "NVIDIA A100-SXM4-80GB", compute=(8, 0))
    loaded = set()

    def launch(kernel, dur):
        if kernel not in loaded:  # lazy loading: the first launch of a kernel loads its module
            loaded.add(kernel)
            start, corr = t.call("cudaLaunchKernel", t.rng.uniform(4_000, 14_000), stream=7, kernel=kernel)
            t.record("kernel", kernel, 7, dur, t.host + 2, corr)
        else:
            t.launch(kernel, 7, dur)

    for step in range(12):
        t.step_begin()
        t.host += t.rng.uniform(100, 300)
        t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 60, 8 << 20)
        for layer in range(16):
            op_start = t.host
            t.host += t.rng.uniform(5, 15)
            if step == 0 and layer == 0:
                t.call("cudaFree", 600_000)  # cuBLAS' first-call set-up inside the first linear
            launch(SGEMM[layer % 2], t.rng.uniform(700, 1_300))
            launch(ADD, t.rng.uniform(15, 30))
            launch(RELU, t.rng.uniform(15, 30))
            t.op("aten::linear", op_start, t.host)
            t.host += t.rng.uniform(3, 10)
        t.copy("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync", 7, 2, 4)
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("first_pass_fp32_gemm", out)


def copy_behind_stream_wait(out):
    t = Trace(32, "AMD Instinct MI250X", compute=(9, 0), rocm=True)
    gemm = "Cijk_Ailk_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0_GRVW4"
    for step in range(6):
        t.step_begin()
        t.host += t.rng.uniform(200, 500)
        for layer in range(12):
            t.launch(gemm, 0, t.rng.uniform(150, 300), "hipLaunchKernel")
            t.launch(ADD, 0, t.rng.uniform(10, 20), "hipLaunchKernel")
            t.host += t.rng.uniform(5, 15)
        if step == 2:
            # The stream waits for an event no call in the trace recorded, then a 60-byte copy on it
            # blocks until that event completes: 493 ms of a dependency.
            t.call("hipStreamWaitEvent", 6)
            start, corr = t.call("hipMemcpyWithStream", 8, stream=0, nbytes=60, kernel="Memcpy HtoD")
            end = t.record("gpu_memcpy", "Memcpy HtoD (Host -> Device)", 0, 2, start + 493_000, corr)
            t.dev[max(i for i, e in enumerate(t.dev) if e["cat"] == "cuda_runtime")]["dur"] = t.d(end + 1 - start)
            t.host = end + 1
        t.copy("Memcpy DtoH (Device -> Host)", "hipMemcpyWithStream", 0, 3, 4, blocking=True)
        t.step_end()
    t.write("copy_behind_stream_wait", out)


def copy_behind_named_event(out):
    # Pipeline stages on two GPUs of one process: device 0's stream waits for an event recorded on
    # device 1's stream 20 after a 400 ms stage, then a small copy on it blocks until then. The trace
    # was written with enable_cuda_sync_events: its "Stream Wait Event" record names the event's
    # record call (wait_on_cuda_event_record_corr_id) and stream (wait_on_stream).
    t = Trace(36, "NVIDIA H100 80GB HBM3", compute=(9, 0))
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    for step in range(5):
        t.step_begin()
        t.host += t.rng.uniform(100, 300)
        for layer in range(10):
            t.launch(gemm, 7, t.rng.uniform(200, 400))
            t.host += t.rng.uniform(5, 15)
        start, corr = t.call("cudaLaunchKernel", 6)
        stage = 400_000 if step == 2 else t.rng.uniform(1_000, 2_000)
        stage_end = t.record("kernel", gemm, 20, stage, start + 3, corr, {"device": 1})
        _, record = t.call("cudaEventRecord", 3)
        _, wait = t.call("cudaStreamWaitEvent", 3)
        t.dev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7,
                      "ts": t.t(t.host - 3), "dur": t.d(1),
                      "args": {"cuda_sync_kind": "Stream Wait Event", "stream": 7, "device": 0, "correlation": wait,
                               "wait_on_stream": 20, "wait_on_cuda_event_record_corr_id": record,
                               "wait_on_cuda_event_id": 5}})
        start, corr = t.call("cudaMemcpy", 6)
        end = t.record("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 7, 2, max(start + 3, stage_end + 2), corr,
                       {"bytes": 256})
        t.dev[max(i for i, e in enumerate(t.dev) if e["cat"] == "cuda_runtime")]["dur"] = t.d(end + 1 - start)
        t.host = end + 1
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("copy_behind_named_event", out)


def all_to_all_8_ranks(out):
    directory = os.path.join(out, "all_to_all_8_ranks")
    os.makedirs(directory, exist_ok=True)
    ranks = [Trace(40 + r, "NVIDIA H100 80GB HBM3", compute=(9, 0), rank=r, world=8) for r in range(8)]
    for t in ranks:
        t.pid, t.tid = 5000 + t.meta["distributedInfo"]["rank"], 5000 + t.meta["distributedInfo"]["rank"]
    expert = "void moe::topk_gating_softmax<float, 8, 64>"
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    sendrecv = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
    clock = 0.0  # the job's shared clock: every rank's host starts each collective from it
    for step in range(4):
        for t in ranks:
            t.host = max(t.host, clock)
            t.step_begin()
        for layer in range(6):
            for phase in ("dispatch", "combine"):
                arrive = []
                for r, t in enumerate(ranks):
                    t.host += t.rng.uniform(20, 40)
                    t.launch(gemm if phase == "combine" else expert, 7, t.rng.uniform(60, 120))
                    # Rank 7 routes its tokens on the host more slowly: ~2 ms late to each all_to_all.
                    t.host += 2_100 + t.rng.uniform(-80, 80) if r == 7 else t.rng.uniform(10, 30)
                    arrive.append(t.host)
                last = max(arrive)
                for r, t in enumerate(ranks):
                    op_start = t.host
                    start, corr = t.call("cudaLaunchKernel", t.rng.uniform(5, 9), stream=13, kernel=sendrecv)
                    begin = max(start + 3, t.free.get(13, 0.0) + 1)
                    t.record("kernel", sendrecv, 13, last + 10 + t.rng.uniform(0, 3) - begin, begin, corr)
                    t.cpu.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": t.pid,
                                  "tid": t.tid, "ts": t.t(op_start), "dur": t.d(t.host - op_start),
                                  "args": {"Collective name": "all_to_all", "dtype": "BFloat16",
                                           "In msg nelems": 8 * 65536, "Out msg nelems": 8 * 65536,
                                           "Group size": 8, "Process Group Name": "0"}})
                    t.op("c10d::alltoall_", op_start, t.host)
                clock = last
        for t in ranks:
            t.sync("cudaStreamSynchronize", 13)
            t.step_end()
        clock = max(t.host for t in ranks)
    for r, t in enumerate(ranks):
        t.write("rank-%d" % r, directory)


def sync_storm(out):
    t = Trace(34, "NVIDIA A100-SXM4-80GB", compute=(8, 0))
    conv = "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16"
    nonzero = "void at::native::(anonymous namespace)::write_indices<long, int>"
    for step in range(4):
        t.step_begin()
        t.host += t.rng.uniform(200, 400)
        t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 80, 6 << 20)
        for layer in range(40):
            start = t.host
            t.launch(conv, 7, t.rng.uniform(150, 250))
            t.op("aten::conv2d", start, t.host)
            t.host += t.rng.uniform(4, 10)
        loop = t.host
        for box in range(600):
            body = t.host
            t.host += t.rng.uniform(8, 20)  # the loop's Python
            start = t.host
            t.launch(nonzero, 7, t.rng.uniform(2, 4))
            t.copy("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync", 7, 1.5, 8)
            t.sync("cudaStreamSynchronize", 7)
            t.op("aten::nonzero", start, t.host)
            t.host += t.rng.uniform(5, 12)
            start = t.host
            t.copy("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync", 7, 1.5, 4)
            t.sync("cudaStreamSynchronize", 7)
            t.op("aten::_local_scalar_dense", start, t.host)
            t.op("aten::item", start, t.host)
            python_function(t, "detect/postprocess.py(57): filter_boxes", body, t.host)
        python_function(t, "detect/postprocess.py(41): postprocess", loop, t.host)
        t.step_end()
    t.write("sync_storm", out)


def compiled_region_host(out):
    t = Trace(35, "NVIDIA H100 80GB HBM3", compute=(9, 0))
    triton = ["triton_poi_fused_add_mul_0", "triton_red_fused__softmax_1", "triton_per_fused_native_layer_norm_2"]
    mm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    wrapper = "/tmp/torchinductor_user/3f/c3fqk2ablb7.py(1021): call"
    for step in range(5):
        t.step_begin()
        t.host += t.rng.uniform(100, 300)
        t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 40, 4 << 20)
        region = t.host
        for block in range(4):
            # The wrapper's Python: ~14.5 ms of size and stride checks between one block's launches.
            checks = t.host
            for _ in range(60):
                s = t.host
                t.host += t.rng.uniform(200, 280)
                python_function(t, "<built-in function assert_size_stride>", s, t.host)
            python_function(t, "/tmp/torchinductor_user/3f/c3fqk2ablb7.py(640): _check_inputs", checks, t.host)
            for k in range(30):
                t.launch(mm, 7, t.rng.uniform(30, 60))
                t.launch(t.rng.choice(triton), 7, t.rng.uniform(5, 15), "cuLaunchKernel", "cuda_driver")
                t.host += t.rng.uniform(2, 6)
        python_function(t, wrapper, region, t.host)
        t.op("CompiledFunction", region, t.host)
        annotation(t, "Torch-Compiled Region: 0/0", region, t.host)
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("compiled_region_host", out)


PATTERNS = [first_pass_fp32_gemm, copy_behind_stream_wait, copy_behind_named_event, all_to_all_8_ranks, sync_storm,
            compiled_region_host]

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        sys.exit(2)
    os.makedirs(sys.argv[1], exist_ok=True)
    for pattern in PATTERNS:
        pattern(sys.argv[1])
        print("wrote " + pattern.__name__)
