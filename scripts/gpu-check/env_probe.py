#!/usr/bin/env python3
"""scripts/gpu-check/env_probe.py: what the GPU check ran on.

Writes a JSON object (--json) and prints a short human-readable account. Needs only the standard
library; PyTorch, the CUDA driver and CUPTI are each probed if present and reported as missing if
not, never installed.

  env_probe.py --json env.json [--lib build/lib/libgapwatch.so]
  env_probe.py --cupti-dlopen          (internal: dlopen libcupti in a fresh process, print JSON)

libcupti is looked at three ways, because gapwatch dlopens it inside a process that may already
hold PyTorch's copy (docs: research notes on CUPTI, "two libcupti copies"):
  1. a fresh Python process without torch: which `libcupti.so*` names dlopen finds, from where,
     and cuptiGetVersion() (this neither subscribes nor enables anything);
  2. after `import torch` and CUDA initialisation: which libcupti file is mapped into the process;
  3. the candidate files on disk: the nvidia-cuda-cupti wheel's lib/ folders, CUDA toolkit folders,
     `ldconfig -p`.
Then a one-operation torch.profiler session checks that Kineto gets CUDA activity on this machine
without gapwatch (the baseline for the gapwatch + torch.profiler run).
"""

import argparse
import ctypes
import glob
import json
import os
import platform
import subprocess
import sys
import time

CUPTI_NAMES = ("libcupti.so.13", "libcupti.so.12", "libcupti.so")
ENV_KEYS = ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING",
            "KINETO_USE_DAEMON", "KINETO_LOG_LEVEL", "LD_LIBRARY_PATH", "GAPWATCH_LIB",
            "GAPWATCH_OUTPUT", "GAPWATCH_DISABLE", "GAPWATCH_LOG", "OMP_NUM_THREADS")


def mapped_libs(substr):
    """Files containing substr that are mapped into this process (from /proc/self/maps)."""
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if substr in os.path.basename(path) and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def classify(path):
    p = path.replace("\\", "/")
    if "/site-packages/nvidia/" in p or "/dist-packages/nvidia/" in p:
        return "wheel (nvidia-cuda-cupti, PyTorch's pip dependency)"
    if "/site-packages/" in p or "/dist-packages/" in p:
        return "a Python package"
    if "/cuda" in p:
        return "system (CUDA toolkit folder)"
    return "system"


def cupti_dlopen():
    """Run in a fresh process without torch: what a plain dlopen of libcupti finds."""
    out = {"tried": []}
    for name in CUPTI_NAMES:
        rec = {"name": name}
        try:
            lib = ctypes.CDLL(name)
            rec["loaded"] = True
            rec["paths"] = mapped_libs("libcupti")
            try:
                ver = ctypes.c_uint32(0)
                rc = lib.cuptiGetVersion(ctypes.byref(ver))
                rec["cuptiGetVersion"] = {"rc": rc, "version": ver.value}
            except AttributeError:
                rec["cuptiGetVersion"] = None
            out["tried"].append(rec)
            out["first_loadable"] = name
            break
        except OSError as e:
            rec["loaded"] = False
            rec["error"] = str(e)[:300]
            out["tried"].append(rec)
    return out


def driver_version():
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return {"loadable": False, "error": str(e)[:300]}
    v = ctypes.c_int(0)
    rc = lib.cuDriverGetVersion(ctypes.byref(v))
    return {"loadable": True, "paths": mapped_libs("libcuda.so"), "rc": rc, "cuda_driver_version": v.value}


def candidate_cupti_files():
    found = []
    roots = [p for p in sys.path if p and os.path.isdir(p)]
    for root in roots:
        for pat in ("nvidia/*/lib/libcupti.so*", "nvidia/*/*/lib/libcupti.so*", "nvidia/cu*/lib/libcupti.so*",
                    "torch/lib/libcupti*.so*"):
            for f in glob.glob(os.path.join(root, pat)):
                if f not in found:
                    found.append(f)
    for pat in ("/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so*", "/usr/local/cuda*/lib64/libcupti.so*",
                "/usr/lib/x86_64-linux-gnu/libcupti.so*", "/usr/lib64/libcupti.so*"):
        for f in glob.glob(pat):
            if f not in found:
                found.append(f)
    ldconfig = []
    try:
        r = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10)
        ldconfig = [ln.strip() for ln in r.stdout.splitlines() if "libcupti" in ln]
    except (OSError, subprocess.SubprocessError):
        ldconfig = ["(ldconfig not available)"]
    return {"files": found[:40], "ldconfig": ldconfig[:20]}


def torch_info():
    info = {}
    t0 = time.perf_counter()
    try:
        import torch
    except Exception as e:  # not installed, or broken
        return {"importable": False, "error": repr(e)[:500]}
    info["importable"] = True
    info["import_s"] = round(time.perf_counter() - t0, 3)
    info["version"] = torch.__version__
    info["file"] = torch.__file__
    info["cuda"] = torch.version.cuda
    info["git_version"] = getattr(torch.version, "git_version", None)
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception as e:
        info["cudnn"] = "error: %r" % e
    try:
        info["kineto_available"] = bool(torch.autograd.kineto_available())
    except Exception as e:
        info["kineto_available"] = "error: %r" % e
    info["cupti_mapped_after_import"] = mapped_libs("libcupti")
    try:
        info["cuda_available"] = torch.cuda.is_available()
        if info["cuda_available"]:
            t1 = time.perf_counter()
            torch.cuda.init()
            torch.zeros(1, device="cuda").add_(1)
            torch.cuda.synchronize()
            info["cuda_init_s"] = round(time.perf_counter() - t1, 3)
            info["device_count"] = torch.cuda.device_count()
            p = torch.cuda.get_device_properties(0)
            info["device"] = {"name": p.name, "capability": "%d.%d" % (p.major, p.minor),
                              "total_memory_gib": round(p.total_memory / 2**30, 1),
                              "multiprocessors": p.multi_processor_count}
    except Exception as e:
        info["cuda_error"] = repr(e)[:500]
    info["cupti_mapped_after_cuda_init"] = mapped_libs("libcupti")
    info["profiler_check"] = kineto_check(torch, info.get("cuda_available") is True)
    info["cupti_mapped_after_profiler"] = mapped_libs("libcupti")
    return info


def kineto_check(torch, cuda):
    """One profiled matmul: does Kineto deliver CUDA kernel events here, without gapwatch?"""
    if not cuda:
        return {"ran": False, "why": "no CUDA"}
    try:
        from torch.profiler import ProfilerActivity, profile
        x = torch.randn(256, 256, device="cuda")
        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            (x @ x).sum()
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        n_dev = n_kernels = 0
        for e in prof.events():
            dt = getattr(e, "device_type", None)
            if dt is not None and "CUDA" in str(dt):
                n_dev += 1
            n_kernels += len(getattr(e, "kernels", None) or [])
        return {"ran": True, "cuda_events": n_dev, "kernels_attached": n_kernels,
                "seconds": round(elapsed, 3)}
    except Exception as e:
        return {"ran": True, "error": repr(e)[:500]}


def lib_info(path):
    info = {"path": path, "exists": bool(path) and os.path.isfile(path)}
    if not info["exists"]:
        return info
    info["bytes"] = os.path.getsize(path)
    info["mtime_unix"] = int(os.path.getmtime(path))
    try:
        import hashlib
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        info["sha256"] = h.hexdigest()
    except OSError as e:
        info["sha256"] = "error: %s" % e
    for tool, args in (("readelf", ["-d", "-W"]), ("nm", ["-D", "--defined-only"])):
        try:
            r = subprocess.run([tool] + args + [path], capture_output=True, text=True, timeout=20)
            lines = r.stdout.splitlines()
            if tool == "readelf":
                info["needed"] = [ln.split("[", 1)[1].rstrip("]") for ln in lines if "(NEEDED)" in ln and "[" in ln]
            else:
                info["exports"] = [ln.split()[-1] for ln in lines if " T " in ln or " W " in ln][:60]
                info["has_InitializeInjection"] = any(ln.endswith(" InitializeInjection") for ln in lines)
        except (OSError, subprocess.SubprocessError):
            info[tool] = "not available"
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--lib", default="")
    ap.add_argument("--cupti-dlopen", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    if a.cupti_dlopen:
        print(json.dumps(cupti_dlopen()))
        return 0

    env = {"probe_unix_time": time.time(), "python": sys.version.replace("\n", " "),
           "python_executable": sys.executable, "platform": platform.platform(),
           "machine": platform.machine(), "cpu_count": os.cpu_count(),
           "env": {k: os.environ.get(k) for k in ENV_KEYS if k in os.environ}}
    try:
        import multiprocessing
        env["mp_default_start_method"] = multiprocessing.get_start_method(allow_none=False)
    except Exception as e:
        env["mp_default_start_method"] = "error: %r" % e
    env["cuda_driver"] = driver_version()
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--cupti-dlopen"],
                           capture_output=True, text=True, timeout=30,
                           env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
        env["cupti_dlopen_without_torch"] = json.loads(r.stdout) if r.returncode == 0 else \
            {"error": (r.stderr or r.stdout)[-500:]}
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        env["cupti_dlopen_without_torch"] = {"error": repr(e)}
    env["cupti_candidates"] = candidate_cupti_files()
    env["gapwatch_lib"] = lib_info(a.lib)
    env["torch"] = {"skipped": True} if a.no_torch else torch_info()
    for key in ("cupti_mapped_after_profiler", "cupti_mapped_after_cuda_init", "cupti_mapped_after_import"):
        paths = env["torch"].get(key) or []
        if paths:
            env["torch_cupti"] = {"path": paths[0], "origin": classify(paths[0]), "seen": key}
            break

    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(env, f, indent=1, sort_keys=True)

    t = env["torch"]
    print("python        %s (%s)" % (sys.version.split()[0], sys.executable))
    print("platform      %s, %s CPUs, multiprocessing default start method: %s"
          % (env["platform"], env["cpu_count"], env["mp_default_start_method"]))
    d = env["cuda_driver"]
    print("CUDA driver   %s" % (("cuDriverGetVersion %s (%s)" % (d.get("cuda_driver_version"), ", ".join(d.get("paths", []))))
                               if d.get("loadable") else "libcuda.so.1 not loadable: " + d.get("error", "")))
    if t.get("importable"):
        print("torch         %s, torch.version.cuda %s, cudnn %s, kineto %s (import %.1f s)"
              % (t["version"], t["cuda"], t.get("cudnn"), t.get("kineto_available"), t.get("import_s", 0)))
        if t.get("cuda_error"):
            print("device        CUDA error: %s" % t["cuda_error"])
        elif t.get("cuda_available"):
            dv = t.get("device", {})
            print("device        %s, sm_%s, %s GiB, %s SMs (CUDA init %.1f s)"
                  % (dv.get("name"), str(dv.get("capability", "")).replace(".", ""),
                     dv.get("total_memory_gib"), dv.get("multiprocessors"), t.get("cuda_init_s", 0)))
        else:
            print("device        torch.cuda.is_available() is False %s" % t.get("cuda_error", ""))
        pc = t.get("profiler_check", {})
        print("torch.profiler alone: %s" % json.dumps(pc))
    elif not a.no_torch:
        print("torch         NOT importable: %s" % t.get("error"))
    cd = env["cupti_dlopen_without_torch"]
    if cd.get("first_loadable"):
        rec = cd["tried"][-1]
        print("libcupti      dlopen(%s) without torch -> %s, cuptiGetVersion %s"
              % (cd["first_loadable"], ", ".join(rec.get("paths", [])) or "?", rec.get("cuptiGetVersion")))
    else:
        print("libcupti      no libcupti.so* loadable by dlopen without torch (%s)"
              % "; ".join(r.get("error", "") for r in cd.get("tried", []))[:300])
    if env.get("torch_cupti"):
        tc = env["torch_cupti"]
        print("libcupti      torch's copy: %s [%s] (%s)" % (tc["path"], tc["origin"], tc["seen"]))
    print("libcupti      files on disk: %s" % (", ".join(env["cupti_candidates"]["files"]) or "none found"))
    g = env["gapwatch_lib"]
    if g["exists"]:
        print("gapwatch lib  %s, %d bytes, sha256 %s, NEEDED %s, InitializeInjection exported: %s"
              % (g["path"], g["bytes"], str(g.get("sha256"))[:16], g.get("needed", "?"),
                 g.get("has_InitializeInjection", "?")))
    else:
        print("gapwatch lib  not found at %s" % (g["path"] or "(no path given)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
