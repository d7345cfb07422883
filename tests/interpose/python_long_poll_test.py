"""A polling loop longer than the recorder once kept an unclaimed Python stack (two flushes, about
100 ms): the loop's record, published when the loop ends, still carries the stack posted at its
first not-ready poll, naming the polling line, and no stack is lost uncounted (issue 36, item 3).
The kernel runs 0.6 s, six times what the old bound kept, on any machine: nothing here is timing."""
import os
import tempfile
import unittest

import gwtest

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "python_long_poll_prog.py")
PYTHON = "/usr/bin/python3"


def poll_line():
    with open(PROG) as f:
        return next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# LINE poll"))


class PythonLongPoll(unittest.TestCase):
    def test_a_long_polling_loop_keeps_its_stack(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.gwt")
            r = gwtest.run([PYTHON, PROG, os.path.abspath(gwtest.SIMLIB), "0.6"], gwtest.gapwatch_env("preload", out),
                           timeout=120, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            events = gwtest.dump(out)
            polls = [e for e in events if e.get("type") == "api_call" and e.get("name") == "cudaStreamQuery"]
            self.assertTrue(polls, "no cudaStreamQuery record")
            stack = polls[0].get("python_stack") or []
            self.assertTrue(stack, "the poll loop's record has no Python stack: %s" % polls[0])
            self.assertEqual(stack[0]["function"], "wait_by_polling", stack)
            self.assertEqual(stack[0]["line"], poll_line(), stack)


if __name__ == "__main__":
    gwtest.main("python_long_poll_test")
