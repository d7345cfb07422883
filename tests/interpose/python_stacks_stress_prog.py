"""Frames made and torn down as fast as Python can, while other threads make blocking CUDA calls
(the simulated runtime, through ctypes) from lines marked `# MARK <api> <function>`: inside a
generator, a coroutine awaited down a chain, a recursion deeper than gapwatch's 48 frames, a
short-lived thread, a closure, a lambda, an except block, a generator's finally run by its
close() or the cyclic gc, a __del__ run by the gc on whichever thread collects, and freshly
compiled code. python_stacks_stress_test.py checks that every recorded call either has its marked
line as its innermost frame or no stack at all, with a miss counted.

Usage: python_stacks_stress_prog.py SIMLIB_DIR SECONDS SUMMARY_JSON
  Runs for SECONDS (the churn and the callers stop then, whatever they are doing), then writes to
  SUMMARY_JSON how many calls each marked function made ("made"), the deep recursion's depths and
  what the compiled code's frame is ("dynamic").
"""
import asyncio
import collections
import ctypes
import functools
import gc
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_stacks_prog import Runtime  # noqa: E402  the ctypes runtime of the simulated libcudart

KERNEL_NS = 20000          # a short kernel before some syncs, so that they wait for it
CUT_DEPTH = 60             # a recursion this deep is cut at gapwatch's 48 frames ...
WHOLE_DEPTH = 30           # ... and this shallow is not (with the thread's own frames below it)
# Each caller rests this long between rounds: the churn runs all the time, but the calls stay at a
# few thousand a second (a minute's recording, dumped as JSON, in the hundreds of MB, not GB).
PACE_S = 0.003
DYNAMIC_SOURCE = "def dyn(runtime):\n    runtime.rt.cudaStreamSynchronize(None)\n"

made = collections.Counter()
made_lock = threading.Lock()
depths = collections.Counter()
deadline = 0.0
stopping = False  # set after the last collection: a finalizer run later (at exit) makes no call


def count(site):
    with made_lock:
        made[site] += 1


def running():
    return time.monotonic() < deadline


# ---- the marked calls ---------------------------------------------------------------------------

def sync_gen(runtime, n):
    for _ in range(n):
        runtime.launch(KERNEL_NS)
        runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize sync_gen
        count("sync_gen")
        yield


def drive_gen(runtime):
    gen = sync_gen(runtime, random.randint(1, 4))
    while True:
        try:
            next(gen)
        except StopIteration:
            return


async def copy_coro(runtime):
    await asyncio.sleep(0)  # the call is made by a coroutine resumed from the loop
    loss = ctypes.c_float()
    runtime.rt.cudaMemcpy(ctypes.byref(loss), runtime.device_buffer, 4, 2)  # MARK cudaMemcpy copy_coro
    count("copy_coro")
    return loss.value


async def coro_middle(runtime, depth):
    if depth:
        return await coro_middle(runtime, depth - 1)
    return await copy_coro(runtime)


async def coro_outer(runtime, n):
    return await asyncio.gather(*(coro_middle(runtime, random.randint(0, 5)) for _ in range(n)))


def deep(runtime, n):
    if n == 0:
        runtime.launch(KERNEL_NS)
        runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize deep
        count("deep")
        return
    deep(runtime, n - 1)


def short_lived(runtime):
    runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize short_lived
    count("short_lived")


def make_closure(runtime):
    def closure():
        runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize make_closure.<locals>.closure
        count("make_closure.<locals>.closure")
    return closure


sync_lambda = lambda runtime: runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize <lambda>


def in_handler(runtime):
    try:
        raise ValueError("raised to be caught")
    except ValueError:
        runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize in_handler
        count("in_handler")
    finally:
        pass


def finalizer_gen(runtime):
    try:
        yield
    finally:
        if not stopping:
            runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize finalizer_gen
            count("finalizer_gen")


class Finalized:
    """In a reference cycle: its __del__ runs in the cyclic gc, on whichever thread collects."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.cycle = self

    def __del__(self):
        if not stopping:
            self.runtime.rt.cudaStreamSynchronize(None)  # MARK cudaStreamSynchronize Finalized.__del__
            count("Finalized.__del__")


def dynamic_call(runtime, i):
    namespace = {}
    exec(compile(DYNAMIC_SOURCE, "<dynamic-%d>" % i, "exec"), namespace)
    namespace["dyn"](runtime)
    count("dyn")


# ---- the callers --------------------------------------------------------------------------------

def generator_and_coroutine_caller(runtime):
    while running():
        drive_gen(runtime)
        asyncio.run(coro_outer(runtime, random.randint(1, 4)))
        make_closure(runtime)()
        sync_lambda(runtime)
        count("<lambda>")
        in_handler(runtime)
        gen = finalizer_gen(runtime)
        next(gen)
        del gen  # closed here, by its last reference going
        time.sleep(PACE_S)


def generator_in_cycle(runtime):
    gen = finalizer_gen(runtime)
    next(gen)
    holder = [gen]
    holder.append(holder)  # only the cyclic gc frees it, on whichever thread collects


def deep_caller(runtime):
    i = 0
    while running():
        depth = random.randint(0, 2 * CUT_DEPTH)
        with made_lock:
            depths["cut" if depth >= CUT_DEPTH else "whole" if depth <= WHOLE_DEPTH else "between"] += 1
        deep(runtime, depth)
        Finalized(runtime)
        generator_in_cycle(runtime)
        i += 1
        if i % 10 == 0:
            dynamic_call(runtime, i)
        time.sleep(PACE_S)


def thread_spawner(runtime):
    while running():
        threads = [threading.Thread(target=short_lived, args=(runtime,)) for _ in range(random.randint(1, 3))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(PACE_S)


# ---- the churn ----------------------------------------------------------------------------------

class Churned(Exception):
    pass


def churn_recurse(n, keep):
    if n == 0:
        if random.random() < 0.3:
            raise Churned(n)
        keep.append(sys._getframe())  # a frame object outliving its call
        return 0
    try:
        return churn_recurse(n - 1, keep) + 1
    except Churned as e:
        if random.random() < 0.5:
            raise
        keep.append(e.__traceback__)  # its frames stay alive with it
        return -1


def churn_generators():
    def inner(n):
        for i in range(n):
            received = yield i
            if received:
                yield received

    def outer(n):
        yield from inner(n)
        yield from (x * 2 for x in range(n))

    total = 0
    gens = [outer(random.randint(1, 20)) for _ in range(10)]
    for g in gens:
        try:
            total += next(g)
            g.send(1)
            if random.random() < 0.3:
                g.throw(Churned(total))
        except (StopIteration, Churned):
            pass
        if random.random() < 0.5:
            g.close()
    return total + sum(x for x in range(50) if x % 3)


async def churn_async_leaf(n):
    for _ in range(n):
        await asyncio.sleep(0)
    if n % 7 == 0:
        raise Churned(n)
    return n


async def churn_async_agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


async def churn_async():
    results = await asyncio.gather(*(churn_async_leaf(random.randint(0, 10)) for _ in range(20)),
                                   return_exceptions=True)
    async for _ in churn_async_agen(5):
        pass
    task = asyncio.ensure_future(churn_async_leaf(100))
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Churned):
        pass
    return results


def churn_thread_body(out):
    try:
        out.append(churn_recurse(random.randint(0, 30), []))
    except Churned:
        pass


def churn_threads():
    out = []
    threads = [threading.Thread(target=churn_thread_body, args=(out,)) for _ in range(random.randint(1, 4))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def churn_closures():
    adders = [(lambda k: (lambda x: x + k))(k) for k in range(20)]
    value = functools.reduce(lambda a, f: f(a), adders, 0)
    return sorted(range(100), key=lambda x: (x * 7919) % 101)[0] + value


def churn(seed):
    rng = random.Random(seed)
    keep = []
    i = 0
    while running():
        choice = rng.randrange(6)
        try:
            if choice == 0:
                churn_recurse(rng.randint(0, 200), keep)
            elif choice == 1:
                churn_generators()
            elif choice == 2:
                asyncio.run(churn_async())
            elif choice == 3:
                churn_threads()
            elif choice == 4:
                churn_closures()
            else:
                exec(compile("def f%d(x):\n    return [y for y in range(x)]\n" % i, "<churn>", "exec"), {})
        except Churned:
            pass
        if len(keep) > 200:
            del keep[:]  # frames and tracebacks torn down
        i += 1
        if i % 50 == 0:
            gc.collect()


def main():
    global deadline, stopping
    simlib, seconds, summary = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    sys.setswitchinterval(0.0005)  # the GIL changes hands often: frames come and go between calls
    runtime = Runtime(simlib)
    start = time.monotonic()
    deadline = start + seconds
    threads = [threading.Thread(target=churn, args=(s,), name="churn-%d" % s) for s in range(2)]
    threads += [threading.Thread(target=generator_and_coroutine_caller, args=(runtime,), name="gen-coro"),
                threading.Thread(target=deep_caller, args=(runtime,), name="deep"),
                threading.Thread(target=thread_spawner, args=(runtime,), name="spawner")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    gc.collect()
    stopping = True
    with open(summary, "w") as f:
        json.dump({"made": dict(made), "depths": dict(depths), "cut_depth": CUT_DEPTH, "whole_depth": WHOLE_DEPTH,
                   "dynamic": {"function": "dyn", "line": 2, "file_prefix": "<dynamic-"},
                   "seconds": time.monotonic() - start}, f)


if __name__ == "__main__":
    main()
