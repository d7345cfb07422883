"""Every command block of the user docs runs, verbatim, on the simulated CUDA stack: the docs cannot
drift from the tool.

Usage: doc_commands_test.py REPO BUILD_DIR         (the docs of REPO against BUILD_DIR's programs)
       doc_commands_test.py --self-test BUILD_DIR   (the checker itself, on Markdown made up here)

The convention, for README.md and docs/**/*.md (docs/design/ is design history, quoted as it was,
and not checked):

- Every fenced block names its language. ```sh (or bash, shell) blocks are run whole; ```console
  blocks run their lines that start with "$ " (the output shown is not compared). Anything else
  (text, json, yaml, promql...) is never run. A fence with no language is an error: it would let a
  command block escape this test.
- A block that cannot run here (it needs a GPU, a real PyTorch, root, systemd, the network, or
  takes many minutes) has `<!-- doc-test: skip: REASON -->` on the line before its fence. A skip
  without a reason is an error.
- Each block runs in its own `bash -e -o pipefail`, so no variable or `cd` carries from one block
  to the next; the blocks of one file run in order in one scratch directory, so a file one block
  writes (report.json) is there for the next. A block passes when it exits 0 (but see CUPTI below).
- The scratch directory looks like the repository root: every top-level entry of the repository
  is linked there (examples/scenarios/..., tests/data/...), and build/ is the build tree tested.
  Beside them lie the recordings and traces the docs use as their example inputs, made once per
  run on the simulated stack: run.gwt (healthy scenario), rank0.gwt and rank1.gwt (the two ranks
  of nccl-bound), before.gwt (data-bound) and after.gwt (healthy), runs/before/ and runs/after/
  (each the two ranks of nccl-bound), and trace.json.gz, before.json.gz and after.json.gz (a
  PyTorch profiler trace of tests/data/kineto).
- The environment: PATH begins with the build's bin/ (as after installing gapwatch), no
  GAPWATCH_* or CUDA_* variable, LD_PRELOAD or CUDA_INJECTION64_PATH from the caller, and
  XDG_RUNTIME_DIR a private 0700 directory per file (the default collector socket lives there, so
  no block meets another test's or the user's collector), and HOME a private directory per file
  (so ~/.local in an install example is the scratch directory's). Nothing else is set: in particular not
  GAPWATCH_CUPTI_PATH, which a user of the simulated stack does not need either.
- A block fails when the library says it could not use CUPTI (its "gapwatch: ... libcupti ..."
  line): the docs' recordings must have the device timeline, found without GAPWATCH_CUPTI_PATH.
- Each block gets BLOCK_TIMEOUT seconds, a bound on a hang, not a measurement (the slowest block
  takes a few seconds); whatever a block leaves running is killed when it ends.

A failure names the file and line of the block, its exit status and the tail of its output.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

BLOCK_TIMEOUT = 120
RUN_LANGUAGES = {"sh", "bash", "shell", "console"}
# Indented too (a fence inside a list item); as in CommonMark, a backtick fence's info string has no
# backtick: a line that starts with ```` ```sh ```` is inline code, not a fence.
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)[^`]*$")
SKIP = re.compile(r"^\s*<!--\s*doc-test:\s*skip:?(.*?)-->\s*$")
TAIL_LINES = 20
# The library's line when it could not use CUPTI (a libcupti not found, or not the process's): the
# docs' recordings on the simulated stack must have the device's own timeline, as on a GPU.
NO_CUPTI = re.compile(r"^gapwatch: .*(libcupti|cuptiSubscribe|CUPTI is held)")


class Block:
    def __init__(self, path, line, language, text, skip):
        self.path, self.line, self.language, self.text, self.skip = path, line, language, text, skip

    def where(self, repo):
        return "%s:%d" % (os.path.relpath(self.path, repo), self.line)

    def script(self):
        if self.language != "console":
            return self.text
        commands = [l[2:] for l in self.text.splitlines() if l.startswith("$ ")]
        return "\n".join(commands) + "\n"


def doc_files(repo):
    files = [os.path.join(repo, "README.md")]
    docs = os.path.join(repo, "docs")
    for root, dirs, names in os.walk(docs):
        dirs[:] = sorted(d for d in dirs if os.path.join(root, d) != os.path.join(docs, "design"))
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".md")]
    return [f for f in files if os.path.isfile(f)]


def parse(path, errors, repo):
    """The fenced blocks of one Markdown file; malformed ones go to errors."""
    blocks = []
    with open(path) as f:
        lines = f.read().split("\n")
    where = lambda n: "%s:%d" % (os.path.relpath(path, repo), n)
    pending_skip = None  # (line, reason) of a skip marker waiting for its fence
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        s = SKIP.match(line)
        if s:
            if pending_skip:
                errors.append("%s: a doc-test skip marker with no fenced block after it" % where(pending_skip[0]))
            pending_skip = (i + 1, s.group(1).strip())
            i += 1
            continue
        if not m:
            if line.strip() and pending_skip:
                errors.append("%s: a doc-test skip marker must be the line before a fence" % where(pending_skip[0]))
                pending_skip = None
            i += 1
            continue
        fence, language = m.group(2), m.group(3).lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence[0] * len(fence)):
            end += 1
        indent = len(m.group(1))
        text = "\n".join(l[indent:] if l[:indent].isspace() else l for l in lines[i + 1:end]) + "\n"
        if not language:
            errors.append("%s: a fenced block without a language: ```sh to run it here, ```console for $ lines, "
                          "```text (or json, yaml...) for what is not a command" % where(i + 1))
        skip = None
        if pending_skip:
            skip = pending_skip[1]
            if not skip:
                errors.append("%s: doc-test skip without a reason: <!-- doc-test: skip: REASON -->" %
                              where(pending_skip[0]))
            if language not in RUN_LANGUAGES:
                errors.append("%s: doc-test skip on a ```%s block, which is never run" % (where(pending_skip[0]),
                                                                                           language or ""))
            pending_skip = None
        blocks.append(Block(path, i + 1, language, text, skip))
        i = end + 1
    if pending_skip:
        errors.append("%s: a doc-test skip marker with no fenced block after it" % where(pending_skip[0]))
    return blocks


def environment(build, runtime):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("GAPWATCH_") or k.startswith("CUDA_") or k.startswith("SIMCUDA_")
                   or k in ("LD_PRELOAD", "LD_LIBRARY_PATH", "XDG_RUNTIME_DIR"))}
    env["PATH"] = os.path.join(build, "bin") + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env["XDG_RUNTIME_DIR"] = runtime
    # ~ in a block (an install prefix, a settings file) is the scratch directory's, never the
    # user's: the docs may write there.
    env["HOME"] = os.path.join(os.path.dirname(runtime), ".home")
    os.makedirs(env["HOME"], 0o700, exist_ok=True)
    for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env.pop(k, None)
    return env


def run_block(block, cwd, env):
    """(exit status or None on timeout, output)."""
    p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", block.script()], cwd=cwd, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=BLOCK_TIMEOUT)
        status = p.returncode
    except subprocess.TimeoutExpired:
        status = None
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what the block started and left running
    except ProcessLookupError:
        pass
    if status is None:
        out, _ = p.communicate()
    return status, out.decode("utf-8", "replace")


def make_fixtures(build, repo, into):
    """The example inputs the docs name, recorded on the simulated stack."""
    env = environment(build, into)
    os.makedirs(into, exist_ok=True)
    lib = os.path.join(build, "lib", "libgapwatch.so")
    sim = os.path.join(build, "bin", "gapwatch-sim")
    scenarios = os.path.join(repo, "examples", "scenarios")

    def record(scenario, output):
        r = subprocess.run([sim, os.path.join(scenarios, scenario + ".json"), "--quiet"], cwd=into,
                           env=dict(env, LD_PRELOAD=lib, GAPWATCH_OUTPUT=output),
                           capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
        if r.returncode != 0:
            raise SystemExit("doc_commands_test: cannot record the %s fixture: %s" % (scenario, r.stderr.strip()))

    record("healthy", "run.gwt")
    record("nccl-bound", "rank%r.gwt")
    record("data-bound", "before.gwt")
    record("healthy", "after.gwt")
    for run in ("before", "after"):
        os.makedirs(os.path.join(into, "runs", run))
        for rank in ("rank0.gwt", "rank1.gwt"):
            shutil.copy(os.path.join(into, rank), os.path.join(into, "runs", run, rank))
    trace = os.path.join(repo, "tests", "data", "kineto", "b200_train.json.gz")
    for name in ("trace.json.gz", "before.json.gz", "after.json.gz"):
        shutil.copy(trace, os.path.join(into, name))
    shutil.rmtree(os.path.join(into, "gapwatch"), ignore_errors=True)


def scratch_for(repo, build, fixtures, parent):
    d = tempfile.mkdtemp(prefix="doc-", dir=parent)
    for name in os.listdir(repo):
        if name not in (".git", "build", "out") and not name.startswith("build-"):
            os.symlink(os.path.join(repo, name), os.path.join(d, name))
    os.symlink(os.path.abspath(build), os.path.join(d, "build"))
    for name in os.listdir(fixtures):
        src = os.path.join(fixtures, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(d, name))
    runtime = os.path.join(d, ".runtime")
    os.mkdir(runtime, 0o700)
    return d, runtime


def check(repo, build, files=None):
    """Every error and failure, as lines; empty when the docs hold."""
    errors = []
    per_file = [(path, parse(path, errors, repo)) for path in (files or doc_files(repo))]
    if errors:
        return errors
    runnable = [(p, [b for b in blocks if b.language in RUN_LANGUAGES and b.skip is None]) for p, blocks in per_file]
    if not any(blocks for _, blocks in runnable):
        return errors
    with tempfile.TemporaryDirectory(prefix="gapwatch-doc-test-") as top:
        fixtures = os.path.join(top, "fixtures")
        make_fixtures(build, repo, fixtures)
        for path, blocks in runnable:
            if not blocks:
                continue
            cwd, runtime = scratch_for(repo, build, fixtures, top)
            env = environment(build, runtime)
            for block in blocks:
                status, out = run_block(block, cwd, env)
                no_cupti = [l for l in out.splitlines() if NO_CUPTI.match(l)]
                if status == 0 and no_cupti:
                    errors.append("%s: the ```%s block recorded without CUPTI:\n    %s" %
                                  (block.where(repo), block.language, no_cupti[0]))
                if status != 0:
                    tail = "\n".join("    " + l for l in out.rstrip("\n").splitlines()[-TAIL_LINES:])
                    how = "did not end within %d s" % BLOCK_TIMEOUT if status is None else "exited %d" % status
                    errors.append("%s: the ```%s block %s; the end of its output:\n%s" %
                                  (block.where(repo), block.language, how, tail or "    (none)"))
    return errors


def report(errors, files, repo):
    if errors:
        print("doc_commands_test: %d problem(s):\n" % len(errors) + "\n".join(errors), file=sys.stderr)
        return 1
    blocks = []
    for path in files:
        blocks += parse(path, [], repo)
    ran = sum(1 for b in blocks if b.language in RUN_LANGUAGES and b.skip is None)
    skipped = [b for b in blocks if b.skip]
    print("doc_commands_test: %d command blocks ran, %d skipped:" % (ran, len(skipped)))
    for b in skipped:
        print("  %s: %s" % (b.where(repo), b.skip))
    return 0


def self_test(build):
    """The checker fails where it must: a bare fence, a skip without a reason, a failing block (named
    by file:line with its output), a hung block; and passes a good file."""
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    global BLOCK_TIMEOUT
    BLOCK_TIMEOUT = 3
    cases = [
        ("```\nls\n```\n", ["x.md:1: a fenced block without a language"]),
        ("<!-- doc-test: skip: -->\n```sh\nfalse\n```\n", ["x.md:1: doc-test skip without a reason"]),
        ("text\n\n```sh\ntrue\n```\n\n```console\n$ echo out; echo why >&2; exit 4\nout\n```\n",
         ["x.md:7: the ```console block exited 4; the end of its output:\n    out\n    why"]),
        ("```sh\nsleep 60\n```\n", ["x.md:1: the ```sh block did not end within 3 s"]),
        ("```sh\nGAPWATCH_CUPTI_PATH=/nowhere/libcupti.so.13 LD_PRELOAD=build/lib/libgapwatch.so "
         "gapwatch-sim examples/scenarios/healthy.json --quiet\n```\n",
         ["x.md:1: the ```sh block recorded without CUPTI:\n    gapwatch: libcupti could not be loaded"]),
        ("```sh\ngapwatch --version && test -f run.gwt && test -d examples/scenarios\n```\n"
         "<!-- doc-test: skip: needs a GPU -->\n```sh\nfalse\n```\n```text\nfalse\n```\n", []),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.md")
        for text, expected in cases:
            with open(path, "w") as f:
                f.write(text)
            got = [e.replace(os.path.relpath(path, repo), "x.md") for e in check(repo, build, [path])]
            ok = len(got) == len(expected) and all(g.startswith(e) for g, e in zip(got, expected))
            if not ok:
                failed += 1
                print("self-test: for\n%s\nexpected %r\ngot %r" % (text, expected, got), file=sys.stderr)
    print("doc_commands_test self-test: %d of %d cases as expected" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        return self_test(os.path.abspath(sys.argv[2]))
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    repo, build = (os.path.abspath(a) for a in sys.argv[1:])
    files = doc_files(repo)
    return report(check(repo, build, files), files, repo)


if __name__ == "__main__":
    sys.exit(main())
