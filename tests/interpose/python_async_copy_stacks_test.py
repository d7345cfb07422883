"""A Python stack only at the async copies that can block the host (issue 36, item 4): a walk costs
5-11 us on the launching thread, and an async copy that only enqueues (device to device, or its
host side pinned) waits for nothing, so a stack there is cost in the middle of the host's launch
stream, for no sync site. python_async_copy_stacks_prog.py makes each kind of async copy on a line
that says what it expects (`# COPY <bytes> stack|none`, the bytes unique per line); the recording
must show the line's stack, innermost frame at that line, on every `stack` copy (pageable host
memory, host to host, memory after its unregistration), none on every `none` copy (device to
device, pinned by cudaMallocHost, cudaHostAlloc, cudaHostRegister, cuMemAllocHost or
cuMemHostRegister, a direction left to the pointers with the host side pinned), and no stack missed.
Under LD_PRELOAD (CUPTI, the runtime's and the driver's calls) and under CUDA_INJECTION64_PATH,
with GAPWATCH_PY_GAP_MS=0 (no stack for ending a stretch of host time, whatever the machine's
pauses). And a pinned copy made after 0.5 s out of CUDA, with GAPWATCH_PY_GAP_MS=100, carries its
stack, as a launch there would. Nothing here is timing: every expectation comes from the program's
source and the program's own pause, five times the rule's bound."""
import os
import re
import tempfile
import unittest

import gwtest

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "python_async_copy_stacks_prog.py")
PYTHON = "/usr/bin/python3"
COPY_KINDS = ("memcpy_async",)


def marked_copies():
    """{bytes: (line, 'stack' or 'none')} from the program's `# COPY <bytes> <expect>` comments."""
    found = {}
    with open(PROG) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"#\s*COPY\s+(\d+)\s+(stack|none|after-pause)\s*$", text)
            if m:
                assert int(m.group(1)) not in found, "bytes %s marked twice" % m.group(1)
                found[int(m.group(1))] = (number, m.group(2))
    assert found, "no COPY comment in %s" % PROG
    return found


def stack_misses(events):
    misses = {}
    for e in events:
        if e["type"] == "drop" and e["source"] == "python_stack":
            misses[e["id"]] = max(misses.get(e["id"], 0), e["dropped"])
        if e["type"] == "goodbye":
            for d in e["drops"]:
                if d["source"] == "python_stack":
                    misses[d["id"]] = max(misses.get(d["id"], 0), d["dropped"])
    return {k: v for k, v in misses.items() if v}


def record(mode, args=(), extra=None):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.gwt")
        r = gwtest.run([PYTHON, PROG, os.path.abspath(gwtest.SIMLIB)] + list(args), gwtest.gapwatch_env(mode, out, extra),
                       cwd=d)
        if r.returncode != 0:
            raise AssertionError("the program failed (%d): %s" % (r.returncode, r.stderr))
        return gwtest.dump(out)


class AsyncCopyStacks(unittest.TestCase):
    def check(self, mode):
        marks = {b: m for b, m in marked_copies().items() if m[1] != "after-pause"}
        events = record(mode, extra={"GAPWATCH_PY_GAP_MS": "0"})
        copies = [e for e in events if e["type"] == "api_call" and e["kind"] in COPY_KINDS]
        seen, wrong = {}, []
        for c in copies:
            if c["bytes"] not in marks:
                wrong.append("%s of %d bytes: no copy of the program's moves that many" % (c["name"], c["bytes"]))
                continue
            line, expect = marks[c["bytes"]]
            seen[c["bytes"]] = seen.get(c["bytes"], 0) + 1
            stack = c.get("python_stack") or []
            if expect == "none" and stack:
                wrong.append("%s (%d bytes, line %d) has a stack, and it only enqueues" % (c["name"], c["bytes"], line))
            elif expect == "stack" and not stack:
                wrong.append("%s (%d bytes, line %d) has no stack, and it can block" % (c["name"], c["bytes"], line))
            elif expect == "stack" and (stack[0]["line"] != line or stack[0]["file"] != PROG):
                wrong.append("%s (%d bytes) has its stack at %s:%d, not line %d" %
                             (c["name"], c["bytes"], stack[0]["file"], stack[0]["line"], line))
        missing = ["%d bytes (line %d) not recorded" % (b, marks[b][0]) for b in sorted(marks) if b not in seen]
        problems = sorted(set(wrong)) + missing
        if problems:
            self.fail("%d async copies wrong:\n  %s" % (len(wrong) + len(missing), "\n  ".join(problems)))
        self.assertEqual(stack_misses(events), {}, "stacks missed")
        # The other blocking calls still carry theirs: the closing stream syncs.
        syncs = [e for e in events if e["type"] == "api_call" and e["name"] == "cudaStreamSynchronize"]
        self.assertTrue(syncs and all(s.get("python_stack") for s in syncs), syncs)

    def test_preload(self):
        self.check("preload")

    def test_injection(self):
        self.check("injection")

    def test_a_pinned_copy_after_a_long_host_stretch_has_its_stack(self):
        (nbytes, (line, _)), = [(b, m) for b, m in marked_copies().items() if m[1] == "after-pause"]
        events = record("preload", ["--after-pause", "0.5"], {"GAPWATCH_PY_GAP_MS": "100"})
        copies = [e for e in events if e["type"] == "api_call" and e["kind"] in COPY_KINDS and e["bytes"] == nbytes]
        self.assertEqual(len(copies), 1, copies)
        stack = copies[0].get("python_stack") or []
        self.assertTrue(stack, "the copy after 0.5 s out of CUDA has no stack: %s" % copies[0])
        self.assertEqual((stack[0]["file"], stack[0]["line"]), (PROG, line), stack)
        self.assertEqual(stack_misses(events), {}, "stacks missed")


if __name__ == "__main__":
    gwtest.main("python_async_copy_stacks_test")
