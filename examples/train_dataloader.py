"""A PyTorch training loop whose GPU waits on the host: on its data loader, on its per-step metrics,
or on both. The loader is a real torch.utils.data.DataLoader (two worker processes, a dataset whose
items are slow to make); the metrics are pure Python; the GPU is the simulated CUDA runtime
(build/simcuda/lib, docs/simcuda.md), called through ctypes as PyTorch calls CUDA from C++: each
step launches one kernel ("forward and backward") and reads the loss back with a blocking copy, as
`loss.item()` does. So the GPU is idle while the host loads a batch and computes the metrics, and
gapwatch can be asked what the host was doing then.

    gapwatch profile -- python3 examples/train_dataloader.py --variant mixed --truth truth.json

Variants (--variant; the shares of the host time between kernels each gave on a 2-core VM shared
with builds; the rest is the loop's own, some tens of microseconds a step. A machine whose every
core is kept busy makes the metrics overrun: mixed once gave 53 % / 47 % beside two CPU hogs):
  data-bound     waiting in next() for the next batch about 85 %, metrics about 15 %
  metrics-bound  metrics about 93 %, next() about 7 % (the batches are ready: unpickling them)
  mixed          waiting in next() about 65 %, metrics about 35 %

The program measures its own truth (time.perf_counter around each `next()` of the loader and each
metrics call) and, with --truth FILE, writes it as JSON: what gapwatch's report is checked against
(tests/interpose/train_loop_test.py) and what scripts/demo.sh prints beside it. Only the host time
between two kernels counts, as only it is in the GPU's window: the loads of steps 2..N (the first
load, while the workers start, comes before the first kernel) and the metrics of steps 1..N-1 (the
last step's come after the last copy).

Needs torch (any version with torch.utils.data: Debian 12's python3-torch is enough, no GPU) and
the simulated CUDA stack, which scripts/setup.sh --try builds; it does not run on a real GPU (its
kernel takes its duration from an argument only the simulator reads). The lines marked
`# MARK <name>` are the ones the test expects the report to name.
"""
import argparse
import ctypes
import functools
import json
import os
import sys
import time

import torch
import torch.utils.data

# name: (kernel ms, metrics ms, ms to make one item). A step's pace is the loader's when it is the
# slower: two workers each make a batch of BATCH_SIZE items in BATCH_SIZE x item ms, so a batch
# is ready every BATCH_SIZE x item / WORKERS ms; the loop waits in next() for what the kernel and
# the metrics do not fill of it.
VARIANTS = {
    "data-bound": (2, 5, 20),      # a batch every 40 ms; 7 ms of work: ~31 ms a step in next()
    "metrics-bound": (2, 30, 2),   # a batch every 4 ms; 32 ms of work: next() never waits
    "mixed": (2, 13, 20),          # a batch every 40 ms; 15 ms of work: ~25 ms a step in next()
}
BATCH_SIZE = 4
WORKERS = 2
STEPS = 36


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class Runtime:
    """The simulated CUDA runtime, and the calls a PyTorch step makes of it."""

    def __init__(self, simlib):
        self.rt = ctypes.CDLL(os.path.join(simlib, "libcudart.so.13"))
        rt = self.rt
        # getattr: a name with two leading underscores written in a class would be mangled.
        register_fatbin = getattr(rt, "__cudaRegisterFatBinary")
        register_fatbin.restype = ctypes.c_void_p
        register_fatbin.argtypes = [ctypes.c_void_p]
        register_function = getattr(rt, "__cudaRegisterFunction")
        register_function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.c_int] + [ctypes.c_void_p] * 5
        rt.simcuda_kernel_duration_from_argument.argtypes = [ctypes.c_char_p]
        rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.fatbin = ctypes.create_string_buffer(16)
        self.stub = ctypes.create_string_buffer(1)
        handle = register_fatbin(ctypes.addressof(self.fatbin))
        name = b"_Z10train_stepl"  # train_step(long): its duration in ns, as the simulator reads it
        rt.simcuda_kernel_duration_from_argument(name)
        register_function(handle, ctypes.addressof(self.stub), name, name, -1, None, None, None, None, None)
        self.loss_buffer = ctypes.c_void_p()
        rt.cudaMalloc(ctypes.byref(self.loss_buffer), 4)  # the model "moved to the GPU"

    def launch(self, duration_ns):
        duration = ctypes.c_int64(duration_ns)
        args = (ctypes.c_void_p * 1)(ctypes.addressof(duration))
        self.rt.cudaLaunchKernel(ctypes.addressof(self.stub), Dim3(1, 1, 1), Dim3(256, 1, 1), args, 0, None)

    def read_loss(self):
        """loss.item(): a 4-byte device-to-host copy, which waits for the step's kernel."""
        loss = ctypes.c_float()
        self.rt.cudaMemcpy(ctypes.byref(loss), self.loss_buffer, 4, 2)  # 2: cudaMemcpyDeviceToHost
        return loss.value


class SlowDataset(torch.utils.data.Dataset):
    """Items that take item_s each to make, as decoding and augmenting an image does."""

    def __init__(self, items, item_s):
        self.items = items
        self.item_s = item_s

    def __len__(self):
        return self.items

    def __getitem__(self, index):
        time.sleep(self.item_s)
        return torch.full((16,), float(index)), index % 10


def stagger(delay_s, worker_id):
    # Worker k starts k x delay_s late, so that batches come at an even pace (worker 0's, then
    # worker 1's half a batch later...) rather than two at once: every step then waits about as
    # long as the others, which is how a loader keeping pace looks.
    time.sleep(worker_id * delay_s)


def compute_metrics(labels, loss, seconds):
    """The step's bookkeeping, in pure Python: a running squared error of the batch's labels against
    the loss, for `seconds` (a busy loop to a deadline, not a sleep: the thread is running Python,
    as real metrics code is). The loop is written on one line so that the thread is at that one
    line whenever it is in this function."""
    deadline = time.perf_counter() + seconds
    total, n, k = 0.0, 0, len(labels)
    while time.perf_counter() < deadline: total, n = total + (labels[n % k] - loss) ** 2, n + 1  # MARK metrics
    return total / max(n, 1)


def train(runtime, loader, steps, kernel_ns, metrics_s):
    """The loop; returns each step's (next() called, batch back, kernel launched, loss read,
    metrics done), perf_counter seconds."""
    batches = iter(loader)  # forks the workers, after CUDA is in use, as a real job's loader does
    times = []
    for _ in range(steps):
        t_next = time.perf_counter()
        features, labels = next(batches)  # MARK loader
        t_batch = time.perf_counter()
        labels = labels.tolist()
        t_launch = time.perf_counter()
        runtime.launch(kernel_ns)
        loss = runtime.read_loss()
        t_loss = time.perf_counter()
        compute_metrics(labels, loss, metrics_s)
        t_done = time.perf_counter()
        times.append((t_next, t_batch, t_launch, t_loss, t_done))
    del batches  # stops the workers
    return times


def truth(variant, steps, kernel_ms, metrics_ms, item_ms, times):
    """What the host did between consecutive kernels, from the program's own clock: for each gap
    between step i's loss read and step i+1's launch, the metrics of step i and the load of step
    i+1; in nanoseconds."""
    def ns(seconds):
        return int(round(seconds * 1e9))

    gaps = []
    for (_, _, _, loss_i, done_i), (next_j, batch_j, launch_j, _, _) in zip(times, times[1:]):
        gaps.append({"host_ns": ns(launch_j - loss_i), "metrics_ns": ns(done_i - loss_i),
                     "loader_ns": ns(batch_j - next_j)})
    host = sum(g["host_ns"] for g in gaps)
    loader = sum(g["loader_ns"] for g in gaps)
    metrics = sum(g["metrics_ns"] for g in gaps)
    step = ns(times[-1][2] - times[0][2]) if len(times) > 1 else 0  # first launch to last launch
    return {
        "variant": variant, "steps": steps, "gaps": len(gaps), "batch_size": BATCH_SIZE, "workers": WORKERS,
        "kernel_ns": kernel_ms * 1000000, "metrics_target_ns": metrics_ms * 1000000,
        "item_ns": item_ms * 1000000,
        "host_ns": host, "loader_ns": loader, "metrics_ns": metrics, "rest_ns": host - loader - metrics,
        "loader_share": loader / host if host else 0.0, "metrics_share": metrics / host if host else 0.0,
        "steps_ns": step,
        "loader_share_of_steps": loader / step if step else 0.0,
        "metrics_share_of_steps": metrics / step if step else 0.0,
        "first_load_ns": ns(times[0][1] - times[0][0]),
        "per_gap": gaps,
    }


def default_simlib():
    build = os.environ.get("GAPWATCH_BUILD_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                 "build")
    return os.path.join(build, "simcuda", "lib")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="mixed")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--truth", metavar="FILE", help="write what the program measured, as JSON")
    parser.add_argument("--simcuda", metavar="DIR", default=default_simlib(),
                        help="the simulated CUDA libraries (default: build/simcuda/lib)")
    args = parser.parse_args()
    if args.steps < 2:
        parser.error("--steps: at least 2 (one gap between kernels)")
    if not os.path.exists(os.path.join(args.simcuda, "libcudart.so.13")):
        sys.exit("train_dataloader.py: no libcudart.so.13 in %s: build the simulated CUDA stack "
                 "(scripts/setup.sh --try) or name it with --simcuda" % args.simcuda)
    kernel_ms, metrics_ms, item_ms = VARIANTS[args.variant]
    runtime = Runtime(args.simcuda)
    loader = torch.utils.data.DataLoader(
        SlowDataset(args.steps * BATCH_SIZE, item_ms / 1000), batch_size=BATCH_SIZE, num_workers=WORKERS,
        worker_init_fn=functools.partial(stagger, BATCH_SIZE * item_ms / 1000 / WORKERS))
    times = train(runtime, loader, args.steps, kernel_ms * 1000000, metrics_ms / 1000)
    if args.truth:
        result = truth(args.variant, args.steps, kernel_ms, metrics_ms, item_ms, times)
        with open(args.truth, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
