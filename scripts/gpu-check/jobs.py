#!/usr/bin/env python3
"""scripts/gpu-check/jobs.py: the small PyTorch training loops that scripts/gpu-check.sh profiles.

One process runs one job for a fixed number of steps and writes what it measured as JSON lines
(--steps-out), one line per step as it goes, so a run that is killed still leaves the steps it did:

  {"type": "start", ...}                  the job, its settings, pid, versions, device
  {"type": "step", "i": 3, "s": ...}      one per step: wall time of the step and its parts
  {"type": "end", ...}                    totals, profiler export, DataLoader worker pids, warnings
  {"type": "error", ...}                  instead of "end" when the job raised

Jobs (each exercises one idle cause of docs/gpu-validation.md):
  data_bound     DataLoader in the main process (num_workers=0) whose __getitem__ burns CPU,
                 pageable host memory, blocking copies, loss.item() every step.
  data_fixed     the same model and data with the usual fixes: forked workers, pin_memory,
                 non_blocking copies, loss.item() only every --log-every steps.
  launch_bound   a deep, narrow MLP plus a chain of elementwise ops: thousands of kernels of a
                 few microseconds per step, Adam without foreach (one set of kernels per tensor).
  launch_graphed the launch_bound step captured once in a CUDA graph and replayed (the fix).
  python_lines   a small training loop (two Linear layers, MSE loss, backward, SGD) whose steps
                 end in loss.item(), out.detach().cpu() and torch.cuda.synchronize() on lines
                 marked '# LINE item', '# LINE cpu' and '# LINE sync' (python_lines_step below):
                 python_lines_check.py runs it under gapwatch and checks that the Python stacks
                 recorded at the CUDA calls those lines make name those lines. It imports `torch`
                 like the other jobs; python_lines_check.py --self-test puts a stand-in `torch`
                 package first on PYTHONPATH.

The profiler is chosen here (--profiler torch wraps the loop in torch.profiler with a schedule);
gapwatch is not: scripts/gpu-check.sh sets LD_PRELOAD / CUDA_INJECTION64_PATH around this process,
and this file does not know whether it is being recorded.

Timing harness: time.perf_counter() around each step and, by default, torch.cuda.synchronize() at
the end of every step so a step's time includes its GPU work. That sync is the harness's, not the
job's: it drains the queue once per step in every job (see scripts/gpu-check/README.md).

--fake runs without torch (sleeps instead of work, a synthetic Kineto trace) so the harness can be
tested on a machine without PyTorch; its numbers mean nothing.
"""

import argparse
import gzip
import json
import os
import shutil
import signal
import socket
import sys
import time
import traceback
import warnings

JOBS = ("data_bound", "data_fixed", "launch_bound", "launch_graphed", "python_lines")


class StepLog:
    """Appends one JSON object per line and flushes it, outside the timed region."""

    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8") if path else None

    def write(self, obj):
        if self.f is None:
            return
        self.f.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.f.flush()

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--job", choices=JOBS, required=True)
    p.add_argument("--label", default="", help="run label recorded in the output (e.g. plain, gapwatch)")
    p.add_argument("--profiler", choices=("none", "torch"), default="none")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5, help="steps left out of the medians")
    p.add_argument("--steps-out", default="", help="JSON-lines file for the measurements")
    p.add_argument("--trace-out", default="", help="Kineto trace path (.json; gzipped to .json.gz)")
    p.add_argument("--prof-wait", type=int, default=5)
    p.add_argument("--prof-warmup", type=int, default=2)
    p.add_argument("--prof-active", type=int, default=5)
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    p.add_argument("--harness-sync", choices=("step", "end"), default="step",
                   help="step: torch.cuda.synchronize() after every step (default); end: only once "
                        "after the loop, per-step times are then host-side times")
    # data jobs
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--image", type=int, default=96, help="side of the random 3xNxN images")
    p.add_argument("--cpu-work-us", type=float, default=400.0,
                   help="CPU time burnt per sample in Dataset.__getitem__")
    p.add_argument("--workers", type=int, default=8, help="data_fixed: DataLoader num_workers")
    p.add_argument("--start-method", choices=("fork", "spawn", "forkserver", "default"),
                   default="fork", help="data_fixed: multiprocessing context of the workers")
    p.add_argument("--log-every", type=int, default=25, help="data_fixed: loss.item() every N steps")
    # launch jobs
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--depth", type=int, default=48)
    p.add_argument("--chain", type=int, default=300, help="elementwise ops appended to the forward")
    p.add_argument("--launch-batch", type=int, default=32)
    p.add_argument("--dry-run", action="store_true",
                   help="CPU, 4 steps, small sizes: checks that the job code runs (needs torch)")
    p.add_argument("--fake", action="store_true", help="no torch: sleeps and a synthetic trace")
    p.add_argument("--fake-step-ms", type=float, default=5.0)
    a = p.parse_args(argv)
    if a.dry_run:
        a.device = "cpu"
        a.steps = min(a.steps, 4)
        a.warmup = 1
        a.batch, a.image, a.cpu_work_us = 4, 16, 50.0
        a.workers = min(a.workers, 2)
        a.depth, a.chain, a.launch_batch = 4, 10, 4
        a.prof_wait, a.prof_warmup, a.prof_active = 1, 1, 1
    if a.steps < 1 or a.warmup < 0:
        p.error("--steps must be >= 1 and --warmup >= 0")
    return a


def profiler_phase(a, i):
    """Which part of the torch.profiler schedule step i falls in ('' without the profiler)."""
    if a.profiler != "torch":
        return ""
    if i < a.prof_wait:
        return "wait"
    if i < a.prof_wait + a.prof_warmup:
        return "warmup"
    if i < a.prof_wait + a.prof_warmup + a.prof_active:
        return "active"
    return "after"


def gzip_file(path):
    """path -> path.gz, removing path. Returns (gz path, raw bytes) or (None, 0) if path is absent."""
    if not path or not os.path.exists(path):
        return None, 0
    raw = os.path.getsize(path)
    gz = path + ".gz"
    with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    os.remove(path)
    return gz, raw


# ------------------------------------------------------------------------------------------------
# --fake: the harness without torch


def run_fake(a, log):
    log.write({"type": "start", "job": a.job, "label": a.label, "fake": True, "pid": os.getpid(),
               "python": sys.version.split()[0], "device": "none (fake)", "profiler": a.profiler,
               "steps": a.steps, "warmup": a.warmup, "unix_time": time.time()})
    base = a.fake_step_ms / 1000.0
    if a.job == "data_fixed":
        base /= 4
    slow = 1.3 if a.profiler == "torch" else 1.0
    loop0 = time.perf_counter()
    trace_info = {}
    for i in range(a.steps):
        phase = profiler_phase(a, i)
        t0 = time.perf_counter()
        time.sleep(base * (slow if phase == "active" else 1.0))
        t1 = time.perf_counter()
        rec = {"type": "step", "i": i, "s": t1 - t0, "data_s": 0.0, "host_s": t1 - t0, "sync_s": 0.0}
        if phase:
            rec["phase"] = phase
        if a.profiler == "torch" and a.trace_out and i == a.prof_wait + a.prof_warmup + a.prof_active - 1:
            trace_info = write_fake_trace(a, base)
            rec["export"] = True
        log.write(rec)
    loop_s = time.perf_counter() - loop0
    log.write({"type": "end", "steps_done": a.steps, "loop_s": loop_s, "unix_time": time.time(),
               "trace": trace_info, "worker_pids": [], "warnings": []})


def write_fake_trace(a, base):
    """A trace shaped like Kineto's (traceEvents with kernel and gpu_memcpy events)."""
    ev, ts = [], 1000.0
    for s in range(a.prof_active):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s,
                   "ts": ts, "dur": base * 1e6, "pid": 1, "tid": 1})
        ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)",
                   "ts": ts + 10, "dur": 50.0, "pid": 0, "tid": 7, "args": {"bytes": 1 << 20}})
        for k in range(20):
            ev.append({"ph": "X", "cat": "kernel", "name": "fake_kernel", "ts": ts + 100 + 30 * k,
                       "dur": 12.0, "pid": 0, "tid": 7})
        ts += base * 1e6
    t0 = time.perf_counter()
    with open(a.trace_out, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": ev, "displayTimeUnit": "ms", "fake": True}, f)
    gz, raw = gzip_file(a.trace_out)
    return {"path": os.path.basename(gz), "raw_bytes": raw, "export_s": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------------
# The real jobs


class SlowDataset:
    """Random images for the data jobs; __getitem__ burns `work_us` of Python CPU time per sample,
    the stand-in for decoding, augmentation or tokenisation. Samples are pageable tensors. A
    module-level class (a map-style dataset needs no base class) so it pickles under spawn too."""

    def __init__(self, n, side, work_us):
        import torch
        self.n = n
        self.pool = torch.randn(16, 3, side, side)
        self.work_s = work_us / 1e6

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        end = time.perf_counter() + self.work_s
        spins = 0
        while time.perf_counter() < end:
            spins += 1
        return self.pool[idx % 16].clone(), idx % 10


def run_torch(a, log):
    t_import = time.perf_counter()
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    if a.device == "auto":
        dev_type = "cuda" if torch.cuda.is_available() else "cpu"
    else:
        dev_type = a.device
    if dev_type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda but torch.cuda.is_available() is False")
    dev = torch.device(dev_type)
    cuda = dev_type == "cuda"
    if a.job == "launch_graphed" and not cuda:
        raise RuntimeError("launch_graphed needs CUDA (CUDA graphs)")

    def sync():
        if cuda:
            torch.cuda.synchronize()

    torch.manual_seed(0)
    setup0 = time.perf_counter()
    start = {"type": "start", "job": a.job, "label": a.label, "pid": os.getpid(),
             "host": socket.gethostname(), "python": sys.version.split()[0],
             "torch": torch.__version__, "torch_cuda": torch.version.cuda, "device": dev_type,
             "device_name": torch.cuda.get_device_name(0) if cuda else "cpu",
             "profiler": a.profiler, "steps": a.steps, "warmup": a.warmup,
             "harness_sync": a.harness_sync, "dry_run": a.dry_run, "unix_time": time.time()}
    if a.profiler == "torch":
        start["prof_schedule"] = {"wait": a.prof_wait, "warmup": a.prof_warmup, "active": a.prof_active}

    # ---- build the job --------------------------------------------------------------------------
    loader_iter = None
    item_every = 0
    non_blocking = False
    graph = None

    if a.job in ("data_bound", "data_fixed"):
        from torch.utils.data import DataLoader

        model = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        ds = SlowDataset((a.steps + 2) * a.batch, a.image, a.cpu_work_us)
        if a.job == "data_bound":
            loader = DataLoader(ds, batch_size=a.batch, shuffle=False, num_workers=0,
                                pin_memory=False, drop_last=True)
            item_every = 1
            start["loader"] = {"num_workers": 0, "pin_memory": False, "non_blocking": False,
                               "item_every": 1}
        else:
            kw = {}
            if a.workers > 0:
                kw = {"persistent_workers": True, "prefetch_factor": 4}
                if a.start_method != "default":
                    kw["multiprocessing_context"] = a.start_method
            loader = DataLoader(ds, batch_size=a.batch, shuffle=False, num_workers=a.workers,
                                pin_memory=cuda, drop_last=True, **kw)
            non_blocking = cuda
            item_every = a.log_every
            import multiprocessing
            start["loader"] = {"num_workers": a.workers, "pin_memory": cuda,
                               "non_blocking": non_blocking, "item_every": a.log_every,
                               "start_method": (a.start_method if a.start_method != "default"
                                                else multiprocessing.get_start_method())}
        start["data"] = {"batch": a.batch, "image": a.image, "cpu_work_us": a.cpu_work_us,
                         "batch_bytes": a.batch * 3 * a.image * a.image * 4}
        loss_fn = nn.CrossEntropyLoss()
    else:
        class TinyDeep(nn.Module):
            def __init__(self, width, depth, chain):
                super().__init__()
                self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
                self.chain = chain

            def forward(self, x):
                for layer in self.layers:
                    x = F.gelu(layer(x))
                for _ in range(self.chain):
                    x = x * 0.999 + 0.001
                return x

        model = TinyDeep(a.width, a.depth, a.chain).to(dev)
        inputs = torch.randn(8, a.launch_batch, a.width, device=dev)
        start["launch"] = {"width": a.width, "depth": a.depth, "chain": a.chain,
                           "batch": a.launch_batch}
        if a.job == "launch_bound":
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)
        else:
            # Whole-step capture, the recipe of PyTorch's CUDA graphs notes: warm up on a side
            # stream, capture forward + backward + optimizer step once, then replay.
            opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)
            static_x = inputs[0].clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    opt.zero_grad(set_to_none=True)
                    model(static_x).square().mean().backward()
                    opt.step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(graph):
                static_loss = model(static_x).square().mean()
                static_loss.backward()
                opt.step()
            sync()
    if a.job in ("data_bound", "data_fixed"):
        # Start the workers (fork) before the profiler, and before the step clock runs.
        loader_iter = iter(loader)
    sync()
    start["setup_s"] = time.perf_counter() - setup0
    start["import_and_setup_s"] = time.perf_counter() - t_import
    log.write(start)

    # ---- the profiler -----------------------------------------------------------------------------
    prof = None
    trace_info = {}
    exported = {"flag": False}
    if a.profiler == "torch":
        from torch.profiler import ProfilerActivity, profile, schedule

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])

        def on_ready(p):
            t0 = time.perf_counter()
            try:
                if a.trace_out:
                    p.export_chrome_trace(a.trace_out)
                    trace_info["export_s"] = time.perf_counter() - t0
                    gz, raw = gzip_file(a.trace_out)
                    trace_info["path"] = os.path.basename(gz) if gz else None
                    trace_info["raw_bytes"] = raw
            except Exception as e:  # the trace is lost, the training goes on
                trace_info["error"] = repr(e)
            exported["flag"] = True

        prof = profile(activities=acts,
                       schedule=schedule(wait=a.prof_wait, warmup=a.prof_warmup,
                                         active=a.prof_active, repeat=1),
                       on_trace_ready=on_ready, record_shapes=False, profile_memory=False,
                       with_stack=False)
        prof.start()

    # ---- the loop -----------------------------------------------------------------------------------
    worker_pids = [getattr(w, "pid", None) for w in getattr(loader_iter, "_workers", []) or []]
    last_loss = None
    running = torch.zeros((), device=dev)
    loop0 = time.perf_counter()
    done = 0
    for i in range(a.steps):
        phase = profiler_phase(a, i)
        exported["flag"] = False
        t0 = time.perf_counter()
        if loader_iter is not None:
            x, y = next(loader_iter)
            t1 = time.perf_counter()
            x = x.to(dev, non_blocking=non_blocking)
            y = y.to(dev, non_blocking=non_blocking)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.detach()
            if item_every and (i + 1) % item_every == 0:
                last_loss = loss.item()
        elif graph is not None:
            t1 = t0
            static_x.copy_(inputs[i % 8])
            graph.replay()
        else:
            t1 = t0
            opt.zero_grad(set_to_none=True)
            loss = model(inputs[i % 8]).square().mean()
            loss.backward()
            opt.step()
        if prof is not None:
            prof.step()
        t2 = time.perf_counter()
        if a.harness_sync == "step":
            sync()
        t3 = time.perf_counter()
        done = i + 1
        rec = {"type": "step", "i": i, "s": t3 - t0, "data_s": t1 - t0, "host_s": t2 - t1,
               "sync_s": t3 - t2}
        if phase:
            rec["phase"] = phase
        if exported["flag"]:
            rec["export"] = True
        log.write(rec)
    sync()
    loop_s = time.perf_counter() - loop0
    if prof is not None:
        prof.stop()
    if a.job in ("data_bound", "data_fixed") and last_loss is None:
        last_loss = float(running.item())
    return {"type": "end", "steps_done": done, "loop_s": loop_s, "unix_time": time.time(),
            "last_loss": last_loss, "trace": trace_info, "worker_pids": worker_pids,
            "loader_iter": loader_iter}


# ------------------------------------------------------------------------------------------------
# python_lines: .item(), .cpu() and a sync at lines that python_lines_check.py finds by parsing this
# file. Keep each marked call on its own line, with its marker comment on that line.


def python_lines_step(torch, model, opt, x, target, cuda):
    """One training step of python_lines. python_lines_check.py expects the CUDA calls each marked
    line makes (torch: cudaMemcpyAsync + cudaStreamSynchronize for .item() and .cpu(),
    cudaDeviceSynchronize under torch/cuda/__init__.py for the sync) to be recorded with a Python
    stack whose first frame outside installed packages and the standard library is that line, in
    this function."""
    out = model(x)
    loss = torch.nn.functional.mse_loss(out, target)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    value = loss.item()  # LINE item
    host = out.detach().cpu()  # LINE cpu
    if cuda:
        torch.cuda.synchronize()  # LINE sync
    return value, host


def run_python_lines(a, log):
    t_import = time.perf_counter()
    import torch
    if a.device == "auto":
        cuda = bool(torch.cuda.is_available())
    else:
        cuda = a.device == "cuda"
    dev = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    width = 64 if a.dry_run else 256
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh(),
                                torch.nn.Linear(width, 64)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4 * width, width, device=dev)
    target = torch.randn(4 * width, 64, device=dev)
    if cuda:
        torch.cuda.synchronize()  # set-up done (not a marked line)
    log.write({"type": "start", "job": a.job, "label": a.label, "pid": os.getpid(),
               "host": socket.gethostname(), "python": sys.version.split()[0],
               "torch": torch.__version__, "torch_cuda": torch.version.cuda,
               "torch_file": getattr(torch, "__file__", None),
               "device": "cuda" if cuda else "cpu",
               "device_name": torch.cuda.get_device_name(0) if cuda else "cpu",
               "steps": a.steps, "warmup": a.warmup,
               "import_and_setup_s": time.perf_counter() - t_import, "unix_time": time.time()})
    calls = {"item": 0, "cpu": 0, "sync": 0}
    loop0 = time.perf_counter()
    value = None
    for i in range(a.steps):
        t0 = time.perf_counter()
        value, _ = python_lines_step(torch, model, opt, x, target, cuda)
        calls["item"] += 1
        calls["cpu"] += 1
        calls["sync"] += 1 if cuda else 0
        t1 = time.perf_counter()
        log.write({"type": "step", "i": i, "s": t1 - t0, "data_s": 0.0, "host_s": t1 - t0, "sync_s": 0.0})
    return {"type": "end", "steps_done": a.steps, "loop_s": time.perf_counter() - loop0,
            "unix_time": time.time(), "last_loss": value, "line_calls": calls, "trace": {},
            "worker_pids": []}


def on_sigterm(signum, frame):
    # `timeout` sends SIGTERM first: turn it into an exception so the log gets an "error" line.
    raise SystemExit("terminated by signal %d (timeout?)" % signum)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    log = StepLog(a.steps_out)
    try:
        if a.fake:
            run_fake(a, log)
            return 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            end = run_python_lines(a, log) if a.job == "python_lines" else run_torch(a, log)
        it = end.pop("loader_iter", None)
        seen = []
        for w in caught:
            msg = "%s: %s" % (w.category.__name__, str(w.message).splitlines()[0][:300])
            if msg not in seen:
                seen.append(msg)
        end["warnings"] = seen[:10]
        end["fork_warnings"] = sum(1 for w in caught if "fork" in str(w.message))
        log.write(end)
        # Shut the DataLoader workers down before the interpreter does, inside the measured run.
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()
        return 0
    except BaseException as e:  # KeyboardInterrupt and SystemExit too: the log says what happened
        log.write({"type": "error", "error": repr(e)[:1000], "unix_time": time.time(),
                   "traceback": traceback.format_exc()[-4000:]})
        traceback.print_exc()
        return 1
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
