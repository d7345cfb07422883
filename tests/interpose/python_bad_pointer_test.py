"""A pointer to nowhere in the interpreter's memory costs the stack, never the process (issue 36,
item 2): a blocking call whose frame's code object names its file through a pointer to unmapped
memory (python_bad_pointer_prog.py) ends normally on every supported interpreter installed (3.14: scripts/fetch-python314.sh); that
call has no stack and counts miss 7 (an object outside every readable mapping), and the calls
around it have theirs. Before every read of the calling thread's interpreter memory was checked
(readable_ranges.h), the walk loaded through that pointer and the job died of SIGSEGV."""
import os
import tempfile
import unittest

import gwtest

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "python_bad_pointer_prog.py")
PYENV = "/root/.pyenv/versions"
INTERPRETERS = [("system", "/usr/bin/python3", True), ("3_10", PYENV + "/3.10.13/bin/python3.10", False),
                ("3_11", PYENV + "/3.11.7/bin/python3.11", False), ("3_12", PYENV + "/3.12.1/bin/python3.12", False),
                ("3_13", PYENV + "/3.13.0/bin/python3.13", False),
                ("3_14", os.path.join(os.path.abspath(gwtest.BUILD), "python3.14", "python3.14"), False)]
MISS_OUTSIDE_MAPPINGS = 7  # DROP_SOURCE_PYTHON_STACK id (events.proto)


def marked_line(tag):
    with open(PROG) as f:
        return next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# LINE " + tag))


class PythonBadPointer(unittest.TestCase):
    def check(self, python, required):
        if not os.access(python, os.X_OK):
            if required:
                self.fail("%s is missing: it is required" % python)
            self.skipTest("%s not installed" % python)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            r = gwtest.run([python, PROG, os.path.abspath(gwtest.SIMLIB)], gwtest.gapwatch_env("preload", out),
                           timeout=120, cwd=d)
            self.assertEqual(r.returncode, 0, "the job did not end normally (%d): %s" % (r.returncode, r.stderr[-2000:]))
            events = gwtest.dump(out)
        syncs = [e for e in events if e.get("type") == "api_call" and e.get("name") == "cudaDeviceSynchronize"]
        self.assertEqual(len(syncs), 3, syncs)
        tops = [(s["python_stack"] or [{}])[0].get("line") for s in syncs]
        self.assertEqual(tops, [marked_line("plain"), None, marked_line("plain")], syncs)
        misses = {}
        for e in events:
            for d in [e] if e.get("type") == "drop" else e.get("drops", []) if e.get("type") == "goodbye" else []:
                if d.get("source") == "python_stack":
                    misses[d["id"]] = max(misses.get(d["id"], 0), d["dropped"])
        self.assertEqual(misses, {MISS_OUTSIDE_MAPPINGS: 1}, misses)


for key, python, required in INTERPRETERS:
    def test(self, python=python, required=required):
        self.check(python, required)
    test.__name__ = "test_a_pointer_to_nowhere_costs_the_stack_not_the_process_%s" % key
    setattr(PythonBadPointer, test.__name__, test)

if __name__ == "__main__":
    gwtest.main("python_bad_pointer_test")
