"""Cases for python_line_table_test: what an interpreter itself says the line of each instruction is.

    python3.X python_line_table_cases.py dump OUT
        Run by the interpreter under test (3.10 or later): compiles a few dozen stdlib modules and a
        synthetic module full of awkward line tables, and writes, for every code object among them
        (module, class bodies, functions, lambdas, comprehensions, nested ones), its co_linetable
        and the line of every instruction offset according to co_lines(), CPython's own walk of
        that table: the truth python_line_at() must reproduce.

    python3 python_line_table_cases.py run INTERPRETER TEST_BINARY WORK_DIR
        The ctest driver: dumps the cases with INTERPRETER into WORK_DIR and runs TEST_BINARY's
        hidden [cases] test on them. Exits 77 (skipped) when INTERPRETER is not installed.

    python3 python_line_table_cases.py any INTERPRETER...
        Fails unless at least one INTERPRETER is installed: every other case may skip, not all.

The case file, one code object a line after a '#' header line:
    MINOR FIRSTLINENO CODE_BYTES LINETABLE_HEX RANGES LABEL
RANGES is START:END:LINE,... in bytes from co_lines(), LINE '-' for None (no line); LINETABLE_HEX
and RANGES are '-' when empty. LABEL (the rest of the line) names the code object.
"""
import os
import subprocess
import sys

# Modules present from 3.10 to 3.13 (some are packages in later versions: find_spec follows them).
STDLIB_MODULES = [
    "_pydecimal", "_pyio", "argparse", "ast", "asyncio.base_events", "asyncio.tasks", "base64",
    "bisect", "calendar", "collections", "configparser", "contextlib", "copy", "csv", "dataclasses",
    "datetime", "difflib", "dis", "email.message", "email._header_value_parser", "enum", "fnmatch",
    "fractions", "functools", "gettext", "glob", "heapq", "inspect", "ipaddress", "json.decoder",
    "json.encoder", "logging", "optparse", "os", "pathlib", "pickle", "posixpath", "pprint",
    "random", "re", "shlex", "shutil", "statistics", "string", "subprocess", "tarfile",
    "tempfile", "textwrap", "threading", "tokenize", "traceback", "types", "typing",
    "unittest.case", "urllib.parse", "uuid", "warnings", "weakref", "zipfile",
]

# Line tables CPython writes only for unusual code: jumps of hundreds of lines (split pairs in
# 3.10, long forms after), lines of more than 254 bytes of instructions, columns past 127, lines
# that go backwards, instructions with no line, generators, async code, match, try/finally.
SYNTHETIC_SOURCE = '''
import contextlib

def multi_line_call(a, b, c):
    return max(
        a,
        b
        +
        c,
        key=lambda v: (
            v
            *
            2),
    )

def comprehensions(rows):
    flat = [cell for row in rows for cell in row if cell]
    sets = {c % 7 for c in flat}
    maps = {k: [v
                for v in flat
                if v > k]
            for k in sets}
    gen = (x
           * 2
           for x in flat)
    return flat, sets, maps, sum(gen)

def exceptions(x):
    try:
        y = 1 / x
    except ZeroDivisionError as error:
        y = str(error)
    except (TypeError,
            ValueError):
        y = None
    else:
        y = y + 1
    finally:
        x = None
    try:
        pass
    finally:
        return y

def generator(n):
    total = 0
    for i in range(n):
        received = yield i
        if received:
            total += received
    yield from range(
        total)
    return total

async def coroutine(lock, items):
    async with lock:
        async for item in items:
            await item
    return [x async for x in items]

def matcher(command):
    match command.split():
        case [action]:
            return action
        case [action, obj] if obj:
            return action, obj
        case {"k": value, **rest}:
            return value, rest
        case Point(x=0, y=yy) | Point(x=yy, y=0):
            return yy
        case _:
            return None

def loops(n):
    out = []
    i = 0
    while i < n:
        for j in range(i):
            if j % 3 == 0:
                continue
            if j > 100:
                break
            out.append(j)
        else:
            out.append(-1)
        i += 1
    return out

def with_statements(path):
    with open(path) as f, contextlib.suppress(OSError):
        data = f.read()
    with (
        open(path) as g,
    ):
        return data + g.read()

def decorated(f):
    @staticmethod
    @contextlib.contextmanager
    def inner(*args,
              **kwargs):
        yield f(*args, **kwargs)
    return inner

class Outer:
    attribute = [1, 2, 3]

    class Inner:
        def method(self):
            return lambda: lambda: self

    def __init__(self, value):
        self.value = f"{value!r:>{10}} and {value * 2:x}"

def long_line():
    value = 1; value = value + 1; value = value * 2; value = value - 3; value = value + 4; value = value + 5; value = value + 6; value = value + 7; value = value + 8; value = value + 9; value = value + 10; value = value + 11; value = value + 12; value = value + 13; value = value + 14; value = value + 15; value = value + 16; value = value + 17; value = value + 18; value = value + 19; value = value + 20; value = value + 21; value = value + 22; value = value + 23; value = value + 24; value = value + 25; value = value + 26; value = value + 27; value = value + 28; value = value + 29; value = value + 30; value = value + 31; value = value + 32; value = value + 33; value = value + 34; value = value + 35; value = value + 36; value = value + 37; value = value + 38; value = value + 39; value = value + 40; value = value + 41; value = value + 42; value = value + 43; value = value + 44; value = value + 45; value = value + 46; value = value + 47; value = value + 48; value = value + 49; value = value + 50
    return value

def far_columns():
    return                                                                                                                                                            (1 +
                                                                                                                                                                       2)
'''

# A jump of several hundred lines inside one function, forwards and backwards (a loop around it).
SYNTHETIC_SOURCE += "\ndef far_apart(n):\n    a = 0\n    while n:\n        a += 1\n" + "\n" * 700 + \
    "        n -= 1\n" + "\n" * 300 + "    return a\n"

# except* is 3.11+ syntax.
SYNTHETIC_311 = '''
def exception_groups():
    try:
        raise ExceptionGroup("g", [ValueError(1), TypeError(2)])
    except* ValueError as group:
        left = group
    except* TypeError:
        left = None
    return left
'''


def code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, type(code)):
            yield from code_objects(const)


def sources():
    import importlib.util
    for name in STDLIB_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, "rb") as f:
            yield name, spec.origin, f.read()
    synthetic = SYNTHETIC_SOURCE + (SYNTHETIC_311 if sys.version_info >= (3, 11) else "")
    yield "synthetic", "<synthetic>", synthetic
    # The same far down a file: line numbers past 2**16, a first line that is not 1.
    yield "synthetic_far", "<synthetic_far>", "\n" * 70000 + synthetic


def case_line(minor, name, code):
    ranges = []
    for start, end, line in code.co_lines():
        ranges.append("%d:%d:%s" % (start, end, "-" if line is None else line))
    qualname = getattr(code, "co_qualname", code.co_name)
    return "%d %d %d %s %s %s:%s:%d" % (
        minor, code.co_firstlineno, len(code.co_code), code.co_linetable.hex() or "-",
        ",".join(ranges) or "-", name, qualname.replace(" ", "_"), code.co_firstlineno)


def dump(out_path):
    minor = sys.version_info[1]
    lines = []
    for name, filename, source in sources():
        module = compile(source, filename, "exec", dont_inherit=True)
        lines.extend(case_line(minor, name, code) for code in code_objects(module))
    with open(out_path, "w") as out:
        out.write("# CPython %s (%s): %d code objects\n" % (
            sys.version.split()[0], sys.executable, len(lines)))
        out.write("\n".join(lines) + "\n")
    return 0


def run(interpreter, test_binary, work_dir):
    if not os.access(interpreter, os.X_OK):
        print("%s: not installed, skipped" % interpreter)
        return 77
    os.makedirs(work_dir, exist_ok=True)
    version = subprocess.run([interpreter, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    out = os.path.join(work_dir, "python_line_table_cases-%s-%s.txt" % (
        version, interpreter.strip("/").replace("/", "_")))
    subprocess.run([interpreter, "-I", os.path.abspath(__file__), "dump", out], check=True)
    env = dict(os.environ, GAPWATCH_PYTHON_LINE_CASES=out)
    return subprocess.run([test_binary, "[cases]"], env=env).returncode


def any_installed(interpreters):
    found = [i for i in interpreters if os.access(i, os.X_OK)]
    if not found:
        print("none of these interpreters is installed: %s" % " ".join(interpreters))
        return 1
    print("installed: %s" % " ".join(found))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "dump":
        return dump(argv[2])
    if len(argv) == 5 and argv[1] == "run":
        return run(argv[2], argv[3], argv[4])
    if len(argv) >= 3 and argv[1] == "any":
        return any_installed(argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
