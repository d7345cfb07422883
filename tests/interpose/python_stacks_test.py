"""The Python stack of the calling thread at every blocking CUDA call (interpose/python_stack.cpp),
read from CPython's memory on every supported interpreter (3.10-3.14) that is installed: a job
(python_stacks_prog.py) whose blocking calls are made on lines marked `# MARK <api> <function>`,
with a second thread and a worker forked before CUDA is first used, under LD_PRELOAD and under
CUDA_INJECTION64_PATH alone, has each of those calls recorded with its whole stack, innermost frame
first, at the marked line, and no miss counted; `gapwatch profile` names the marked lines as its
sync sites. A C++ program gets no stack and no miss; a Python without a layout (3.9) gets no stack
and a miss counted as an unknown version on every call that should have had one.

Nothing here depends on timing: every expectation comes from the program's source (its MARK
comments, its calls by ast, its step counts) and from which calls wait by their semantics."""
import ast
import atexit
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import gwtest

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "python_stacks_prog.py")
SIMLIB = os.path.abspath(gwtest.SIMLIB)
PYENV = "/root/.pyenv/versions"
# (name in the test's name, interpreter, required): the system's python3 (Debian's 3.11, which
# links libpython into the executable) must be there; pyenv's builds (a libpython3.X.so each) are
# checked when installed.
INTERPRETERS = [
    ("system", "/usr/bin/python3", True),
    ("3_10", PYENV + "/3.10.13/bin/python3.10", False),
    ("3_11", PYENV + "/3.11.7/bin/python3.11", False),
    ("3_12", PYENV + "/3.12.1/bin/python3.12", False),
    ("3_13", PYENV + "/3.13.0/bin/python3.13", False),
    # Debian unstable's 3.14 (libpython linked statically), unpacked by scripts/fetch-python314.sh.
    ("3_14", os.path.join(os.path.abspath(gwtest.BUILD), "python3.14", "python3.14"), False),
]
UNSUPPORTED_PYTHON = PYENV + "/3.9.18/bin/python3.9"  # a CPython gapwatch has no layout for

# DROP_SOURCE_PYTHON_STACK as gapwatch dump names it, and its DropCounter ids (events.proto).
PYTHON_STACK_SOURCE = "python_stack"
MISS_UNKNOWN_VERSION = 1
# The report's sync type of each marked API (report --json: sync_points[].type).
SYNC_TYPE = {"cudaDeviceSynchronize": "device_sync", "cudaStreamSynchronize": "stream_sync",
             "cudaMemcpy": "sync_copy"}
HANG_BOUND_S = 120  # only bounds a run that hangs: each run here takes well under a second


# ---- what the program's source says -------------------------------------------------------------

def marks(path):
    """[(api, function, line)] of the `# MARK <api> <function>` comments of a program."""
    found = []
    with open(path) as f:
        for number, text in enumerate(f, 1):
            m = re.search(r"#\s*MARK\s+(\w+)\s+(\S+)\s*$", text)
            if m:
                found.append((m.group(1), m.group(2), number))
    if not found:
        raise AssertionError("no MARK comment in %s" % path)
    return found


def call_lines(path):
    """{(caller qualified name, callee name): set of lines} of every call in a program, the module's
    own code as "<module>", a callee by its last name (`runtime.rt.cudaMalloc(...)`: cudaMalloc)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    calls = {}

    def visit(node, scope, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = prefix + child.name
                visit(child, inner, inner + ("." if isinstance(child, ast.ClassDef) else ".<locals>."))
                continue
            if isinstance(child, ast.Call):
                f = child.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name:
                    calls.setdefault((scope, name), set()).add(child.lineno)
            visit(child, scope, prefix)

    visit(tree, "<module>", "")
    return calls


def load_prog():
    spec = importlib.util.spec_from_file_location("python_stacks_prog", PROG)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines only: main() runs under __main__ alone
    return module


def expected_counts(threads=True, fork=True):
    """(parent's, child's) {(api, marked function): calls}, from the program's step counts: even
    train steps read the loss, odd ones wait for the step."""
    prog = load_prog()
    parent = {("cudaMemcpy", "read_loss"): (prog.TRAIN_STEPS + 1) // 2,
              ("cudaDeviceSynchronize", "wait_for_step"): prog.TRAIN_STEPS // 2}
    if threads:
        parent[("cudaStreamSynchronize", "worker_thread")] = prog.WORKER_STEPS
    child = {("cudaDeviceSynchronize", "main"): prog.CHILD_STEPS} if fork else {}
    return parent, child


# ---- what a recording says ----------------------------------------------------------------------

def api_calls(events):
    return [e for e in events if e["type"] == "api_call"]


def stack_misses(events):
    """{DropCounter id: misses} of DROP_SOURCE_PYTHON_STACK: the Goodbye's totals, else the latest
    running totals of the batches (a recording cut short has no Goodbye)."""
    misses = {}
    for e in events:
        if e["type"] == "drop" and e["source"] == PYTHON_STACK_SOURCE:
            misses[e["id"]] = max(misses.get(e["id"], 0), e["dropped"])
    for e in events:
        if e["type"] == "goodbye":
            for d in e["drops"]:
                if d["source"] == PYTHON_STACK_SOURCE:
                    misses[d["id"]] = max(misses.get(d["id"], 0), d["dropped"])
    return misses


def one(events, kind):
    found = [e for e in events if e["type"] == kind]
    if len(found) != 1:
        raise AssertionError("%d %s events in the recording, not 1" % (len(found), kind))
    return found[0]


def interpreter_version(python):
    r = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                       text=True, timeout=HANG_BOUND_S)
    if r.returncode != 0:
        raise AssertionError("%s does not run: %s" % (python, r.stderr))
    return tuple(int(x) for x in r.stdout.split())


def run_prog(python, mode, output, workdir, args, extra=None):
    """Runs the program; returns (pid, stderr). Fails on a non-zero exit."""
    env = gwtest.gapwatch_env(mode, output, extra)
    p = subprocess.Popen([python, PROG, SIMLIB] + args, env=env, cwd=workdir, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=HANG_BOUND_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise AssertionError("%s hung (killed after %d s): %s" % (PROG, HANG_BOUND_S, err))
    if p.returncode != 0:
        raise AssertionError("%s %s exited %d: %s" % (python, " ".join(args), p.returncode, err))
    return p.pid, err


# ---- statically linked interpreters ------------------------------------------------------------
# Where libpython is linked into the executable (Ubuntu 22.04's python3.10, conda's, most
# containers' pythons) the file holding _PyRuntime is the program itself, named "python": its
# version must come from the interpreter, not from a file name (issue 36, item 1). Each pyenv
# version that ships its static libpython3.X.a and python.o is linked into such a program here.

_static_root = None


def pyenv_versions():
    """[(minor, version directory)] of the pyenv CPythons 3.x installed, by minor."""
    found = []
    for name in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else []:
        m = re.match(r"3\.(\d+)\.\d+$", name)
        if m and os.access(os.path.join(PYENV, name, "bin", "python3"), os.X_OK):
            found.append((int(m.group(1)), os.path.join(PYENV, name)))
    return sorted(found)


def static_interpreter(version_dir):
    """A CPython linked from version_dir's own libpython3.X.a and python.o into an executable named
    `python`, beside a `lib` that is the version's (so it finds its standard library as an
    installed one would). None where the version ships no static library."""
    global _static_root
    config = subprocess.run(
        [os.path.join(version_dir, "bin", "python3"), "-c",
         "import sysconfig as s; print('\\n'.join(s.get_config_var(k) or '' for k in "
         "('LIBPL', 'LIBRARY', 'LINKFORSHARED', 'LIBS', 'MODLIBS', 'SYSLIBS')))"],
        capture_output=True, text=True, timeout=HANG_BOUND_S)
    if config.returncode != 0:
        raise AssertionError("%s: sysconfig: %s" % (version_dir, config.stderr))
    libpl, library, *flags = config.stdout.split("\n")[:6]
    archive, main_object = os.path.join(libpl, library), os.path.join(libpl, "python.o")
    if not (library.endswith(".a") and os.path.isfile(archive) and os.path.isfile(main_object)):
        return None
    if _static_root is None:
        _static_root = tempfile.mkdtemp(prefix="gw-static-python-")
        atexit.register(shutil.rmtree, _static_root, True)
    prefix = os.path.join(_static_root, os.path.basename(version_dir))
    python = os.path.join(prefix, "bin", "python")
    if not os.path.exists(python):
        os.makedirs(os.path.dirname(python))
        os.symlink(os.path.join(version_dir, "lib"), os.path.join(prefix, "lib"))
        cmd = ["cc", main_object, archive] + " ".join(flags).split() + ["-o", python]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_BOUND_S)
        if r.returncode != 0:
            raise AssertionError("linking a static interpreter failed: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    return python


class PythonStacks(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.marks = marks(PROG)
        cls.calls = call_lines(PROG)
        cls.parent_counts, cls.child_counts = expected_counts()
        # Every marked line is expected somewhere and nothing unmarked is: the table and the
        # program agree.
        assert sorted(set(cls.parent_counts) | set(cls.child_counts)) == sorted((a, f) for a, f, _ in cls.marks), \
            "python_stacks_prog.py's MARK comments and expected_counts() disagree"

    def caller_lines(self, caller, callee):
        lines = self.calls.get((caller, callee))
        self.assertTrue(lines, "python_stacks_prog.py: no call of %s in %s" % (callee, caller))
        return lines

    def frame(self, function, line, minor):
        # 3.10's code objects have no co_qualname: its frames are named by co_name.
        return {"function": function if minor >= 11 else function.rsplit(".", 1)[-1], "file": PROG, "line": line}

    def expected_chain(self, function, line, minor):
        """The frames of the prog itself from a marked function outwards, each at the line of its
        call of the next: read_loss <- train_step <- main <- <module>. A worker thread's outer
        frames are threading.py's (checked apart)."""
        chain = [self.frame(function, line, minor)]
        callers = {"read_loss": "train_step", "wait_for_step": "train_step", "train_step": "main",
                   "main": "<module>", "Runtime.__init__": "main"}
        while function in callers:
            caller = callers[function]
            lines = self.caller_lines(caller, function.rsplit(".", 1)[0] if "." in function else function)
            chain.append((caller, lines))
            function = caller
        return chain

    def check_chain(self, stack, function, line, minor, what):
        expected = self.expected_chain(function, line, minor)
        self.assertEqual(len(stack), len(expected), "%s: %s" % (what, stack))
        self.assertEqual(stack[0], expected[0], what)
        for frame, (caller, lines) in zip(stack[1:], expected[1:]):
            self.assertEqual(frame["function"], caller, "%s: %s" % (what, stack))
            self.assertEqual(frame["file"], PROG, what)
            self.assertIn(frame["line"], lines, "%s: %s called from line %d, expected one of %s" %
                          (what, caller, frame["line"], sorted(lines)))

    def check_process(self, events, counts, minor, what):
        """Every call of a marked API in this recording has its marked line, with the whole chain
        of callers; each marked line has its number of calls; no miss."""
        calls = api_calls(events)
        marked_apis = {a for a, _, _ in self.marks}
        got = {}
        for c in calls:
            if c["name"] not in marked_apis:
                continue
            stack = c["python_stack"]
            self.assertTrue(stack, "%s: a %s with no Python stack: %s" % (what, c["name"], c))
            self.assertNotEqual(c["python_stack_id"], 0)
            top = stack[0]
            mark = [(a, f) for a, f, l in self.marks if a == c["name"] and self.frame(f, l, minor) == top]
            self.assertEqual(len(mark), 1,
                             "%s: %s's innermost frame %s is no marked line of it" % (what, c["name"], top))
            got[mark[0]] = got.get(mark[0], 0) + 1
            api, function = mark[0]
            if function == "worker_thread":
                self.assertEqual(stack[1]["function"], "Thread.run" if minor >= 11 else "run", what)
                self.assertTrue(all(f["file"].endswith("/threading.py") for f in stack[1:]), "%s: %s" % (what, stack))
            else:
                self.check_chain(stack, function, top["line"], minor, "%s, %s at %s" % (what, api, function))
        self.assertEqual(got, counts, "%s: calls by marked line" % what)

        # The start-up cudaMalloc: a qualified name (3.11+), in a method of a class.
        mallocs = [c for c in calls if c["name"] == "cudaMalloc"]
        self.assertEqual(len(mallocs), 1, what)
        malloc_line = min(self.caller_lines("Runtime.__init__", "cudaMalloc"))
        self.check_chain(mallocs[0]["python_stack"] or [], "Runtime.__init__", malloc_line, minor,
                         what + ", cudaMalloc")

        # Every stack recorded is whole: named frames at known lines.
        for c in calls:
            for f in c["python_stack"] or []:
                self.assertTrue(f["function"] and f["file"] and f["line"] > 0, "%s: %s" % (what, c))
        self.assertEqual(stack_misses(events), {}, "%s: Python stack misses" % what)
        bye = one(events, "goodbye")
        self.assertEqual((bye["exit_reason"], bye["exit_status"]), ("normal", 0), what)

    def record_job(self, python, mode, workdir, output_name, args, extra=None):
        """{"parent": (file name, pid, events), "child": (...)} of one run with --threads --fork:
        two recordings, the parent's the one whose Hello names the pid the job was started as."""
        pid, stderr = run_prog(python, mode, os.path.join(workdir, output_name), workdir,
                               ["--threads", "--fork"] + args, extra)
        recordings = {}
        for name in sorted(os.listdir(workdir)):
            if name.endswith(".gwt"):
                events = gwtest.dump(os.path.join(workdir, name))
                recordings[name] = events
        pids = {name: one(events, "hello")["pid"] for name, events in recordings.items()}
        self.assertEqual(len(recordings), 2, "%s: recordings %s; stderr: %s" % (mode, pids, stderr))
        parents = [n for n, p in pids.items() if p == pid]
        self.assertEqual(len(parents), 1, "%s: no recording of the parent (pid %d): %s" % (mode, pid, pids))
        child_name = next(n for n in pids if n != parents[0])
        return {"parent": (parents[0], pid, recordings[parents[0]]),
                "child": (child_name, pids[child_name], recordings[child_name])}

    def check_interpreter(self, python, required, mode):
        if not os.access(python, os.X_OK):
            if required:
                self.fail("%s is missing: it is required" % python)
            self.skipTest("%s not installed" % python)
        major, minor = interpreter_version(python)
        self.assertTrue(major == 3 and 10 <= minor <= 14,
                        "%s is %d.%d: not a version with a layout" % (python, major, minor))
        with tempfile.TemporaryDirectory() as d:
            if mode == "preload":
                # One fixed name: the forked worker gets its own, "-<pid>" before ".gwt"; it leaves by
                # os._exit(0), and the _exit hook still ends its recording.
                job = self.record_job(python, mode, d, "run.gwt", [])
                self.assertEqual(job["parent"][0], "run.gwt")
                self.assertEqual(job["child"][0], "run-%d.gwt" % job["child"][1])
            else:
                # No _exit hook without LD_PRELOAD: the worker leaves by sys.exit(0). %p in the name:
                # see test_injection_fixed_name_gives_the_forked_worker_its_own_file for one name.
                job = self.record_job(python, mode, d, "run-%p.gwt", ["--child-exit", "sys"])
                self.assertEqual(job["parent"][0], "run-%d.gwt" % job["parent"][1])
                self.assertEqual(job["child"][0], "run-%d.gwt" % job["child"][1])
            what = "%s (3.%d) %s" % (python, minor, mode)
            self.check_process(job["parent"][2], self.parent_counts, minor, what + ", parent")
            self.check_process(job["child"][2], self.child_counts, minor, what + ", forked worker")

    def test_injection_fixed_name_gives_each_process_its_own_file(self):
        # Under CUDA_INJECTION64_PATH alone the library is loaded after the fork, in each process:
        # neither knows of the other, so the file's lock decides. The first to open
        # GAPWATCH_OUTPUT=/dir/run.gwt writes it; the other, finding it locked, writes
        # /dir/run-<its pid>.gwt (which one wins is a race). The worker leaves by sys.exit: no
        # _exit hook here, a documented limit.
        with tempfile.TemporaryDirectory() as d:
            pid, stderr = run_prog("/usr/bin/python3", "injection", os.path.join(d, "run.gwt"), d,
                                   ["--threads", "--fork", "--child-exit", "sys"])
            files = sorted(n for n in os.listdir(d) if n.endswith(".gwt"))
            written = sorted(re.findall(r"recorded \d+ events to (\S+?);", stderr))
            self.assertEqual(len(files), 2, "files %s; the library wrote %s (parent pid %d)" % (files, written, pid))
            self.assertIn("run.gwt", files)
            other = next(n for n in files if n != "run.gwt")
            pids = {name: one(gwtest.dump(os.path.join(d, name)), "hello")["pid"] for name in files}
            self.assertEqual(other, "run-%d.gwt" % pids[other])
            self.assertIn(pid, pids.values())
            self.assertEqual(len(set(pids.values())), 2, pids)

    def test_profile_names_the_marked_lines_as_sync_sites(self):
        # gapwatch profile: LD_PRELOAD and a private collector; the report (--json on stdout, and
        # DIR/gapwatch-report.txt) lists each sync type's call sites by their Python stacks.
        python = "/usr/bin/python3"
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "profile")
            r = gwtest.run([gwtest.GAPWATCH, "profile", "-o", out, "--json", "--", python, PROG, SIMLIB,
                            "--threads", "--fork"], gwtest.gapwatch_env(None), timeout=HANG_BOUND_S, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            report = json.loads(r.stdout)
            with open(os.path.join(out, "gapwatch-report.txt")) as f:
                text = f.read()
        self.assertEqual(len(report["processes"]), 2, r.stderr)
        sites_of = []
        for proc in report["processes"]:
            sites = {}
            for sync in proc["sync_points"]:
                for site in sync["top_call_sites"]:
                    stack = site.get("python_stack")
                    self.assertTrue(stack, "a %s site with no Python stack: %s" % (sync["type"], site))
                    top = stack[0]
                    for api, function, line in self.marks:
                        if (top["function"], top["file"], top["line"]) == (function, PROG, line):
                            self.assertEqual(sync["type"], SYNC_TYPE[api], site)
                            sites[(api, function)] = site["count"]
            self.assertEqual(proc["drops"]["events_dropped"], 0)
            sites_of.append(sites)
        # One process is the parent, the other the forked worker; which is which, by their sites.
        self.assertCountEqual(sites_of, [self.parent_counts, self.child_counts])
        # The text report names the same sites: "interpose/python_stacks_prog.py:56 in wait_for_step".
        shown = os.path.join(os.path.basename(HERE), os.path.basename(PROG))
        for api, function, line in self.marks:
            self.assertIn("%s:%d in %s" % (shown, line, function), text)

    def test_a_cpp_program_gets_no_stack_and_no_miss(self):
        for mode in ("preload", "injection"):
            with self.subTest(mode=mode), tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "r.gwt")
                r = gwtest.run([gwtest.SIM, os.path.join(gwtest.SCENARIOS, "sync-bound.json"), "--quiet"],
                               gwtest.gapwatch_env(mode, out), timeout=HANG_BOUND_S, cwd=d)
                self.assertEqual(r.returncode, 0, r.stderr)
                events = gwtest.dump(out)
                calls = api_calls(events)
                # Not vacuous: calls that would carry a stack in a Python process were made.
                self.assertGreater(sum(1 for c in calls if c["blocked"]), 100)
                self.assertEqual([c for c in calls if c["python_stack"] or c["python_stack_id"]], [])
                self.assertEqual([e for e in events if e["type"] == "string" and e["kind"] == "python_stack"], [])
                self.assertEqual(stack_misses(events), {})

    def test_an_interpreter_without_a_layout_gets_no_stack_and_a_miss_per_call(self):
        # 3.9: found (libpython3.9.so's _PyRuntime, its version from Py_GetVersion()) but with no
        # layout: PythonStackMiss::kUnknownVersion, DropCounter id 1, on every call that should
        # have carried a stack, in the parent, its thread and the forked worker.
        if not os.access(UNSUPPORTED_PYTHON, os.X_OK):
            self.skipTest("%s not installed" % UNSUPPORTED_PYTHON)
        self.check_without_layout(UNSUPPORTED_PYTHON)

    def check_static(self, version_dir, minor):
        python = static_interpreter(version_dir)
        if python is None:
            self.skipTest("%s ships no static libpython" % version_dir)
        self.assertEqual(interpreter_version(python), (3, minor), python)
        if 10 <= minor <= 13:
            self.check_interpreter(python, True, "preload")
        else:
            self.check_without_layout(python)

    def check_without_layout(self, python):
        with tempfile.TemporaryDirectory() as d:
            job = self.record_job(python, "preload", d, "run.gwt", [])
            for who in ("parent", "child"):
                events = job[who][2]
                calls = api_calls(events)
                self.assertEqual([c for c in calls if c["python_stack"] or c["python_stack_id"]], [], who)
                blocked = sum(1 for c in calls if c["blocked"])
                launches = sum(1 for c in calls if c["kind"] == "launch")
                self.assertGreater(blocked, 0)
                misses = stack_misses(events)
                self.assertEqual(set(misses), {MISS_UNKNOWN_VERSION}, "%s: misses %s" % (who, misses))
                # Every blocking call, and a launch after 10 ms of host time (none, unless the
                # machine is slow: then it too).
                self.assertGreaterEqual(misses[MISS_UNKNOWN_VERSION], blocked, who)
                self.assertLessEqual(misses[MISS_UNKNOWN_VERSION], blocked + launches, who)

    def test_no_stacks_when_turned_off(self):
        with tempfile.TemporaryDirectory() as d:
            job = self.record_job("/usr/bin/python3", "preload", d, "run.gwt", [], {"GAPWATCH_PY_STACKS": "0"})
            for who in ("parent", "child"):
                events = job[who][2]
                self.assertEqual([c for c in api_calls(events) if c["python_stack"] or c["python_stack_id"]], [])
                self.assertEqual(stack_misses(events), {}, who)


def add_interpreter_tests():
    for key, python, required in INTERPRETERS:
        for mode in ("preload", "injection"):
            def test(self, python=python, required=required, mode=mode):
                self.check_interpreter(python, required, mode)
            test.__name__ = "test_%s_%s" % (mode, key)
            test.__doc__ = "%s under %s" % (python, "LD_PRELOAD" if mode == "preload" else "CUDA_INJECTION64_PATH")
            setattr(PythonStacks, test.__name__, test)


    # Each pyenv version linked statically: 3.10-3.13 get their stacks as the shared builds do,
    # older ones the unknown-version miss (their version read from them, not guessed).
    for minor, version_dir in pyenv_versions():
        def test(self, version_dir=version_dir, minor=minor):
            self.check_static(version_dir, minor)
        test.__name__ = "test_static_3_%d" % minor
        test.__doc__ = "%s's libpython3.%d.a linked into an executable named python" % (version_dir, minor)
        setattr(PythonStacks, test.__name__, test)


add_interpreter_tests()

if __name__ == "__main__":
    gwtest.main(__name__)
