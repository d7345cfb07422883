"""tests/data/kineto-expert/look.py: an independent look at a Kineto trace, written apart from
gapwatch's code (plain json, no gapwatch module): device idle, what the launching thread was in during
long gaps, long runtime calls, kernel kinds, syncs. Its output is the evidence of each verdict file.
Usage: python3 look.py TRACE.json.gz..."""
import collections
import gzip
import json
import sys

def load(path):
    with gzip.open(path) as f:
        t = json.load(f)
    return t["traceEvents"] if isinstance(t, dict) else t

def main(path):
    ev = [e for e in load(path) if e.get("ph") == "X"]
    cat = lambda e: (e.get("cat") or "").lower()
    gpu = [e for e in ev if cat(e) in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")]
    rt = [e for e in ev if cat(e) in ("cuda_runtime", "cuda_driver", "runtime")]
    ops = [e for e in ev if cat(e) in ("cpu_op", "operator")]
    ann = [e for e in ev if cat(e) in ("user_annotation", "gpu_user_annotation") and not e["name"].startswith("ProfilerStep")]
    py = [e for e in ev if cat(e) in ("python_function", "python")]
    gpu.sort(key=lambda e: e["ts"])
    t0 = gpu[0]["ts"]; end = max(e["ts"] + e["dur"] for e in gpu)
    busy = 0; cur_s = None; cur_e = None; gaps = []
    for e in gpu:
        s, t = e["ts"], e["ts"] + e["dur"]
        if cur_e is None: cur_s, cur_e = s, t; continue
        if s > cur_e:
            busy += cur_e - cur_s; gaps.append((cur_e, s, e)); cur_s, cur_e = s, t
        else: cur_e = max(cur_e, t)
    busy += cur_e - cur_s
    window = end - t0; idle = window - busy
    print(f"{path.split('/')[-1]}: window {window/1e3:.1f} ms, busy {busy/1e3:.1f} ms, idle {100*idle/window:.1f}%")
    # gaps by length
    long = [g for g in gaps if g[1] - g[0] >= 1000]
    short = [g for g in gaps if g[1] - g[0] < 1000]
    print(f"  gaps {len(gaps)}: >=1ms {len(long)} = {sum(b-a for a,b,_ in long)/1e3:.1f} ms; <1ms {sum(b-a for a,b,_ in short)/1e3:.1f} ms")
    # idle over time: first 20% vs rest
    fifth = t0 + window * 0.2
    early = sum(min(b, fifth) - a for a, b, _ in gaps if a < fifth)
    print(f"  idle in first 20% of window: {early/1e3:.1f} ms of {idle/1e3:.1f} ms")
    # what host was in during long gaps: overlap with dataloader annotations / ops / runtime
    def overlap(items, a, b, pred=lambda e: True):
        return sum(max(0, min(b, e["ts"] + e["dur"]) - max(a, e["ts"])) for e in items if pred(e))
    dl = lambda e: "DataLoader" in e["name"] or "dataloader" in e["name"].lower()
    tot = collections.Counter()
    for a, b, nxt in long:
        tot["dataloader"] += overlap(ann + ops, a, b, dl)
        tot["runtime"] += overlap(rt, a, b)
    print(f"  long gaps: in DataLoader ranges {tot['dataloader']/1e3:.1f} ms, in runtime calls {tot['runtime']/1e3:.1f} ms")
    # long runtime calls
    lr = sorted([e for e in rt if e.get("dur", 0) >= 1000], key=lambda e: -e["dur"])[:6]
    for e in lr: print(f"  long call {e['name']} {e['dur']/1e3:.1f} ms at +{(e['ts']-t0)/1e3:.1f} ms")
    # kernel kinds
    kt = collections.Counter()
    for e in gpu:
        if cat(e) != "kernel": continue
        n = e["name"].lower()
        k = ("nccl" if "nccl" in n else "sgemm/fp32" if "sgemm" in n else "conv" if ("conv" in n or "cudnn" in n) else
             "gemm" if "gemm" in n else "softmax" if "softmax" in n else "elementwise" if ("elementwise" in n or "vectorized" in n) else "other")
        kt[k] += e["dur"]
    ktot = sum(kt.values()) or 1
    print("  kernel time: " + ", ".join(f"{k} {100*v/ktot:.0f}%" for k, v in kt.most_common(5)))
    syncs = collections.Counter(e["name"] for e in rt if "ynchronize" in e["name"])
    print(f"  syncs: {dict(syncs)}; runtime calls {len(rt)}; ops {len(ops)}; python {len(py)}")
    names = [e["name"] for e in gpu if cat(e) == "kernel"]
    print(f"  kernels {len(names)}, distinct {len(set(names))}")
    anns = collections.Counter()
    for a, b, _ in gaps:
        if b - a < 50: continue
        for e in ann:
            o = max(0, min(b, e["ts"] + e["dur"]) - max(a, e["ts"]))
            if o: anns[e["name"][:50]] += o
    print("  annotations over gaps: " + ", ".join(f"{k} {v/1e3:.1f} ms" for k, v in anns.most_common(4)))

for p in sys.argv[1:]:
    main(p)
