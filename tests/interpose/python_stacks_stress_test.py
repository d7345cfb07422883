"""Python stacks under churn: for a minute (GAPWATCH_PY_STRESS_SECONDS, default 60), threads make
and tear down frames, generators, coroutines, threads, exceptions and code objects while three
others make blocking calls from marked lines in generators, coroutines, a recursion deeper than 48
frames, short-lived threads, closures, finalizers run by the gc and freshly compiled code
(python_stacks_stress_prog.py). The job must end as it would without gapwatch (exit 0, no crash,
no hang), and every call recorded must either carry a stack whose innermost frame is its marked
line, every frame of it at a line inside the function it names, or carry none with a miss counted,
and misses must be rare; `gapwatch report` reads the recording and shows the misses as the drops
say.

By hand: GAPWATCH_PY_STRESS_SECONDS=10 (shorter), GAPWATCH_PY_STRESS_PYTHON=/path/to/python3.X
(another interpreter; /usr/bin/python3 by default). Nothing checked depends on timing: how many
calls the job makes in its time, how often the gc runs or a launch follows 10 ms of host time all
vary with the machine's speed and load, and every check holds whatever they are."""
import ast
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import gwtest
from python_stacks_test import PYTHON_STACK_SOURCE, SIMLIB, call_lines, interpreter_version, marks

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "python_stacks_stress_prog.py")
RUNTIME_PROG = os.path.join(HERE, "python_stacks_prog.py")  # whose Runtime the stress program uses
SECONDS = float(os.environ.get("GAPWATCH_PY_STRESS_SECONDS", "60"))
PYTHON = os.environ.get("GAPWATCH_PY_STRESS_PYTHON", "/usr/bin/python3")
MAX_FRAMES = 48  # kMaxPythonFrames (interpose/python_stack.h): a deeper stack ends in the cut line
CUT_LINE = "...\t\t0"
# Misses allowed, as a share of the calls that were to carry a stack. The calling thread's own
# frames cannot change during its call, so a miss would need a value that fails a check; a few in
# a million calls is what "rare" means here, 1 in 1000 is the line no run should come near.
MAX_MISS_SHARE = 0.001
# The caller of each marked site's frame, and the callee whose call is on the caller's line:
# (caller's qualified name, callee name in call_lines), or None where any caller may be (a
# finalizer runs in whichever frame dropped the last reference or ran the gc).
CALLERS = {
    "sync_gen": ("drive_gen", "next"),
    "copy_coro": ("coro_middle", "copy_coro"),
    "short_lived": ("Thread.run", None),
    "make_closure.<locals>.closure": ("generator_and_coroutine_caller", "make_closure"),
    "<lambda>": ("generator_and_coroutine_caller", "sync_lambda"),
    "in_handler": ("generator_and_coroutine_caller", "in_handler"),
    "deep": None,  # deep itself, or deep_caller: checked apart
    "finalizer_gen": None,
    "Finalized.__del__": None,
}


def short_name(qualname, minor):
    return qualname if minor >= 11 else qualname.rsplit(".", 1)[-1]  # 3.10: co_name, no co_qualname


class SourceScopes:
    """For a Python source file: the qualified names of the scopes that contain each line (functions,
    classes, lambdas, comprehensions, and the module), as CPython names their code objects."""

    def __init__(self):
        self.cache = {}

    def enclosing(self, path, line):
        if path not in self.cache:
            self.cache[path] = self.parse(path)
        count, scopes = self.cache[path]
        if count is None:
            return None  # not a file we can read: not checked
        if not 1 <= line <= count:
            return set()
        return {"<module>"} | {q for start, end, q in scopes if start <= line <= end}

    @staticmethod
    def parse(path):
        if not (path.endswith(".py") and os.path.isfile(path)):
            return None, []
        with open(path, encoding="utf-8", errors="replace") as f:
            source = f.read()
        tree = ast.parse(source, path)
        scopes = []
        names = {ast.Lambda: "<lambda>", ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>",
                 ast.DictComp: "<dictcomp>", ast.GeneratorExp: "<genexpr>"}
        inlined = (ast.ListComp, ast.SetComp, ast.DictComp)  # 3.12+ (PEP 709): no scope of their own

        # A scope's prefix for what it contains: "f.<locals>." in a function or lambda, "C." in a
        # class, "f.<locals>.<listcomp>." in a comprehension (CPython adds <locals> after functions
        # only). Prefixes are sets: an inlined comprehension's contents are also named without it.
        def visit(node, prefixes):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or type(child) in names:
                    name = names.get(type(child)) or child.name
                    qualnames = {p + name for p in prefixes}
                    start = min([child.lineno] + [d.lineno for d in getattr(child, "decorator_list", [])])
                    for q in qualnames:
                        scopes.append((start, child.end_lineno, q))
                    if isinstance(child, ast.ClassDef) or type(child) in (ast.ListComp, ast.SetComp, ast.DictComp,
                                                                          ast.GeneratorExp):
                        inner = {q + "." for q in qualnames}
                    else:
                        inner = {q + ".<locals>." for q in qualnames}
                    if isinstance(child, inlined):
                        inner |= prefixes
                    visit(child, inner)
                else:
                    visit(child, prefixes)

        visit(tree, {""})
        return source.count("\n") + 1, scopes


def parse_stack(text):
    """(frames as (function, file, line), whether the stack was cut at its depth limit)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    cut = bool(lines) and lines[-1] == CUT_LINE
    if cut:
        lines.pop()
    frames = []
    for l in lines:
        parts = l.split("\t")
        if len(parts) != 3 or not parts[2].isdigit():
            raise AssertionError("a malformed line %r in the stack %r" % (l, text))
        frames.append((parts[0], parts[1], int(parts[2])))
    return frames, cut


class PythonStacksStress(unittest.TestCase):
    maxDiff = None

    def test_blocking_calls_while_frames_churn(self):
        if not os.access(PYTHON, os.X_OK):
            self.fail("%s is missing" % PYTHON)
        major, minor = interpreter_version(PYTHON)
        self.assertTrue(major == 3 and 10 <= minor <= 14, "%s is %d.%d: no layout for it" % (PYTHON, major, minor))
        sites = {(api, function): line for api, function, line in marks(PROG)}
        prog_calls = call_lines(PROG)
        runtime_calls = call_lines(RUNTIME_PROG)
        launch_line = min(runtime_calls[("Runtime.launch", "cudaLaunchKernel")])
        malloc_line = min(runtime_calls[("Runtime.__init__", "cudaMalloc")])
        scopes = SourceScopes()

        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "stress.gwt")
            summary_path = os.path.join(d, "summary.json")
            started = time.monotonic()
            # The bound only catches a hang: the job stops itself after SECONDS.
            r = gwtest.run([PYTHON, PROG, SIMLIB, str(SECONDS), summary_path], gwtest.gapwatch_env("preload", out),
                           timeout=4 * SECONDS + 300, cwd=d)
            ran = time.monotonic() - started
            self.assertEqual(r.returncode, 0, "the job failed (%d): %s" % (r.returncode, r.stderr[-4000:]))
            self.assertNotIn("Traceback", r.stderr)
            with open(summary_path) as f:
                summary = json.load(f)
            made = summary["made"]
            dynamic = summary["dynamic"]

            started = time.monotonic()
            stacks, calls, misses, hello, goodbye = self.read_recording(out)
            read_s = time.monotonic() - started

            started = time.monotonic()
            report = subprocess.run([gwtest.GAPWATCH, "report", out], capture_output=True, text=True, timeout=600)
            self.assertEqual(report.returncode, 0, report.stderr)
            report_json = subprocess.run([gwtest.GAPWATCH, "report", "--json", out], capture_output=True, text=True,
                                         timeout=600)
            self.assertEqual(report_json.returncode, 0, report_json.stderr)
            report_s = time.monotonic() - started

        self.assertEqual((goodbye["exit_reason"], goodbye["exit_status"]), ("normal", 0))
        self.assertEqual(hello["pid"] > 0, True)

        # Every stack recorded: well formed, cut only at the limit, each frame of a readable source
        # file at a line inside the function it names.
        checked = {}
        for sid, text in stacks.items():
            frames, cut = parse_stack(text)
            self.assertTrue(frames, "stack %d is empty" % sid)
            self.assertLessEqual(len(frames), MAX_FRAMES, text)
            if cut:
                self.assertEqual(len(frames), MAX_FRAMES, "cut before the limit: %r" % text)
            for function, path, line in frames:
                # Line 0: not known. CPython itself has no line for a module's first instruction
                # (RESUME, 3.11+), where 3.12+ runs the gc (a finalizer's call then has that
                # module's frame under it); every function's instructions have one.
                self.assertTrue(function and path and (line > 0 or function == "<module>"),
                                "stack %d: frame %r: %r" % (sid, (function, path, line), text))
                if line == 0:
                    continue
                enclosing = scopes.enclosing(path, line)
                if enclosing is None:
                    continue
                self.assertIn(function, {short_name(q, minor) for q in enclosing},
                              "stack %d: %s:%d is not in %s: %r" % (sid, path, line, function, text))
            checked[sid] = (frames, cut)

        # Every call: its innermost frame is the marked line of its site (or the runtime's own
        # launch / malloc line, the compiled function's line), or it has no stack.
        recorded = collections.Counter()
        without_stack = collections.Counter()
        cut_deep = whole_deep = 0
        for name, sid, kind in calls:
            if not sid:
                without_stack[name] += 1
                continue
            self.assertIn(sid, checked, "a call names stack %d, which the recording does not define" % sid)
            frames, cut = checked[sid]
            function, path, line = frames[0]
            if name == "cudaLaunchKernel":
                self.assertEqual(frames[0], (short_name("Runtime.launch", minor), RUNTIME_PROG, launch_line))
                continue
            if name == "cudaMalloc":
                self.assertEqual(frames[0], (short_name("Runtime.__init__", minor), RUNTIME_PROG, malloc_line))
                continue
            if path.startswith(dynamic["file_prefix"]):
                self.assertEqual((function, line), (dynamic["function"], dynamic["line"]), frames)
                recorded[dynamic["function"]] += 1
                continue
            site = [f for (api, f), l in sites.items() if api == name and (short_name(f, minor), PROG, l) == frames[0]]
            self.assertEqual(len(site), 1, "a %s whose innermost frame %r is no marked line of it" % (name, frames[0]))
            site = site[0]
            recorded[site] += 1
            if site == "deep":
                # deep at its call, deep at its recursive call, ..., then deep_caller, threading's
                # frames, as far as the limit of 48 frames lets them in.
                recursion = prog_calls[("deep", "deep")]
                n = 1
                while n < len(frames) and frames[n][0] == "deep":
                    self.assertIn(frames[n][2], recursion, frames)
                    n += 1
                if n < len(frames):
                    self.assertEqual(frames[n][0], "deep_caller", frames)
                    self.assertIn(frames[n][2], prog_calls[("deep_caller", "deep")], frames)
                else:
                    self.assertTrue(cut, frames)  # deep all the way: only where the stack was cut
                if cut:
                    cut_deep += 1
                else:
                    whole_deep += n - 1 <= summary["whole_depth"]
            elif CALLERS[site]:
                caller, callee = CALLERS[site]
                self.assertGreater(len(frames), 1, frames)
                self.assertEqual(frames[1][0], short_name(caller, minor), frames)
                if callee:
                    self.assertEqual(frames[1][1], PROG, frames)
                    self.assertIn(frames[1][2], prog_calls[(caller, callee)], frames)

        marked_apis = {api for api, _ in sites}
        made_total = sum(made.values())
        recorded_total = sum(recorded.values())
        missing = sum(n for name, n in without_stack.items() if name in marked_apis)
        miss_total = sum(misses.values())
        ring_drops = goodbye["events_dropped"]
        stats = {"interpreter": "%s (3.%d)" % (PYTHON, minor), "seconds": round(summary["seconds"], 1),
                 "job_s": round(ran, 1), "read_s": round(read_s, 1), "report_s": round(report_s, 1),
                 "calls_made": made_total, "with_stack": recorded_total, "without_stack": dict(without_stack),
                 "misses_by_id": misses, "ring_drops": ring_drops, "distinct_stacks": len(stacks),
                 "deep_cut": cut_deep, "deep_whole": whole_deep, "by_site": dict(recorded)}
        sys.stderr.write("\npython stacks stress: %s\n" % json.dumps(stats, sort_keys=True))

        # Every call the job made is in the recording (unless a full ring dropped it: counted), and
        # no site has more stacks than calls.
        for site, n in recorded.items():
            self.assertLessEqual(n, made.get(site, 0), "site %s: %d stacks, %d calls" % (site, n, made.get(site, 0)))
        recorded_calls = recorded_total + missing
        self.assertLessEqual(recorded_calls, made_total)
        self.assertGreaterEqual(recorded_calls + ring_drops, made_total, stats)
        # A call without a stack is a miss, counted under DROP_SOURCE_PYTHON_STACK; misses are rare.
        self.assertLessEqual(missing, miss_total, stats)
        self.assertLessEqual(miss_total, MAX_MISS_SHARE * made_total + 1, stats)
        # Not vacuous: every kind of site made calls and they were recorded with their stacks, the
        # deep recursion both cut at the limit and whole.
        for (api, function) in sites:
            self.assertGreater(recorded[function], 0, "no call of %s recorded with its stack" % function)
        self.assertGreater(recorded[dynamic["function"]], 0)
        if summary["depths"].get("cut"):
            self.assertGreater(cut_deep, 0, stats)
        if summary["depths"].get("whole"):
            self.assertGreater(whole_deep, 0, stats)

        # The report shows the misses as the recording counts them (a "py stacks" row when there
        # are any; report --json: python_stacks), and the calls that carried a stack.
        process = json.loads(report_json.stdout)["processes"][0]
        with_any_stack = sum(1 for _, sid, _ in calls if sid)
        if "python_stacks" in process:
            self.assertEqual(process["python_stacks"]["missed"], miss_total, process["python_stacks"])
            self.assertEqual(process["python_stacks"]["read"], with_any_stack, process["python_stacks"])
        row = re.search(r"^py stacks\s+([\d,]+) read, ([\d,]+) not", report.stdout, re.M)
        if miss_total:
            if row:
                self.assertEqual(int(row.group(2).replace(",", "")), miss_total, row.group(0))
                self.assertEqual(int(row.group(1).replace(",", "")), with_any_stack, row.group(0))
        else:
            self.assertIsNone(row, "a py stacks row with no miss: %s" % (row and row.group(0)))

    def read_recording(self, path):
        """The recording, streamed from gapwatch dump --json (a minute's is a few hundred MB): the
        Python stacks by id, every call as (name, python_stack_id, kind), the misses by id, Hello and
        Goodbye."""
        stacks, calls, misses = {}, [], {}
        hello = goodbye = None
        name_re = re.compile(r'"kind":"([^"]*)","name":"([^"]*)"')
        stack_re = re.compile(r'"python_stack_id":(\d+)')
        dump = subprocess.Popen([gwtest.GAPWATCH, "dump", "--json", path], stdout=subprocess.PIPE, text=True,
                                stderr=subprocess.PIPE)
        try:
            for line in dump.stdout:
                if line.startswith('{"type":"api_call"'):
                    kind, name = name_re.search(line).groups()
                    calls.append((name, int(stack_re.search(line).group(1)), kind))
                elif line.startswith('{"type":"activity"') or line.startswith('{"type":"batch"'):
                    continue
                else:
                    e = json.loads(line)
                    if e["type"] == "string" and e["kind"] == "python_stack":
                        stacks[e["id"]] = e["text"]
                    elif e["type"] == "drop" and e["source"] == PYTHON_STACK_SOURCE:
                        misses[e["id"]] = max(misses.get(e["id"], 0), e["dropped"])
                    elif e["type"] == "hello":
                        hello = e
                    elif e["type"] == "goodbye":
                        goodbye = e
                        for d in e["drops"]:
                            if d["source"] == PYTHON_STACK_SOURCE:
                                misses[d["id"]] = max(misses.get(d["id"], 0), d["dropped"])
        finally:
            dump.stdout.close()
            err = dump.stderr.read()
            dump.stderr.close()
            dump.wait(timeout=600)
        self.assertEqual(dump.returncode, 0, err)
        self.assertIsNotNone(hello)
        self.assertIsNotNone(goodbye, "the recording was not finished")
        return stacks, calls, misses, hello, goodbye


if __name__ == "__main__":
    gwtest.main(__name__)
