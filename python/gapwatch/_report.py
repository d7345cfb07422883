"""The report of `gapwatch.analyze()` as Python objects, and its per-item tables.

The report is the document `gapwatch report --json` writes (docs/report-json.md), made by the
same C++ code in this process (gapwatch._gapwatch) and read into `Record`s: read-only objects
whose attributes are the document's keys, lists as tuples. So the API and the command line
cannot disagree, and a key added to the JSON is an attribute the next day without a line here.
`Report.to_dict()` is the document itself.

The tables (`gaps()`, `sync_points()`, `kernels()`, `steps()`) list every item, which the report,
bounded by design, does not keep: each call reads the recordings again through the engine and
keeps only that table's rows (python/table_rows.h).
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from typing import Any, Iterable, Union

from gapwatch import _gapwatch

GapwatchError = _gapwatch.GapwatchError

PathLike = Union[str, "os.PathLike[str]"]

# What a list's items are called, by the list's key: the class name a Record shows.
_ITEM_KINDS = {
    "processes": "Process",
    "inputs": "Input",
    "devices": "Device",
    "findings": "Finding",
    "notes": "Finding",
    "sync_points": "SyncPointType",
    "top_call_sites": "CallSite",
    "longest_gaps": "Gap",
    "rank_waits": "RankWait",
    "rank_comparisons": "RankComparison",
    "top_by_time": "KernelStats",
    "short_by_count": "KernelStats",
    "histogram": "HistogramBucket",
    "by_type": "NcclType",
    "evidence": "Evidence",
    "long_host_gap_sites": "HostReturnSite",
    "python_stack": "PythonFrame",
}


def _kind_of(key: str) -> str:
    return "".join(part.capitalize() for part in key.split("_"))


def _wrap(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return Record(_kind_of(key), value)
    if isinstance(value, list):
        item_kind = _ITEM_KINDS.get(key, _kind_of(key))
        return tuple(Record(item_kind, v) if isinstance(v, dict) else _wrap(v, key) for v in value)
    return value


class Record:
    """One object of the report: its JSON keys are read-only attributes (and `record["key"]`).

    Nested objects are Records and lists are tuples; numbers keep the JSON's types (ints for
    `*_ns` and counts, floats for fractions), and `null` is None.
    """

    __slots__ = ("_kind", "_data")

    def __init__(self, kind: str, data: dict):
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if name in data:
            return _wrap(data[name], name)
        raise AttributeError(f"{object.__getattribute__(self, '_kind')} has no field {name!r} "
                             f"(fields: {', '.join(data)})")

    def __getitem__(self, name: str) -> Any:
        return _wrap(self._data[name], name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._kind} is read-only")

    def __contains__(self, name: str) -> bool:
        return name in self._data

    def __dir__(self) -> list:
        return list(self._data) + ["keys", "to_dict"]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._data == other._data

    __hash__ = None  # mutable underneath: equal Records need not hash alike

    def keys(self) -> list:
        return list(self._data)

    def to_dict(self) -> dict:
        """The JSON object, as a new dict (changing it changes nothing here)."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        shown = []
        for key, value in self._data.items():
            if isinstance(value, (dict, list)):
                continue
            shown.append(f"{key}={value!r}")
            if len(shown) == 6:
                shown.append("...")
                break
        return f"{self._kind}({', '.join(shown)})"


def _paths_list(paths: Union[PathLike, Iterable[PathLike]]) -> list:
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    result = []
    for path in paths:
        path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        result.append(path)
    return result


def _notes(lines: Iterable[str]) -> None:
    for line in lines:
        warnings.warn(line, RuntimeWarning, stacklevel=3)


class Report(Record):
    """The report of one run: `gapwatch report --json`'s document as a Record.

    Attributes are the document's keys: `processes`, `inputs`, `jobs`, `rank_comparisons` (one
    per job of several ranks: its `processes`, `rank_waits`, `straggler_test` and `findings`
    across its ranks), `findings`, `rank_waits` and `straggler_test` (the only job's, when one
    job has several ranks), `options`, `thresholds`, `gapwatch_report_version`, `generator`. Besides them: `files` (the recordings read, directories expanded), `notes`
    (notices about them, such as a truncated recording, also given as warnings) and `json`
    (the document's text, as `gapwatch report --json` prints it).
    """

    __slots__ = ("files", "notes", "json", "_options")

    def __init__(self, text: str, files: list, notes: list, options: dict):
        super().__init__("Report", json.loads(text))
        object.__setattr__(self, "files", tuple(files))
        object.__setattr__(self, "notes", tuple(notes))
        object.__setattr__(self, "json", text)
        object.__setattr__(self, "_options", options)

    def __repr__(self) -> str:
        verdicts = [p.get("verdict", "") for p in self._data.get("processes", [])]
        return f"Report({len(self.files)} file(s): {'; '.join(verdicts)})"

    def gaps(self, frame: Union[bool, None] = None):
        """Every idle gap of every device, in the order the engine closed them (time per device).

        Columns: process, rank, device, start_ns, end_ns, ns, cause (the cause with most of the
        gap's time), one `<cause>_ns` per cause (host_cpu_ns, launch_overhead_ns, sync_copy_ns,
        cuda_api_ns, nccl_host_ns, dependency_ns; they sum to ns), host_<part>_ns (host_cpu_ns by
        what the host was doing: input_pipeline, framework, other, unknown), after_sync, after
        (the work that ended the gap: the kernel's name, "memcpy" or "memset") and
        after_correlation_id (that work's, as in kernels(); 0 when unknown). The report's
        `longest_gaps` say more of the longest few: the call the host was in, its Python line.
        """
        return self._table("gaps", frame)

    def sync_points(self, frame: Union[bool, None] = None):
        """Every host call that waited for the device, in time order.

        Columns: process, rank, type (as `sync_points[].type`), api, thread_id, start_ns, end_ns,
        ns (the call's length, enter to exit), bytes (copies), site (the Python line or native
        call site, as `top_call_sites[].name`). Query polling loops are not rows: the report counts
        each loop of polls once, as `query_polling`.
        """
        return self._table("sync_points", frame)

    def kernels(self, frame: Union[bool, None] = None):
        """Every kernel run: process, rank, device, stream, name, start_ns, end_ns, ns,
        correlation_id (in start order per process)."""
        return self._table("kernels", frame)

    def steps(self, frame: Union[bool, None] = None):
        """Every complete training step: process, rank, step (1, 2, ...), start_ns, end_ns, ns,
        detected (False when the steps are the program's own markers, as the report uses them
        where there are any; True when found in the kernels or sync points). The report's
        `steps.steps` also counts a last step that began but whose end the recording does not
        show: it is not a row."""
        return self._table("steps", frame)

    def _table(self, name: str, frame: Union[bool, None]):
        names, columns, notes = _gapwatch.table_columns(list(self.files), name, **self._options)
        _notes(notes)
        # The stage numbers processes by file; the report by what it could read, with their ranks.
        inputs = self._data["inputs"]
        processes = self._data["processes"]
        file_to_process = [i.get("process") for i in inputs]
        columns["process"] = [file_to_process[f] for f in columns["process"]]
        columns["rank"] = [processes[p].get("rank") if p is not None else None for p in columns["process"]]
        names = ["process", "rank"] + [n for n in names if n != "process"]
        if frame is None or frame:
            try:
                import pandas
            except ImportError:
                if frame:
                    raise
            else:
                return pandas.DataFrame({n: columns[n] for n in names}, columns=names)
        rows = len(columns["process"])
        return [{n: columns[n][r] for n in names} for r in range(rows)]


def analyze(paths: Union[PathLike, Iterable[PathLike]], *, top_n: int = 5, min_gap_ns: int = 0,
            launch_threshold_ns: int = 30000, hta: bool = False) -> Report:
    """Analyses recordings (.gwt) or PyTorch profiler traces (.json, .json.gz), one per process
    or rank, as `gapwatch report --json` does, and returns the report (a `Report`).

    `paths`: a path or a list of them; a directory stands for the recordings in it. The keyword
    arguments are the command line's --top, --min-gap, --launch-threshold (in nanoseconds) and
    --hta. A file that is not a readable recording raises GapwatchError (a ValueError) with the
    line `gapwatch report` prints; a truncated one is reported up to its last whole frame, with a
    RuntimeWarning.
    """
    options = {"top_n": int(top_n), "min_gap_ns": int(min_gap_ns), "launch_threshold_ns": int(launch_threshold_ns)}
    text, files, notes = _gapwatch.report_json(_paths_list(paths), hta=bool(hta), **options)
    _notes(notes)
    return Report(text, files, notes, options)
