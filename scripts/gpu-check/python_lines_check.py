#!/usr/bin/env python3
"""python_lines_check.py OUT [--self-test] [--budget 40]: are a real PyTorch job's `loss.item()`
and `.cpu()` named by their lines in gapwatch's Python stacks and in `gapwatch report`?

It runs jobs.py's `python_lines` job (a small training loop: two Linear layers, MSE loss, backward,
SGD; each step ends in `loss.item()`, `out.detach().cpu()` and `torch.cuda.synchronize()` on lines
marked `# LINE item`, `# LINE cpu`, `# LINE sync` in `python_lines_step`) under gapwatch
(`LD_PRELOAD`, as the `gapwatch` runs of gpu-check.sh). The marked lines are found by parsing
jobs.py (tokenize for the comments, ast for the function around them), never written down here.

Two things are checked, for each marked line executed N times (the job's `end` line counts them):

  recording  `gapwatch dump --json`: the api_call lines that blocked the host or copied memory. A
             call's named frame is the first frame of its Python stack (innermost first) outside
             installed packages (site-packages, dist-packages), `<frozen ...>` and the standard
             library (.../lib/python3.X/...), the rule of reader/python_stack_text.cpp. At the
             item and cpu lines at least N device-to-host copies and at least N blocking calls
             must be named (torch's C++ makes a cudaMemcpyAsync and a cudaStreamSynchronize for
             each); at the sync line at least N blocking calls (torch.cuda.synchronize() is Python
             code in torch/cuda/__init__.py: its frames must be folded beneath the job's line).
  report     `gapwatch report --json`: some sync_points[].top_call_sites[] entry must be named
             `.../jobs.py:LINE in python_lines_step` (a ` (via ...)` suffix allowed: the innermost
             frame, when library frames were folded) with a count of at least N, and its
             python_stack's named frame must be that line.

The job's `start` line records Python, torch and the device. With a Python outside CPython
3.10-3.13 a failure is reported as SKIP (libgapwatch reads no stack there).

On a real torch the innermost Python frame of the item and cpu calls is the job's line itself
(Tensor.item and Tensor.cpu are C functions, which have no Python frame); `*_innermost` shows it.

Writes OUT/python_lines.txt (key=value lines, the verdict first; the summary shows it),
OUT/python_lines.json, OUT/rec.gwt, OUT/dump.jsonl (the recording's api_call lines),
OUT/report.json, OUT/steps.jsonl, OUT/job.log and OUT/jobs.py.ran (the jobs.py that ran, whose
marks --analyse reads). Exit status 0 when the harness worked, whatever it found; with
--self-test, 0 only when the verdict is a pass and both controls (below) fail as they should.

  python_lines_check.py OUT                 on the GPU machine (needs torch with CUDA), 10-20 s
  python_lines_check.py OUT --self-test     no torch, no GPU (about 2 s): the build's simulated CUDA
                                            stack and a stand-in `torch` package written into
                                            OUT/fake/site-packages/ and put first on PYTHONPATH,
                                            whose Tensor.item() and .cpu() make a cudaMemcpyAsync +
                                            cudaStreamSynchronize through ctypes from its own
                                            Python frames (in site-packages: they must be folded to
                                            reach the job's line). Then two controls that must
                                            fail: the same analysis expecting each mark on the
                                            next line that holds no mark, and the job run again with the stand-in outside any
                                            site-packages folder (its frames are then user frames
                                            and are named instead of the job's lines).
  python_lines_check.py OUT --analyse       analyse OUT/rec.gwt and OUT/steps.jsonl again (an
                                            unpacked archive's field/python_lines/) with the local
                                            gapwatch, the marks read from OUT/jobs.py.ran

Settings: GAPWATCH_LIB (build/lib/libgapwatch.so), GAPWATCH_BIN (build/bin/gapwatch),
GPU_CHECK_PYTHON (python3), GAPWATCH_BUILD_DIR (build; --self-test: where simcuda/lib is).
Standard library only.
"""

import argparse
import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tokenize

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
JOBS = os.path.join(HERE, "jobs.py")
MARKERS = ("item", "cpu", "sync")
COPY_MARKERS = ("item", "cpu")  # the lines that copy to the host
MARK_RE = re.compile(r"^#\s*LINE\s+(\w+)\s*$")
SUPPORTED_PYTHONS = ("3.10", "3.11", "3.12", "3.13")  # the layouts libgapwatch reads stacks of
GAPWATCH_SAID = re.compile(r"gapwatch[\]:]|\[gapwatch")  # gapwatch's own stderr lines (as gpu-check.sh greps)
SOURCE_COPY = "jobs.py.ran"  # the jobs.py that ran, kept beside the recording for --analyse


# ------------------------------------------------------------------------------------------------
# the stand-in for torch (--self-test): a package named torch in a folder named site-packages, so
# that its frames are library frames, as torch's own Python frames are


FAKE_TORCH = {
    "__init__.py": '''"""A stand-in for torch: the few calls of jobs.py's python_lines job, on the simulated CUDA
runtime (scripts/gpu-check/python_lines_check.py --self-test). Not PyTorch."""
from . import cuda, nn, optim
from ._tensor import Tensor, device, manual_seed, randn

__version__ = "0.0+stand-in"


class version:
    cuda = "simulated"
''',
    "_sim.py": '''"""The simulated libcudart.so.13 through ctypes, as tests/interpose/python_stacks_prog.py calls it.
Plays the part of torch's C++: a caching allocator, one kernel per op, and memcpy_and_sync (a
cudaMemcpyAsync to pageable memory, then cudaStreamSynchronize), what c10/cuda does for .item()
and a blocking .cpu()."""
import ctypes
import os


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


D2H = 2
_rt = None
_pool = {}  # bytes -> free device buffers (the caching allocator: cudaMalloc once per size)


def rt():
    global _rt
    if _rt is not None:
        return _rt
    lib = ctypes.CDLL(os.path.join(os.environ["FAKE_TORCH_SIMLIB"], "libcudart.so.13"))
    register_fatbin = getattr(lib, "__cudaRegisterFatBinary")
    register_fatbin.restype = ctypes.c_void_p
    register_fatbin.argtypes = [ctypes.c_void_p]
    register_function = getattr(lib, "__cudaRegisterFunction")
    register_function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                  ctypes.c_int] + [ctypes.c_void_p] * 5
    lib.simcuda_kernel_duration_from_argument.argtypes = [ctypes.c_char_p]
    lib.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_void_p]
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                    ctypes.c_void_p]
    lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    lib.fatbin = ctypes.create_string_buffer(16)
    lib.stub = ctypes.create_string_buffer(1)
    handle = register_fatbin(ctypes.addressof(lib.fatbin))
    name = b"_Z7fake_opv"
    lib.simcuda_kernel_duration_from_argument(name)
    register_function(handle, ctypes.addressof(lib.stub), name, name, -1, None, None, None, None, None)
    _rt = lib
    return lib


def alloc(nbytes):
    free = _pool.get(nbytes)
    if free:
        return free.pop()
    p = ctypes.c_void_p()
    rt().cudaMalloc(ctypes.byref(p), nbytes)
    return p


def release(nbytes, p):
    _pool.setdefault(nbytes, []).append(p)


def launch(duration_ns=50000):
    duration = ctypes.c_int64(duration_ns)
    args = (ctypes.c_void_p * 1)(ctypes.addressof(duration))
    rt().cudaLaunchKernel(ctypes.addressof(rt().stub), Dim3(1, 1, 1), Dim3(32, 1, 1), args, 0, None)


def memcpy_and_sync(dst, src, nbytes):
    rt().cudaMemcpyAsync(dst, src, nbytes, D2H, None)
    rt().cudaStreamSynchronize(None)


def device_synchronize():
    rt().cudaDeviceSynchronize()
''',
    "_tensor.py": '''"""Tensor: a device buffer from the caching allocator; each op launches one kernel, backward one
per node of the graph; item() and cpu() read to the host through _sim.memcpy_and_sync."""
import ctypes

from . import _sim


class device:
    def __init__(self, kind):
        self.type = kind


def manual_seed(seed):
    return None


class Tensor:
    def __init__(self, shape, inputs=(), requires_grad=False, buf=None):
        self.shape = tuple(shape)
        self.numel = 1
        for s in self.shape:
            self.numel *= s
        self.nbytes = 4 * self.numel
        self.owner = buf is None
        self.buf = _sim.alloc(self.nbytes) if buf is None else buf
        self.inputs = inputs
        self.requires_grad = requires_grad or any(t.requires_grad for t in inputs)
        self.grad = None

    def __del__(self):
        try:
            if self.owner:
                _sim.release(self.nbytes, self.buf)
        except Exception:  # interpreter shutdown
            pass

    def op(self, shape, *others):
        _sim.launch()
        return Tensor(shape, inputs=(self,) + others)

    def detach(self):
        return Tensor(self.shape, buf=self.buf)

    def backward(self):
        seen, todo = set(), [self]
        while todo:
            t = todo.pop()
            if id(t) in seen or not t.requires_grad:
                continue
            seen.add(id(t))
            _sim.launch()
            if not t.inputs:
                t.grad = Tensor(t.shape)
            todo.extend(t.inputs)

    def item(self):
        value = ctypes.c_float()
        _sim.memcpy_and_sync(ctypes.byref(value), self.buf, 4)
        return value.value

    def cpu(self):
        host = (ctypes.c_float * self.numel)()
        _sim.memcpy_and_sync(host, self.buf, self.nbytes)
        return list(host)


def randn(*shape, device=None, requires_grad=False):
    t = Tensor(shape, requires_grad=requires_grad)
    _sim.launch(20000)
    return t
''',
    "nn/__init__.py": '''"""torch.nn's few classes: Module.__call__ runs forward (Python, as torch/nn/modules/module.py)."""
from . import functional
from .._tensor import randn


class Module:
    def __call__(self, *args):
        return self.forward(*args)

    def to(self, dev):
        return self

    def parameters(self):
        for v in vars(self).values():
            if isinstance(v, Module):
                yield from v.parameters()
            elif isinstance(v, list):
                for m in v:
                    yield from m.parameters()
            elif getattr(v, "requires_grad", False):
                yield v


class Linear(Module):
    def __init__(self, n_in, n_out):
        self.weight = randn(n_out, n_in, requires_grad=True)
        self.bias = randn(n_out, requires_grad=True)

    def forward(self, x):
        return x.op((x.shape[0], self.weight.shape[0]), self.weight, self.bias)


class Tanh(Module):
    def forward(self, x):
        return x.op(x.shape)


class Sequential(Module):
    def __init__(self, *mods):
        self.mods = list(mods)

    def forward(self, x):
        for m in self.mods:
            x = m(x)
        return x
''',
    "nn/functional.py": '''def mse_loss(out, target):
    return out.op((), target)
''',
    "optim/__init__.py": '''from .. import _sim


class SGD:
    def __init__(self, params, lr=0.01):
        self.params = list(params)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def step(self):
        for p in self.params:
            if p.grad is not None:
                _sim.launch()
''',
    "cuda/__init__.py": '''"""torch.cuda's few calls; synchronize() is Python code here, as in torch/cuda/__init__.py."""
from .. import _sim


def is_available():
    return True


def get_device_name(index=0):
    return "simulated (simcuda)"


def synchronize(device=None):
    _sim.device_synchronize()
''',
}


def write_fake_torch(parent):
    """Writes the stand-in as parent/torch/ and returns parent (the folder to put on PYTHONPATH)."""
    if os.path.isdir(os.path.join(parent, "torch")):
        shutil.rmtree(os.path.join(parent, "torch"))
    for name, text in FAKE_TORCH.items():
        path = os.path.join(parent, "torch", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return parent


# ------------------------------------------------------------------------------------------------
# the marked lines of jobs.py


def marked_lines(path):
    """{marker: {"line": n, "function": qualified name of the function holding it}}."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    marks = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            m = MARK_RE.match(tok.string)
            if m:
                if m.group(1) in marks:
                    raise ValueError("%s: '# LINE %s' twice" % (path, m.group(1)))
                marks[m.group(1)] = {"line": tok.start[0]}
    funcs = []  # (first line, last line, qualified name)

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = prefix + child.name
                funcs.append((child.lineno, child.end_lineno, q))
                walk(child, q + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(src, path), "")
    for m in marks.values():
        inside = [f for f in funcs if f[0] <= m["line"] <= f[1]]
        m["function"] = max(inside)[2] if inside else "<module>"  # the innermost: the latest start
    return marks


# ------------------------------------------------------------------------------------------------
# the recording and the report


def is_library_frame(fr):
    """reader/python_stack_text.cpp's isLibraryFrame."""
    f = fr.get("file") or ""
    if "site-packages/" in f or "dist-packages/" in f or f.startswith("<frozen "):
        return True
    i = f.find("/lib/python3.")
    return i >= 0 and f.find("/", i + 13) >= 0


def named_frame(stack):
    for fr in stack:
        if not is_library_frame(fr):
            return fr
    return stack[0]


def frame_text(fr):
    parts = (fr.get("file") or "").split("/")
    return "%s:%s in %s" % ("/".join(parts[-2:]), fr.get("line"), fr.get("function"))


def is_jobs_file(path):
    if not path:
        return False
    if os.path.isabs(path) and os.path.exists(path) and os.path.samefile(path, JOBS):
        return True
    # a recording made on another machine: the same file of the same checkout (code.sha256)
    return path.replace("\\", "/").endswith("gpu-check/jobs.py")


def function_matches(recorded, where):
    # CPython 3.11+ records the qualified name (co_qualname), 3.10 the bare name (co_name)
    return recorded in (where["function"], where["function"].rsplit(".", 1)[-1])


def frame_is_mark(fr, where):
    return fr.get("line") == where["line"] and is_jobs_file(fr.get("file")) and function_matches(
        fr.get("function"), where)


def site_name_re(where):
    """A report's site name for the marked line: frameText of the named frame (the file's last two
    path parts), then ' (via <innermost frame>)' when library frames were folded."""
    func = "(?:%s|%s)" % (re.escape(where["function"]), re.escape(where["function"].rsplit(".", 1)[-1]))
    return re.compile(r"^(?:.*/)?jobs\.py:%d in %s(?: \(via .*\))?$" % (where["line"], func))


def count(d, key, n=1):
    d[key] = d.get(key, 0) + n


def read_dump(out, gw_bin):
    """The recording's api_call objects (written to OUT/dump.jsonl too), or an error text."""
    rec = os.path.join(out, "rec.gwt")
    d = subprocess.run([gw_bin, "dump", "--json", rec], capture_output=True, text=True, timeout=60)
    if d.returncode != 0:
        return None, "gapwatch dump --json failed (%d): %s" % (d.returncode, d.stderr.strip()[-300:])
    calls = []
    with open(os.path.join(out, "dump.jsonl"), "w", encoding="utf-8") as f:
        for line in d.stdout.splitlines():
            if '"api_call"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("type") == "api_call":
                f.write(line + "\n")
                calls.append(e)
    return calls, None


def read_report(out, gw_bin):
    rec = os.path.join(out, "rec.gwt")
    r = subprocess.run([gw_bin, "report", "--json", rec], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, "gapwatch report --json failed (%d): %s" % (r.returncode, r.stderr.strip()[-300:])
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as f:
        f.write(r.stdout)
    try:
        return json.loads(r.stdout), None
    except ValueError as e:
        return None, "gapwatch report --json: not JSON (%s)" % e


def is_copy(e):
    """memcpy (cudaMemcpy), memcpy_async (cudaMemcpyAsync, what torch's .item() and .cpu() use)."""
    return (e.get("kind") or "").startswith("memcpy")


def analyse_calls(calls, marks, line_calls):
    """What the recording says about each marked line."""
    res = {"markers": {}, "elsewhere": {}, "no_stack": {}, "api_calls": len(calls)}
    considered = [e for e in calls if e.get("blocked") or is_copy(e)]
    res["considered"] = len(considered)
    per = {m: {"named": {}, "innermost": {}, "copies_d2h": 0, "blocked": 0, "folded": 0} for m in marks}
    d2h_elsewhere = 0
    for e in considered:
        stack = e.get("python_stack") or []
        name = e.get("name") or "?"
        d2h = is_copy(e) and e.get("copy_kind") == "d2h"
        if not stack:
            count(res["no_stack"], name)
            d2h_elsewhere += d2h
            continue
        nf = named_frame(stack)
        hit = next((m for m, where in marks.items() if frame_is_mark(nf, where)), None)
        if hit is None:
            count(res["elsewhere"].setdefault(frame_text(nf), {}), name)
            d2h_elsewhere += d2h
            continue
        p = per[hit]
        count(p["named"], name)
        count(p["innermost"], frame_text(stack[0]))
        p["folded"] += stack[0] is not nf
        p["copies_d2h"] += d2h
        p["blocked"] += bool(e.get("blocked"))
    res["d2h_copies_not_at_a_marked_line"] = d2h_elsewhere
    for m, where in marks.items():
        p = per[m]
        n = int((line_calls or {}).get(m, 0))
        p.update(where)
        p["executed"] = n
        p["ok"] = n > 0 and p["blocked"] >= n and (p["copies_d2h"] >= n if m in COPY_MARKERS else True)
        res["markers"][m] = p
    return res


def analyse_report(report, marks, line_calls):
    """Which of the report's top sync call sites name each marked line."""
    res = {}
    procs = (report or {}).get("processes") or []
    for m, where in marks.items():
        want = site_name_re(where)
        n = int((line_calls or {}).get(m, 0))
        sites = []
        for p in procs:
            for sp in p.get("sync_points") or []:
                for s in sp.get("top_call_sites") or []:
                    if want.match(s.get("name") or ""):
                        stack = s.get("python_stack") or []
                        sites.append({"type": sp.get("type"), "name": s.get("name"), "count": s.get("count", 0),
                                      "idle_after_ns": s.get("idle_after_ns"),
                                      "stack_names_line": bool(stack) and frame_is_mark(named_frame(stack), where)})
        ok = n > 0 and any(s["count"] >= n and s["stack_names_line"] for s in sites)
        res[m] = {"ok": ok, "sites": sites, "executed": n}
    tops = []
    for p in procs:
        for sp in p.get("sync_points") or []:
            for s in (sp.get("top_call_sites") or [])[:3]:
                tops.append("%s: %s x%s" % (sp.get("type"), s.get("name"), s.get("count")))
    host = []
    for p in procs:
        for dev in p.get("devices") or []:
            for s in (dev.get("long_host_gap_sites") or [])[:3]:
                host.append("device %s: %s (%s gaps)" % (dev.get("device"), s.get("name"), s.get("gaps")))
    # processes[].python_stacks (read, missed, missed_by_reason), where the CLI reports it
    stacks = ["pid %s: read %s, missed %s %s" % (p.get("pid"), p["python_stacks"].get("read"),
                                                  p["python_stacks"].get("missed"),
                                                  json.dumps(p["python_stacks"].get("missed_by_reason") or {}))
              for p in procs if isinstance(p.get("python_stacks"), dict)]
    return {"markers": res, "top_sites": tops, "long_host_gap_sites": host, "python_stacks": stacks}


def verdict_of(rec, rep, markers=MARKERS):
    bad = [m for m in markers if not rec["markers"][m]["ok"]]
    bad_rep = [m for m in markers if not rep["markers"][m]["ok"]]
    if bad or bad_rep:
        parts = []
        if bad:
            parts.append("recorded stacks do not name %s at their lines" % ", ".join(bad))
        if bad_rep:
            parts.append("the report's top sync call sites do not name %s" % ", ".join(bad_rep))
        return "FAILED: " + "; ".join(parts)
    return "PASS: .item(), .cpu() and torch.cuda.synchronize() named at their jobs.py lines in the recording and the report"


# ------------------------------------------------------------------------------------------------
# running the job


def run_job(out, a, py, env_extra, label, limit):
    """Runs jobs.py --job python_lines under LD_PRELOAD into out/; returns (rc, seconds)."""
    rec = os.path.join(out, "rec.gwt")
    steps_path = os.path.join(out, "steps.jsonl")
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GAPWATCH_") or k in ("CUDA_INJECTION64_PATH", "LD_PRELOAD", "PYTHONPATH"):
            env.pop(k)
    env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", LD_PRELOAD=a.lib, GAPWATCH_OUTPUT=rec)
    env.update(env_extra)
    cmd = [py, JOBS, "--job", "python_lines", "--label", label, "--steps", str(a.steps),
           "--warmup", "0", "--steps-out", steps_path]
    for p in (rec, steps_path):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.monotonic()
    with open(os.path.join(out, "job.log"), "w", encoding="utf-8") as log:
        log.write("# %s\n# %s\n" % (" ".join("%s=%s" % kv for kv in sorted(env_extra.items())), " ".join(cmd)))
        log.flush()
        try:
            rc = subprocess.run(cmd, env=env, cwd=out, stdout=log, stderr=subprocess.STDOUT,
                                timeout=limit).returncode
        except subprocess.TimeoutExpired:
            rc = "timed out after %.0f s" % limit
    return rc, round(time.monotonic() - t0, 2), " ".join(cmd)


def read_steps(out):
    rows = []
    try:
        with open(os.path.join(out, "steps.jsonl"), encoding="utf-8") as f:
            rows = [json.loads(x) for x in f if x.strip()]
    except (OSError, ValueError):
        pass
    start = next((x for x in rows if x.get("type") == "start"), {})
    end = next((x for x in rows if x.get("type") == "end"), None)
    err = next((x for x in rows if x.get("type") == "error"), None)
    return start, end, err


def gapwatch_lines(out):
    try:
        with open(os.path.join(out, "job.log"), encoding="utf-8", errors="replace") as f:
            return [ln.rstrip() for ln in f if GAPWATCH_SAID.search(ln) and not ln.startswith("#")][:4]
    except OSError:
        return []


def check_dir(out, gw_bin, marks, result):
    """Analyses out/ (steps.jsonl, rec.gwt) into result; returns the verdict."""
    start, end, err = read_steps(out)
    result["job"] = {k: start.get(k) for k in ("pid", "python", "torch", "torch_cuda", "torch_file", "device",
                                               "device_name")}
    result["gapwatch_said"] = gapwatch_lines(out)
    if end:
        result["job"]["line_calls"] = end.get("line_calls")
    if err:
        result["job"]["error"] = str(err.get("error"))[:300]
    if not start:
        if "No module named 'torch'" in result["job"].get("error", ""):
            return "SKIP: torch is not importable by the job's Python: nothing recorded to check"
        return "FAILED: the job did not start (%s; see job.log)" % (result["job"].get("error") or "no start line")
    if start.get("device") != "cuda":
        return "SKIP: no CUDA device for torch: nothing recorded to check"
    if not end:
        return "FAILED: the job did not finish (%s; see job.log)" % (result["job"].get("error") or "no end line")
    if not os.path.isfile(os.path.join(out, "rec.gwt")):
        return "FAILED: no recording at %s" % os.path.join(out, "rec.gwt")
    if not (os.path.isfile(gw_bin) and os.access(gw_bin, os.X_OK)):
        return ("SKIP: gapwatch CLI not found at %s: rec.gwt kept, analyse it with "
                "python_lines_check.py DIR --analyse" % gw_bin)
    calls, error = read_dump(out, gw_bin)
    if error:
        return "FAILED: " + error
    result["recording"] = analyse_calls(calls, marks, end.get("line_calls"))
    report, error = read_report(out, gw_bin)
    if error:
        return "FAILED: " + error
    result["report"] = analyse_report(report, marks, end.get("line_calls"))
    verdict = verdict_of(result["recording"], result["report"])
    py = ".".join((start.get("python") or "").split(".")[:2])
    if not verdict.startswith("PASS") and py not in SUPPORTED_PYTHONS:
        verdict = ("SKIP: Python %s: libgapwatch reads the stacks of CPython %s only (%s)"
                   % (py, ", ".join(SUPPORTED_PYTHONS), verdict))
    return verdict


# ------------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--analyse", action="store_true", help="analyse OUT's recording again, run nothing")
    ap.add_argument("--budget", type=float, default=40.0)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lib", default=os.environ.get("GAPWATCH_LIB") or os.path.join(REPO, "build", "lib", "libgapwatch.so"))
    ap.add_argument("--gapwatch", default=os.environ.get("GAPWATCH_BIN") or os.path.join(REPO, "build", "bin", "gapwatch"))
    a = ap.parse_args()
    t_start = time.monotonic()
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    py = os.environ.get("GPU_CHECK_PYTHON") or sys.executable or "python3"
    build = os.environ.get("GAPWATCH_BUILD_DIR") or os.path.join(REPO, "build")
    result = {"self_test": a.self_test, "jobs_py": JOBS, "steps": a.steps}

    def finish(verdict):
        result["verdict"] = verdict
        with open(os.path.join(out, "python_lines.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        text = render(result)
        with open(os.path.join(out, "python_lines.txt"), "w", encoding="utf-8") as f:
            f.write(text)
        sys.stdout.write(text)
        if a.self_test:
            ok = verdict.startswith("PASS")
            print("python_lines_check: self-test %s" % ("passed" if ok else "FAILED"))
            return 0 if ok else 1
        return 0

    # The marks come from the jobs.py that ran: this checkout's, or with --analyse the copy kept
    # beside the recording (an archive from another machine, another version).
    source = JOBS
    if a.analyse and os.path.isfile(os.path.join(out, SOURCE_COPY)):
        source = os.path.join(out, SOURCE_COPY)
    elif not a.analyse:
        shutil.copyfile(JOBS, os.path.join(out, SOURCE_COPY))
    result["marks_from"] = source
    try:
        marks = marked_lines(source)
    except (OSError, SyntaxError, ValueError) as e:
        return finish("FAILED: cannot find the marked lines of jobs.py: %s" % e)
    result["marks"] = marks
    missing = [m for m in MARKERS if m not in marks]
    if missing:
        return finish("FAILED: jobs.py has no '# LINE %s'" % ", ".join(missing))

    sim_env = {}
    if a.self_test:
        simlib = os.path.join(build, "simcuda", "lib")
        if not os.path.isfile(os.path.join(simlib, "libcudart.so.13")):
            return finish("FAILED: self-test: no simulated runtime at %s" % simlib)
        sim_env = {"GAPWATCH_CUPTI_PATH": os.path.join(simlib, "libcupti.so.13"), "FAKE_TORCH_SIMLIB": simlib,
                   "LD_LIBRARY_PATH": simlib + (":" + os.environ["LD_LIBRARY_PATH"]
                                                if os.environ.get("LD_LIBRARY_PATH") else "")}
    if not a.analyse:
        if not os.path.isfile(a.lib):
            return finish("SKIP: libgapwatch.so not found at %s: nothing run" % a.lib)
        extra = dict(sim_env)
        if a.self_test:
            extra["PYTHONPATH"] = write_fake_torch(os.path.join(out, "fake", "site-packages"))
        limit = max(5.0, a.budget - 5.0 - (time.monotonic() - t_start))
        if a.self_test:
            limit = min(limit, max(5.0, a.budget / 3))  # the unfolded control runs the job again
        result["job_rc"], result["job_s"], result["job_cmd"] = run_job(out, a, py, extra, "python_lines", limit)
    verdict = check_dir(out, a.gapwatch, marks, result)
    if a.self_test and verdict.startswith("PASS"):
        verdict = self_test_controls(out, a, py, sim_env, marks, result, t_start) or verdict
    return finish(verdict)


def self_test_controls(out, a, py, sim_env, marks, result, t_start):
    """--self-test: the check must fail where it should. Returns a FAILED verdict, or None."""
    # The stand-in's frames must have been folded: the innermost frame of every copy is its own.
    fake_root = os.path.join(out, "fake", "site-packages", "torch") + "/"
    for m in COPY_MARKERS:
        inner = list(result["recording"]["markers"][m]["innermost"])
        if not inner or result["recording"]["markers"][m]["folded"] < result["recording"]["markers"][m]["executed"]:
            return "FAILED: self-test: %s's calls were not made from the stand-in's frames (%s)" % (m, inner)
    if not (result["job"].get("torch_file") or "").startswith(fake_root):
        return "FAILED: self-test: the job imported %s, not the stand-in" % result["job"].get("torch_file")
    # 1. expecting each mark one line further down (the next line that holds no mark): nothing
    #    may match
    line_calls = result["job"]["line_calls"]
    taken = {w["line"] for w in marks.values()}
    shifted = {}
    for m, w in marks.items():
        line = w["line"] + 1
        while line in taken:
            line += 1
        shifted[m] = dict(w, line=line)
    calls = []
    with open(os.path.join(out, "dump.jsonl"), encoding="utf-8") as f:
        calls = [json.loads(x) for x in f if x.strip()]
    with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    rec = analyse_calls(calls, shifted, line_calls)
    rep = analyse_report(report, shifted, line_calls)
    wrong = [m for m in MARKERS if rec["markers"][m]["ok"] or rep["markers"][m]["ok"]]
    result["control_shifted"] = ("fails as it should (expecting lines %s)"
                                 % ", ".join("%s %d" % (m, w["line"]) for m, w in shifted.items())
                                 if not wrong else "PASSED for %s" % ", ".join(wrong))
    if wrong:
        return "FAILED: self-test: expecting the next unmarked line after each mark still passes for %s" % ", ".join(wrong)
    # 2. the stand-in outside site-packages: its frames are user frames, named instead of the job's
    ctl = os.path.join(out, "control-unfolded")
    os.makedirs(ctl, exist_ok=True)
    plain = write_fake_torch(os.path.join(ctl, "plainlib"))
    if is_library_frame({"file": os.path.join(plain, "torch", "_sim.py")}):
        result["control_unfolded"] = "not run: %s looks like an installed package's folder" % plain
        return None
    extra = dict(sim_env, PYTHONPATH=plain)
    limit = max(5.0, a.budget - 3.0 - (time.monotonic() - t_start))
    ctl_result = {}
    ctl_result["job_rc"], ctl_result["job_s"], _ = run_job(ctl, a, py, extra, "python_lines-unfolded", limit)
    v = check_dir(ctl, a.gapwatch, marks, ctl_result)
    copy_ok = [m for m in COPY_MARKERS if (ctl_result.get("recording") or {}).get("markers", {}).get(m, {}).get("ok")]
    elsewhere = sorted((ctl_result.get("recording") or {}).get("elsewhere", {}))
    result["control_unfolded"] = ("fails as it should (%s; named instead: %s)" % (v, ", ".join(elsewhere[:3]))
                                  if v.startswith("FAILED") and not copy_ok else "did not fail: %s" % v)
    if not v.startswith("FAILED") or copy_ok:
        return "FAILED: self-test: with the stand-in outside site-packages the check still passes (%s)" % v
    return None


def fmt_counts(d):
    return ", ".join("%s x%d" % kv for kv in sorted(d.items())) or "nothing"


def render(r):
    L = ["verdict=%s" % r.get("verdict")]
    L.append("self_test=%d" % bool(r.get("self_test")))
    j = r.get("job") or {}
    if j:
        L.append("job=rc %s in %s s; torch %s (CUDA %s) on %s; python %s; pid %s"
                 % (r.get("job_rc", "-"), r.get("job_s", "-"), j.get("torch"), j.get("torch_cuda"),
                    j.get("device_name"), j.get("python"), j.get("pid")))
        if r.get("self_test"):
            L.append("torch_file=%s" % j.get("torch_file"))
    if r.get("gapwatch_said"):
        L.append("gapwatch_said=%s" % " | ".join(r["gapwatch_said"]))
    rec = (r.get("recording") or {}).get("markers") or {}
    rep = (r.get("report") or {}).get("markers") or {}
    for m, p in rec.items():
        L.append("%s=%s: jobs.py:%s in %s executed %s times; named there: %s (blocking %s, d2h copies %s)"
                 % (m, "ok" if p["ok"] else "FAIL", p["line"], p["function"], p["executed"],
                    fmt_counts(p["named"]), p["blocked"], p["copies_d2h"]))
        L.append("%s_innermost=%s" % (m, fmt_counts(p["innermost"])))
        q = rep.get(m)
        if q is not None:
            L.append("%s_report=%s: %s" % (m, "ok" if q["ok"] else "FAIL", "; ".join(
                "%s '%s' x%s%s" % (s["type"], s["name"], s["count"], "" if s["stack_names_line"] else " (stack elsewhere)")
                for s in q["sites"]) or "no top call site names the line"))
    if not rec and r.get("marks"):
        L.append("marks=%s" % ", ".join("%s: jobs.py:%s in %s" % (m, v["line"], v["function"])
                                        for m, v in sorted(r["marks"].items())))
    if rec:
        R = r["recording"]
        L.append("elsewhere=%s" % ("; ".join("%s: %s" % (site, fmt_counts(c))
                                             for site, c in sorted(R["elsewhere"].items())[:6]) or "none"))
        L.append("no_stack=%s" % (fmt_counts(R["no_stack"]) if R["no_stack"] else "none"))
        L.append("d2h_copies_not_at_a_marked_line=%s" % R["d2h_copies_not_at_a_marked_line"])
        L.append("considered=%s blocking or copying calls of %s API calls" % (R["considered"], R["api_calls"]))
    if r.get("report"):
        L.append("report_top_sites=%s" % ("; ".join(r["report"]["top_sites"]) or "none"))
        L.append("report_long_host_gap_sites=%s" % ("; ".join(r["report"]["long_host_gap_sites"]) or "none"))
        if r["report"].get("python_stacks"):
            L.append("report_python_stacks=%s" % "; ".join(r["report"]["python_stacks"]))
    for k in ("control_shifted", "control_unfolded"):
        if r.get(k):
            L.append("%s=%s" % (k, r[k]))
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
