"""Synthetic PyTorch profiler (Kineto) traces, for checking report --hta against a live HTA beyond the
six shared traces.

Each trace is one rank of a made-up training loop, shaped like the real ones (the CPU-side block of
ProfilerStep annotations first, then the device block with each GPU record near its runtime call,
as Kineto writes them), with what HTA's rules turn on varied by a seed:
- 0, 1 or several ProfilerSteps, and work launched in one step that runs in the next;
- integer microseconds (older Kineto) or floats with three decimals and baseTimeNanoseconds
  (newer Kineto, which HTA rounds);
- several streams, back-to-back and overlapping records, idle gaps short and long;
- kernels, NCCL kernels, copies, memsets, CUDA sync records, a graph launch (several kernels, one
  correlation id), kernels with no runtime call in the trace;
- the four runtime calls HTA's launch statistics take, and others it does not.
- with float times, on some seeds, records shorter than 1 us (newer Kineto's ns timestamps), which
  can round to an end before their start: HTA keeps their length of -1 (docs/hta-parity.md, rule 4);
- graph launches whose kernels all start before the call (the GPU clock ahead of the CPU's);
- launches through the driver API (cuLaunchKernel, category cuda_driver: Triton, torch.compile);
- every fourth seed (seed % 4 == 2) a ROCm trace: the calls named as HIP names them
  (hipLaunchKernel, hipExtModuleLaunchKernel, hipMemcpyAsync, ...), no cuda_sync records, and the
  args as Kineto's ROCm back ends write them (libkineto/src/RoctracerActivity_inl.h and
  RocprofActivity_inl.h): "cid", a call's stream as a pointer string, a GPU record's "kind" as a
  word; a copy's size as the call's "size" string (roctracer, seed % 8 == 2) or as the call's
  "bytes" string and the record's "bytes" number (rocprofiler, seed % 8 == 6).

    kineto_trace_generator.py SEED OUT.json[.gz]
"""
import gzip
import json
import random
import sys

COMPUTE = ["volta_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4>()",
           "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn", "void cunn_SoftMaxForward<4>()"]
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"


def generate(seed):
    rng = random.Random(seed)
    rocm = seed % 4 == 2
    roctracer = seed % 8 == 2  # else Kineto's rocprofiler back end
    floats = rng.random() < 0.5
    short_records = floats and rng.random() < 0.6
    steps = rng.choice([0, 1, 2, 3, 5])
    streams = rng.sample([7, 13, 20, 24], rng.randint(1, 3))
    pid, tid = 4000 + seed, 4000 + seed
    cpu, dev = [], []
    correlation = 100
    # Integer microseconds, plus thousandths when the trace writes floats.
    t0 = 1_700_000_000_000 if floats else 1_695_835_542_000_000

    def when(us, frac):
        return round(us + frac / 1000.0, 3) if floats else us

    def frac():
        return rng.randint(0, 999) if floats else 0

    host = 0
    free = {s: 0 for s in streams}
    short = {s: False for s in streams}
    step_bounds = []
    loops = max(steps, 1) + rng.randint(0, 1)
    for step in range(loops):
        step_start = host
        for _ in range(rng.randint(15, 40)):
            host += rng.randint(1, 40)
            kind = rng.choices(["kernel", "exc", "memcpy", "memset", "nccl", "graph", "sync", "other", "orphan", "driver"],
                               [40, 5, 8, 5, 6, 2, 4, 5, 3, 4])[0]
            stream = rng.choice(streams)
            correlation += 1
            call_dur = rng.choice([rng.randint(2, 20), rng.randint(2, 20), rng.randint(30, 120)])
            names = {"kernel": "cudaLaunchKernel", "exc": "cudaLaunchKernelExC", "memcpy": "cudaMemcpyAsync",
                     "memset": "cudaMemsetAsync", "nccl": "cudaLaunchKernel", "graph": "cudaGraphLaunch",
                     "sync": "cudaStreamSynchronize", "other": "cudaEventRecord", "orphan": None,
                     "driver": "cuLaunchKernel"}
            if rocm:
                names.update({"kernel": "hipLaunchKernel", "exc": "hipExtModuleLaunchKernel", "memcpy": "hipMemcpyAsync",
                              "memset": "hipMemsetAsync", "nccl": "hipLaunchKernel", "graph": "hipGraphLaunch",
                              "sync": "hipStreamSynchronize", "other": "hipEventRecord", "driver": "hipModuleLaunchKernel"})
            call_ts, call_frac = t0 + host, frac()
            size = rng.randint(4, 1 << 20)
            if names[kind] is not None:
                cat = "cuda_driver" if kind == "driver" and not rocm else "cuda_runtime"
                args = {"cbid": 211, "correlation": correlation, "External id": correlation}
                if rocm:
                    args = {"External id": correlation, "cid": 42, "correlation": correlation}
                    if kind in ("kernel", "exc", "nccl", "driver") and roctracer:
                        args.update({"stream": "0x%x" % (0x55d3c8a0e000 + stream), "grid": [304, 1, 1], "block": [256, 1, 1]})
                    elif kind == "memcpy":
                        args.update({"stream": "0x%x" % (0x55d3c8a0e000 + stream), "src": "0x7f2b0ee69af8",
                                     "dst": "0x7f2c0e75690e", "size" if roctracer else "bytes": str(size), "kind": "1"})
                dev.append({"ph": "X", "cat": cat, "name": names[kind], "pid": pid, "tid": tid,
                            "ts": when(call_ts, call_frac), "dur": when(call_dur, 0), "args": args})
            host += call_dur
            if kind == "other":
                continue
            if kind == "sync":
                end = max(free[stream], host)
                if rocm:  # no cuda_sync records: CUPTI's, not roctracer's
                    host = max(host, end + 1)
                    continue
                dev.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": stream,
                            "ts": when(t0 + host - call_dur + 1, 0), "dur": when(max(1, end - (host - call_dur + 1)), 0),
                            "args": {"cuda_sync_kind": "Stream Sync", "stream": stream, "device": 0,
                                     "correlation": correlation}})
                host = max(host, end + 1)
                continue
            pieces = rng.randint(2, 4) if kind == "graph" else 1
            # Kernels of a graph that all start before its call's timestamp (clock skew).
            ahead_at = call_ts - t0 - 3 * pieces - rng.randint(1, 4)
            ahead = kind == "graph" and rng.random() < 0.5 and ahead_at > free[stream]
            for piece in range(pieces):
                gap = rng.choice([0, 1, rng.randint(2, 29), rng.randint(30, 400)])
                start = max(free[stream] + gap, host + rng.randint(0, 50))
                if rng.random() < 0.05 and free[stream] > 2 and not short[stream]:
                    start = free[stream] - 1  # overlaps the previous record on its stream
                dur = rng.randint(1, 300)
                dur_frac = 0
                if ahead:
                    start, dur = ahead_at + 3 * piece, 2
                if short_records and rng.random() < 0.3:
                    dur, dur_frac = 0, rng.randint(1, 999)  # under a microsecond
                if kind in ("memcpy",):
                    name, cat = rng.choice(["Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)"]), "gpu_memcpy"
                    if rocm:
                        name = name.replace("Pinned", "Host").replace("Pageable", "Host")
                        for call in reversed(dev):  # its call's hipMemcpyKind: 1 HtoD, 2 DtoH
                            if call["cat"] == "cuda_runtime" and call["args"]["correlation"] == correlation:
                                call["args"]["kind"] = "1" if "HtoD" in name else "2"
                                break
                elif kind == "memset":
                    name, cat = "Memset (Device)", "gpu_memset"
                elif kind == "nccl":
                    name, cat = NCCL, "kernel"
                else:
                    name, cat = rng.choice(COMPUTE), "kernel"
                # An orphan's correlation matches no runtime call (HTA drops it).
                corr = correlation + 1_000_000 if kind == "orphan" else correlation
                record = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream,
                          "ts": when(t0 + start, frac()), "dur": when(dur, dur_frac),
                          "args": {"device": 0, "stream": stream, "correlation": corr, "External id": corr}}
                if rocm:
                    record["args"]["kind"] = {"kernel": "Dispatch Kernel", "gpu_memset": "Device"}.get(cat) or name.split()[1]
                if cat == "gpu_memcpy" and not (rocm and roctracer):
                    record["args"]["bytes"] = size
                    if rocm:
                        record["args"]["memory bandwidth (GB/s)"] = round(size / max(dur, 1) / 1000.0, 3)
                dev.append(record)
                # A stream's records are written in time order, as CUPTI delivers them: one under a
                # microsecond ends within its start's microsecond, so the next starts after it.
                # (Where two records of a stream round to the same start, HTA's order between them
                # is its sort's, not their time's: docs/hta-parity.md, rule 4.)
                short[stream] = dur_frac != 0
                free[stream] = max(free[stream], start + dur + (1 if short[stream] else 0))
        step_bounds.append((step_start, host))
        host += rng.randint(0, 500)
    for number, (start, end) in enumerate(step_bounds[:steps]):
        cpu.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number + 10}", "pid": pid, "tid": tid,
                    "ts": when(t0 + start, 0), "dur": when(max(1, end - start), 0),
                    "args": {"External id": number + 1}})
    # Kineto writes a GPU record a little before its runtime call in the device block.
    for i in range(len(dev) - 1):
        if dev[i]["cat"] == "cuda_runtime" and dev[i + 1]["cat"] != "cuda_runtime" and rng.random() < 0.7:
            dev[i], dev[i + 1] = dev[i + 1], dev[i]
    trace = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": seed % 4, "world_size": 4},
             "traceEvents": cpu + dev}
    if floats:
        trace["baseTimeNanoseconds"] = 1711964646000000000
    return trace


def main(argv):
    seed, out = int(argv[1]), argv[2]
    data = json.dumps(generate(seed)).encode()
    with (gzip.open(out, "wb") if out.endswith(".gz") else open(out, "wb")) as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv)
