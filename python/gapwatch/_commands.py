"""The `gapwatch` and `gapwatchd` commands of the wheel: the packaged program itself, run in place
of the Python process (exec), so that signals, the exit code and the terminal are the program's."""

import os
import sys

import gapwatch


def _run(name: str) -> None:
    program = gapwatch.binary_path()
    try:
        # main.cpp reads its own name: "gapwatchd" means `gapwatch collector`.
        os.execv(program, [name] + sys.argv[1:])
    except OSError as error:
        sys.exit(f"{name}: cannot run {program}: {error.strerror}")


def main() -> None:
    _run("gapwatch")


def daemon() -> None:
    _run("gapwatchd")
