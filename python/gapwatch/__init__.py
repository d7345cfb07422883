"""gapwatch: why is my GPU idle?

    import gapwatch
    report = gapwatch.analyze(["run/rank0.gwt", "run/rank1.gwt"])   # or a trace.json.gz, or "run/"
    report.processes[0].verdict
    report.gaps()          # every idle gap, a pandas DataFrame (a list of dicts without pandas)

`analyze` gives the content of `gapwatch report --json` (docs/report-json.md) as read-only
objects; docs/python.md has the whole API. The `gapwatch` and `gapwatchd` commands come with the
package, and `gapwatch.library_path()` is where the injected library is (`gapwatch --where`).
"""

import os as _os

from gapwatch._report import GapwatchError, Record, Report, analyze

__all__ = ["analyze", "Report", "Record", "GapwatchError", "library_path", "binary_path"]

_here = _os.path.dirname(_os.path.abspath(__file__))


def _first_existing(*candidates: str) -> str:
    for candidate in candidates:
        if _os.path.exists(candidate):
            return _os.path.normpath(candidate)
    return _os.path.normpath(candidates[0])


def binary_path() -> str:
    """The `gapwatch` program of this package (in a wheel: gapwatch/bin/gapwatch)."""
    # The build tree puts the package in <build>/python/gapwatch and the program in <build>/bin.
    return _first_existing(_os.path.join(_here, "bin", "gapwatch"),
                           _os.path.join(_here, "..", "..", "bin", "gapwatch"))


def library_path() -> str:
    """libgapwatch.so, the library to inject: `LD_PRELOAD=<this> python train.py`."""
    return _first_existing(_os.path.join(_here, "lib", "libgapwatch.so"),
                           _os.path.join(_here, "..", "..", "lib", "libgapwatch.so"))
