"""The Python sampler (interpose/python_sampler.h) on the simulated CUDA runtime, through ctypes
(python_sampler_prog.py):

- lines: a launching thread that stays out of CUDA in a Python busy loop and in a sleep is
  sampled there, each sample's stack naming the function and a line inside it, at the period
  asked for, and only after the threshold; GAPWATCH_PY_SAMPLING=0 gives no sample and no probe;
- busy: a thread that waits inside CUDA (the GPU-bound case) is not sampled;
- churn: a thread whose stack changes as fast as Python can change it, with threads starting and
  ending, sampled every 0.5 ms (GAPWATCH_PY_STRESS_SECONDS long, default 30; 10 s on each other
  interpreter installed) ends as it would without gapwatch, every sample's stack is whole (every
  frame a function, a file and a line inside that function, down to the module) or the sample has
  no stack and is counted under DROP_SOURCE_PYTHON_SAMPLE, one count each;
- every supported interpreter installed (3.10-3.13, python_stacks_test.py's list): the lines.

Nothing checked depends on the machine's speed: how many samples a run gets varies with it, and
every check holds whatever that is (a 30 ms stretch gets two or three samples at a 10 ms period;
the counts are checked against floors of a quarter of that, for a machine busy enough to make the
flusher's wake-ups late)."""
import collections
import os
import re
import sys
import tempfile
import unittest

import gwtest
from python_stacks_test import INTERPRETERS

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "python_sampler_prog.py")
PYTHON = "/usr/bin/python3"
STRESS_SECONDS = float(os.environ.get("GAPWATCH_PY_STRESS_SECONDS", "30"))
# DropCounter ids of DROP_SOURCE_PYTHON_SAMPLE (events.proto) for a sample sent without a stack:
# 1, 2 and 4 the stack misses, 5 a stack that changed while read, 6 a failed read; 7 (hand-over
# full) drops a sample altogether.
UNREAD_IDS = {1, 2, 4, 5, 6}
MAX_FRAMES = 48  # kMaxPythonFrames (interpose/python_stack.h): a deeper stack is cut there


def function_lines():
    """{function name: (first line, last line)} of python_sampler_prog.py, and "<module>": all."""
    import ast
    with open(PROG) as f:
        source = f.read()
    spans = {"<module>": (1, len(source.splitlines()))}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.GeneratorExp)):
            name = node.name if isinstance(node, ast.FunctionDef) else "<genexpr>"
            first, last = spans.get(name, (node.lineno, node.end_lineno))
            spans[name] = (min(first, node.lineno), max(last, node.end_lineno))
    return spans


def marked_lines(tag):
    with open(PROG) as f:
        return {n for n, line in enumerate(f, 1) if line.rstrip().endswith("# LINE " + tag)}


def record(mode, seconds, extra=None, python=PYTHON):
    out = tempfile.mkdtemp(prefix="gw-sampler-")
    path = os.path.join(out, "run.gwt")
    env = gwtest.gapwatch_env("preload", path, extra)
    r = gwtest.run([python, PROG, gwtest.SIMLIB, mode, str(seconds)], env, timeout=600)
    if r.returncode != 0:
        raise AssertionError("%s run exited %d: %s" % (mode, r.returncode, r.stderr[-2000:]))
    steps = int(re.search(r"steps (\d+)", r.stdout).group(1))
    return gwtest.dump(path), steps


def samples_of(events):
    return [e for e in events if e.get("type") == "python_sample"]


def sample_drops(events):
    """The latest total per id of DROP_SOURCE_PYTHON_SAMPLE (Goodbye's are the final ones)."""
    totals = {}
    for e in events:
        for d in ([e] if e.get("type") == "drop" else e.get("drops", []) if e.get("type") == "goodbye" else []):
            if d.get("source") == "python_sample":
                totals[d["id"]] = d["dropped"]
    return totals


class PythonSamplerTest(unittest.TestCase):
    def test_a_thread_out_of_cuda_is_sampled_where_it_is(self):
        events, steps = record("lines", 1.5)
        hello = next(e for e in events if e.get("type") == "hello")
        self.assertIn("python_sampler", hello.get("probes", []), hello)
        samples = samples_of(events)
        # Two 30 ms stretches a step; at a 10 ms period each gets two or three samples.
        self.assertGreaterEqual(len(samples), steps, "%d samples in %d steps" % (len(samples), steps))
        work, sleep = marked_lines("python_work"), marked_lines("sleep")
        where = collections.Counter()
        self.check_unread_are_counted_and_rare(events, samples)
        for s in samples:
            self.assertEqual(s["period_ns"], 10000000)
            stack = s.get("python_stack")
            if not stack:
                continue
            inner = stack[0]
            self.assertTrue(inner["file"].endswith("python_sampler_prog.py"), inner)
            if inner["function"] == "in_python_work":
                self.assertIn(inner["line"], work, inner)
            elif inner["function"] == "in_sleep":
                self.assertIn(inner["line"], sleep, inner)
            # The outermost frame is the program's own module.
            self.assertEqual(stack[-1]["function"], "<module>")
            where[inner["function"]] += 1
        # Both stretches are sampled, each in a good share of the steps.
        self.assertGreaterEqual(where["in_python_work"], steps // 4, where)
        self.assertGreaterEqual(where["in_sleep"], steps // 4, where)
        # Never inside the launch or the sync: the threshold is 1 ms after the last call's exit.
        calls = sorted((e["start_ns"], e["end_ns"]) for e in events if e.get("type") == "api_call")
        for s in samples:
            inside = [c for c in calls if c[0] <= s["time_ns"] <= c[1]]
            self.assertFalse(inside, "sampled inside a CUDA call: %s" % s)

    def check_unread_are_counted_and_rare(self, events, samples):
        """A sample read while the thread returned from one function into the next (the frame the
        walk began at is gone: reason 5) has no stack; in a quiet run that is the odd sample, and
        each is counted."""
        unread = [s for s in samples if s["python_stack_id"] == 0]
        drops = sample_drops(events)
        self.assertEqual(len(unread), sum(v for k, v in drops.items() if k in UNREAD_IDS), drops)
        self.assertLessEqual(len(unread), max(2, len(samples) // 20), "%d of %d samples unread: %s" %
                             (len(unread), len(samples), drops))

    def test_sampling_off_takes_no_sample_and_says_no_probe(self):
        events, _ = record("lines", 0.3, {"GAPWATCH_PY_SAMPLING": "0"})
        hello = next(e for e in events if e.get("type") == "hello")
        self.assertNotIn("python_sampler", hello.get("probes", []))
        self.assertEqual(samples_of(events), [])

    def test_the_period_is_settable(self):
        events, steps = record("lines", 0.6, {"GAPWATCH_PY_SAMPLE_MS": "2.5"})
        samples = samples_of(events)
        self.assertTrue(samples)
        self.assertTrue(all(s["period_ns"] == 2500000 for s in samples))

    def test_a_thread_waiting_inside_cuda_is_not_sampled(self):
        events, steps = record("busy", 1.0)
        self.assertGreater(steps, 10)
        # Between its first call and its last the thread is inside CUDA but for microseconds; after
        # the last, the interpreter's shutdown is host time like any other, and may be sampled.
        calls = [e for e in events if e.get("type") == "api_call"]
        first, last = min(c["start_ns"] for c in calls), max(c["end_ns"] for c in calls)
        during = [s for s in samples_of(events) if first <= s["time_ns"] <= last]
        self.assertEqual(during, [])

    def test_a_stack_changing_as_fast_as_python_can_is_read_whole_or_counted(self):
        self.check_churn(PYTHON, STRESS_SECONDS)

    def check_churn(self, python, seconds):
        events, steps = record("churn", seconds, {"GAPWATCH_PY_SAMPLE_MS": "0.5"}, python)
        samples = samples_of(events)
        self.assertGreater(len(samples), 100, "%d samples" % len(samples))
        unread = 0
        spans = function_lines()
        for s in samples:
            stack = s.get("python_stack")
            if s["python_stack_id"] == 0:
                unread += 1
                continue
            self.assertTrue(stack, s)
            for frame in stack:
                self.assertTrue(frame["function"], frame)
                self.assertTrue(frame["file"], frame)
                self.assertGreaterEqual(frame["line"], 0)
                # A frame of the program names a line inside the function it names: a line torn
                # from another frame, or kept from an earlier sample, would not be.
                if frame["file"] == PROG and frame["line"] != 0:  # 0: not known (python_stack.h)
                    name = frame["function"].split(".")[-1]
                    if name in spans:
                        first, last = spans[name]
                        self.assertTrue(first <= frame["line"] <= last, (frame, spans[name], stack))
            # A whole stack ends at the module; a deeper one is cut at the limit (and says so).
            if len(stack) < MAX_FRAMES:
                self.assertEqual(stack[-1]["function"], "<module>", [(f["function"], f["line"]) for f in stack])
        # A line not known is allowed (an instruction the line table gives none), but rare.
        lines = [f["line"] for s in samples for f in (s.get("python_stack") or [])]
        self.assertLess(lines.count(0), max(10, len(lines) // 1000), "lines not known: %d of %d" %
                        (lines.count(0), len(lines)))
        drops = sample_drops(events)
        counted = sum(v for k, v in drops.items() if k in UNREAD_IDS)
        self.assertEqual(unread, counted, "samples without a stack %d, counted %s" % (unread, drops))
        print("churn (%s): %d steps, %d samples, %d without a stack, drops %s" %
              (python, steps, len(samples), unread, drops))

    def check_lines(self, python):
        """A short lines run on `python`: each sample's innermost frame is one of the two
        functions, at a marked line."""
        events, steps = record("lines", 0.6, python=python)
        samples = samples_of(events)
        self.assertGreaterEqual(len(samples), steps // 2, "%d samples in %d steps" % (len(samples), steps))
        marked = {"in_python_work": marked_lines("python_work"), "in_sleep": marked_lines("sleep"),
                  "main": marked_lines("between")}
        self.check_unread_are_counted_and_rare(events, samples)
        spans = function_lines()
        off_mark = []
        for s in samples:
            stack = s.get("python_stack")
            if not stack:
                continue
            function, line = stack[0]["function"], stack[0]["line"]
            if stack[0]["file"] == PROG:
                self.assertIn(function, spans, stack)
                first, last = spans[function]
                self.assertTrue(first <= line <= last, (stack[0], spans[function], stack))
            self.assertEqual(stack[-1]["function"], "<module>", stack)
            if line not in marked.get(function, ()):
                off_mark.append((function, line))
        # Off the marked lines is a true place to find the thread when the scheduler took it off
        # the CPU there for longer than the 1 ms the sampler waits (CI on a loaded machine did
        # so: in the loop between one call and the next, on in_python_work's return, in the
        # Python half of Runtime.launch). Those lines take microseconds, so they are the odd
        # sample; the rest are at the marks.
        self.assertLessEqual(len(off_mark), max(2, len(samples) // 10), "%d of %d samples off the marked lines: %s" %
                             (len(off_mark), len(samples), off_mark[:10]))


def add_interpreter_tests():
    """Every supported interpreter installed (python_stacks_test.INTERPRETERS): the lines, and
    10 s of churn (the system's python3 has its 30 s above)."""
    for key, python, required in INTERPRETERS:
        def lines(self, python=python, required=required):
            if not os.path.exists(python):
                if required:
                    self.fail("%s is missing" % python)
                self.skipTest("%s is not installed" % python)
            self.check_lines(python)
        lines.__name__ = "test_lines_%s" % key
        setattr(PythonSamplerTest, lines.__name__, lines)
        if key == "system":
            continue

        def churn(self, python=python):
            if not os.path.exists(python):
                self.skipTest("%s is not installed" % python)
            self.check_churn(python, min(STRESS_SECONDS, 10))
        churn.__name__ = "test_churn_%s" % key
        setattr(PythonSamplerTest, churn.__name__, churn)


add_interpreter_tests()

if __name__ == "__main__":
    gwtest.main("python_sampler_test")
