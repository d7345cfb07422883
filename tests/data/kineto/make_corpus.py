#!/usr/bin/env python3
"""The generated traces of the Kineto corpus (issue 20), one per family of trace that real users bring
and the shared real traces do not cover, shaped as Kineto writes them (a CPU block of ProfilerStep
annotations and ops first, then the device block with each GPU record near its call):

- rocm_mi300_train: PyTorch on ROCm (Kineto's roctracer back end): HIP call names
  (hipLaunchKernel, hipExtModuleLaunchKernel for hipBLASLt/Tensile kernels, hipMemcpyAsync,
  hipMemcpyWithStream for .item(), hipStreamSynchronize), RCCL kernels, and the args as that back
  end writes them (libkineto/src/RoctracerActivity_inl.h): a call's stream as a pointer string
  ("0x7f..."), a copy call's "size", "kind", "src" and "dst" as strings, grid and block as arrays;
  a GPU record's "kind" as a word ("Dispatch Kernel", "HtoD") and no bytes on it;
- triton_driver_launches: torch.compile: Triton kernels launched with cuLaunchKernel (category
  cuda_driver) between aten's cudaLaunchKernel launches;
- ns_timestamps: newer Kineto's nanosecond timestamps (three decimals), with many kernels under a
  microsecond, some of which round to an end before their start (docs/hta-parity.md, rule 4);
- cuda_graph_server: an inference server (vLLM-like) replaying CUDA graphs: one cudaGraphLaunch
  runs 200-400 kernels that all carry its correlation id, sampling on the host between steps;
- b200_train: a training step on a B200 (compute capability 10.0: nvjet and CUTLASS sm100 kernels),
  with NCCL all-reduces.

These are generated, not recorded: what they hold is this script's model of each family. HTA's
numbers for them (hta-reference/*.json) are HTA's own, computed by the HTA scripts/setup.sh installs:

    python3 tests/data/kineto/make_corpus.py            # writes the traces here
    scripts/regenerate-hta-corpus.sh                     # then HTA's references (needs build/hta-venv)

Deterministic: the same files every run (fixed seeds, gzip without a timestamp).
"""
import gzip
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class Trace:
    """One rank's trace: CPU-side events and device-block events, times in microseconds."""

    def __init__(self, seed, device_name, compute=(9, 0), ns=False, rank=0, world=1, rocm=False):
        self.rng = random.Random(seed)
        self.ns = ns
        self.rocm = rocm
        self.pid, self.tid = 1200 + seed, 1200 + seed
        self.cpu, self.dev = [], []
        self.correlation = 1000
        self.t0 = 1_733_400_000_000 if ns else 1_733_400_000_000_000 // 1000 * 1000
        self.host = 0.0
        self.free = {}
        self.steps = []
        self.meta = {"schemaVersion": 1,
                     "deviceProperties": [{"id": 0, "name": device_name, "totalGlobalMem": 205_000_000_000,
                                           "computeMajor": compute[0], "computeMinor": compute[1]}],
                     "distributedInfo": {"backend": "rccl" if rocm else "nccl", "rank": rank, "world_size": world}}

    def t(self, us):
        """A time as the trace writes it: whole us, or ns as three decimals."""
        return round(self.t0 + us, 3) if self.ns else int(round(self.t0 + us))

    def d(self, us):
        return round(us, 3) if self.ns else max(1, int(round(us)))

    def call(self, name, dur, cat="cuda_runtime", stream=0, nbytes=None, kernel=None):
        self.correlation += 1
        start = self.host
        args = {"cbid": 211, "correlation": self.correlation, "External id": self.correlation}
        if self.rocm:
            args = self.hip_call_args(name, stream, nbytes, kernel)
        self.dev.append({"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.tid,
                         "ts": self.t(start), "dur": self.d(dur), "args": args})
        self.host += dur
        return start, self.correlation

    def hip_call_args(self, name, stream, nbytes, kernel):
        """A HIP call's args as Kineto's roctracer back end writes them: "cid" for cbid, pointers
        (the stream, a copy's ends) as "0x..." strings, a copy's size and hipMemcpyKind as strings."""
        args = {"External id": self.correlation, "cid": 42, "correlation": self.correlation}
        queue = "0x%x" % (0x55d3c8a0e000 + 0x40 * stream)
        if nbytes is not None:
            if name in ("hipMemcpyAsync", "hipMemcpyWithStream"):
                args["stream"] = queue
            args.update({"src": "0x7f2b%08x" % self.rng.randrange(1 << 28), "dst": "0x7f2c%08x" % self.rng.randrange(1 << 28),
                         "size": str(nbytes), "kind": "1" if "HtoD" in kernel else "2"})
        elif kernel is not None:
            args.update({"kernel": kernel, "stream": queue, "grid": [self.rng.choice([64, 304, 1216]), 1, 1],
                         "block": [256, 1, 1], "shared memory": self.rng.choice([0, 16384])})
        return args

    def record(self, cat, name, stream, dur, after_us, correlation, extra=None):
        """A GPU record on `stream`, no earlier than `after_us` nor the stream's last end."""
        start = max(after_us, self.free.get(stream, 0.0) + self.rng.choice([0.0, 0.5, 1.0, 2.0, 3.0]))
        if not self.ns:
            start, dur = float(int(start) + 1), float(max(1, int(round(dur))))
        args = {"device": 0, "stream": stream, "correlation": correlation, "External id": correlation}
        if self.rocm:
            args["kind"] = {"kernel": "Dispatch Kernel", "gpu_memset": "Device"}.get(cat) or name.split()[1]
        args.update(extra or {})
        self.dev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
                         "ts": self.t(start), "dur": self.d(dur), "args": args})
        # A record under a microsecond ends inside its start's microsecond: the next one on the
        # stream starts after it, as CUPTI delivers them in time order.
        self.free[stream] = start + dur + (1.0 if self.ns and dur < 1 else 0.0)
        return start + dur

    def launch(self, kernel, stream, dur, call="cudaLaunchKernel", cat="cuda_runtime"):
        start, corr = self.call(call, self.rng.uniform(3, 9), cat, stream=stream, kernel=kernel)
        return self.record("kernel", kernel, stream, dur, start + 2, corr)

    def copy(self, name, call, stream, dur, nbytes, blocking=False):
        start, corr = self.call(call, self.rng.uniform(4, 12), stream=stream, nbytes=nbytes, kernel=name)
        # roctracer's GPU copy records carry no size: it is on the call ("size").
        end = self.record("gpu_memcpy", name, stream, dur, start + 2, corr, None if self.rocm else {"bytes": nbytes})
        if blocking:  # a synchronous copy's call returns when the copy is done
            call_index = max(i for i, e in enumerate(self.dev) if e["cat"] == "cuda_runtime")
            self.dev[call_index]["dur"] = self.d(end + 1 - start)
            self.host = end + 1
        return end

    def sync(self, call, stream):
        start, corr = self.call(call, 1)
        wait_to = max(self.free.get(stream, 0.0), self.host) + 2
        self.dev[-1]["dur"] = self.d(wait_to - start)
        self.host = wait_to
        if not self.rocm:
            self.dev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": stream,
                             "ts": self.t(start + 1), "dur": self.d(wait_to - start - 2),
                             "args": {"cuda_sync_kind": "Stream Sync", "stream": stream, "device": 0,
                                      "correlation": corr}})

    def step_begin(self):
        self.steps.append([self.host, None])

    def step_end(self):
        self.steps[-1][1] = self.host

    def op(self, name, start, end):
        self.cpu.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": self.pid, "tid": self.tid,
                         "ts": self.t(start), "dur": self.d(max(end - start, 1)), "args": {}})

    def write(self, name, directory=HERE):
        for number, (start, end) in enumerate(self.steps):
            self.cpu.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number + 3}",
                             "pid": self.pid, "tid": self.tid, "ts": self.t(start), "dur": self.d(end - start),
                             "args": {"External id": number + 1}})
        self.cpu.sort(key=lambda e: e["ts"])
        # Kineto writes a GPU record a little before its call now and then (CUPTI's buffers).
        for i in range(len(self.dev) - 1):
            a, b = self.dev[i], self.dev[i + 1]
            if a["cat"] in ("cuda_runtime", "cuda_driver") and b["cat"] == "kernel" and self.rng.random() < 0.3:
                self.dev[i], self.dev[i + 1] = b, a
        trace = dict(self.meta)
        trace["traceEvents"] = self.cpu + self.dev
        if self.ns:
            trace["baseTimeNanoseconds"] = 1_733_400_000_000_000_000 - self.t0 * 1000
        data = json.dumps(trace).encode()
        with open(os.path.join(directory, name + ".json.gz"), "wb") as f:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
                z.write(data)


def rocm_mi300_train():
    t = Trace(11, "AMD Instinct MI300X", compute=(9, 4), rank=1, world=8, rocm=True)
    gemms = ["Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI32x32x8x1_SN_1LDSB1_GRVW8_K1_MIWT2_2",
             "Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1_SN_1LDSB0_GRVW4"]
    elementwise = ["void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16> >",
                   "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float>"]
    for _ in range(5):
        t.step_begin()
        t.host += t.rng.uniform(300, 900)  # the data loader
        t.copy("Memcpy HtoD (Host -> Device)", "hipMemcpyAsync", 0, 80, 8 << 20)
        for layer in range(24):
            start = t.host
            t.launch(t.rng.choice(gemms), 0, t.rng.uniform(40, 160), "hipExtModuleLaunchKernel")
            t.launch(t.rng.choice(elementwise), 0, t.rng.uniform(4, 20), "hipLaunchKernel")
            t.op("aten::linear", start, t.host)
            t.host += t.rng.uniform(2, 30)
        t.launch("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", 1, t.rng.uniform(300, 700),
                 "hipLaunchKernel")
        # loss.item(): on ROCm, PyTorch's memcpy_and_sync is one hipMemcpyWithStream (no stream
        # synchronize after it, as on CUDA); a hipStreamSynchronize every other step (an explicit
        # torch.cuda.synchronize() for timing).
        t.copy("Memcpy DtoH (Device -> Host)", "hipMemcpyWithStream", 0, 3, 4, blocking=True)
        if len(t.steps) % 2 == 0:
            t.sync("hipStreamSynchronize", 0)
        t.step_end()
    t.write("rocm_mi300_train")


def triton_driver_launches():
    t = Trace(12, "NVIDIA H100 80GB HBM3", compute=(9, 0))
    triton = ["triton_poi_fused_add_mul_0", "triton_red_fused__softmax_1", "triton_per_fused_native_layer_norm_2",
              "triton_tem_fused_mm_3"]
    for _ in range(4):
        t.step_begin()
        t.host += t.rng.uniform(100, 400)
        for block in range(30):
            t.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
                     7, t.rng.uniform(30, 90))
            for k in range(3):
                t.launch(t.rng.choice(triton), 7, t.rng.uniform(3, 25), "cuLaunchKernel", "cuda_driver")
            t.host += t.rng.uniform(1, 6)
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("triton_driver_launches")


def ns_timestamps():
    t = Trace(13, "NVIDIA H100 80GB HBM3", compute=(9, 0), ns=True)
    for _ in range(4):
        t.step_begin()
        t.host += t.rng.uniform(150, 600)
        for _ in range(120):
            tiny = t.rng.random() < 0.45
            t.launch("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >" if tiny
                     else "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x64x32_warpgroupsize1x1x1",
                     7, t.rng.uniform(0.3, 0.95) if tiny else t.rng.uniform(5, 60))
            t.host += t.rng.uniform(0.2, 8)
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("ns_timestamps")


def cuda_graph_server():
    t = Trace(14, "NVIDIA H100 80GB HBM3", compute=(9, 0))
    names = ["void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>",
             "void vllm::rms_norm_kernel<c10::BFloat16>", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64",
             "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>",
             "void vllm::rotary_embedding_kernel<c10::BFloat16, true>"]
    for _ in range(6):  # decode steps
        t.step_begin()
        t.host += t.rng.uniform(200, 700)  # scheduling and sampling on the host
        t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 2, 4096)
        start, corr = t.call("cudaGraphLaunch", t.rng.uniform(8, 20))
        after = start + 3
        for _ in range(t.rng.randint(200, 400)):
            after = t.record("kernel", t.rng.choice(names), 7, t.rng.uniform(2, 18), after, corr)
        t.copy("Memcpy DtoH (Device -> Pinned)", "cudaMemcpyAsync", 7, 2, 1024)
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("cuda_graph_server")


def b200_train():
    t = Trace(15, "NVIDIA B200", compute=(10, 0), rank=3, world=8)
    gemms = ["nvjet_tst_128x256_64x4_2x1_v_bz_coopB_TNT",
             "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
             "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm100TmaUmmaWarpSpecialized<3, 2, 2>>>>"]
    for _ in range(4):
        t.step_begin()
        t.host += t.rng.uniform(200, 800)
        t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 40, 16 << 20)
        for layer in range(32):
            t.launch(t.rng.choice(gemms), 7, t.rng.uniform(20, 80), "cudaLaunchKernelExC")
            t.launch("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", 7,
                     t.rng.uniform(3, 9))
            t.host += t.rng.uniform(1, 12)
            if layer % 8 == 7:
                t.launch("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 13,
                         t.rng.uniform(150, 400))
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("b200_train")


def annotation(t, name, start, end):
    t.cpu.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": t.pid, "tid": t.tid,
                  "ts": t.t(start), "dur": t.d(max(end - start, 1)), "args": {}})


def short_training_step(t, loader_wait_us, compile_us=0.0):
    """One step of a small training job with a multi-process DataLoader, as torch.profiler's usual
    schedule(wait=1, warmup=1, active=3) records it: the main thread waits in the loader's
    __next__ for the workers' batch, copies it, runs forward and backward (ops, each launching a
    few kernels), the optimizer, and loss.item(). With `compile_us`, the forward's first call
    compiles first (torch.compile: Dynamo's and Inductor's annotations around the host time)."""
    t.step_begin()
    start = t.host
    t.host += loader_wait_us
    annotation(t, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", start, t.host)
    t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 120, 12 << 20)
    if compile_us:
        region = t.host
        t.host += compile_us * 0.2
        annotation(t, "_compile.compile_inner (dynamo_timed)", region, t.host)
        inner = t.host
        t.host += compile_us * 0.8
        annotation(t, "compile_fx.<locals>.fw_compiler_base (dynamo_timed)", inner, t.host)
        annotation(t, "Torch-Compiled Region: 0/0", region, t.host)
    for phase, count in (("aten::conv2d", 40), ("autograd::engine::evaluate_function: ConvolutionBackward0", 40)):
        for _ in range(count):
            op_start = t.host
            t.host += t.rng.uniform(8, 20)  # the op's own host work before it launches
            t.launch("sm86_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize128x128x16", 7,
                     t.rng.uniform(150, 400))
            t.launch("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >", 7,
                     t.rng.uniform(10, 30))
            t.op(phase, op_start, t.host)
            t.host += t.rng.uniform(2, 10)
    op_start = t.host
    for _ in range(20):
        t.launch("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<SGD>", 7, t.rng.uniform(20, 60))
    t.op("Optimizer.step#SGD.step", op_start, t.host)
    t.copy("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync", 7, 2, 4)
    t.sync("cudaStreamSynchronize", 7)
    t.step_end()


def short_data_bound():
    # Three steps whose data waits (40-60 ms) are several times longer than any other gap: every
    # wait is a "stall" by length, and the input pipeline by evidence.
    t = Trace(16, "NVIDIA GeForce RTX 3090", compute=(8, 6))
    for _ in range(3):
        short_training_step(t, t.rng.uniform(40_000, 60_000))
    t.write("short_data_bound")


def short_compile_warmup():
    # The same job with torch.compile: its first profiled step compiles for 400 ms, and the workers
    # keep up (short waits), so the long gap is warm-up by its evidence.
    t = Trace(17, "NVIDIA GeForce RTX 3090", compute=(8, 6))
    short_training_step(t, t.rng.uniform(300, 800), compile_us=400_000)
    for _ in range(2):
        short_training_step(t, t.rng.uniform(300, 800))
    t.write("short_compile_warmup")


def graph_decode():
    # vLLM decode with CUDA graphs, written with ns timestamps: one cudaGraphLaunch per step runs
    # hundreds of sub-microsecond to few-microsecond kernels that start before the launch call
    # returns, and the host works for ~60 ms between steps, so the device is idle about 99 %
    # of the time (a real trace of this shape once drifted 0.7 points from HTA's idle).
    t = Trace(18, "NVIDIA H100 80GB HBM3", compute=(9, 0), ns=True)
    names = ["void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>",
             "void vllm::rms_norm_kernel<c10::BFloat16>", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64",
             "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>"]
    for _ in range(6):
        t.step_begin()
        t.host += t.rng.uniform(50_000, 70_000)  # the scheduler, sampling, detokenising
        t.copy("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 7, 1.5, 2048)
        start, corr = t.call("cudaGraphLaunch", t.rng.uniform(20, 40))
        after = start + t.rng.uniform(1.5, 4)  # the graph's first kernel starts inside the call
        for _ in range(t.rng.randint(250, 450)):
            after = t.record("kernel", t.rng.choice(names), 7, t.rng.uniform(0.4, 1.6), after, corr)
        t.copy("Memcpy DtoH (Device -> Pinned)", "cudaMemcpyAsync", 7, 1.2, 512)
        t.sync("cudaStreamSynchronize", 7)
        t.step_end()
    t.write("graph_decode")


FAMILIES = [rocm_mi300_train, triton_driver_launches, ns_timestamps, cuda_graph_server, b200_train,
            short_data_bound, short_compile_warmup, graph_decode]

if __name__ == "__main__":
    for family in FAMILIES:
        family()
        print(f"wrote {family.__name__}.json.gz")
    sys.exit(0)
