"""A Kineto trace event's category in today's name, for the tests that read traces themselves.

PyTorch 1.8-1.10 (Kineto before its categories were unified, 2022) wrote capitalised categories
for today's events, and tools of the time lowercased them: the same mapping as
reader/kineto_event_filter.cpp's categoryOf.
"""
import re

OLD_CATEGORIES = {
    "Kernel": "kernel", "Memcpy": "gpu_memcpy", "memcpy": "gpu_memcpy", "Memset": "gpu_memset",
    "memset": "gpu_memset", "Runtime": "cuda_runtime", "runtime": "cuda_runtime", "Operator": "cpu_op",
    "operator": "cpu_op", "Python": "python_function", "python": "python_function",
}


def category(e):
    """An event's cat, in today's name."""
    cat = e.get("cat")
    return OLD_CATEGORIES.get(cat, cat)


def is_step(name):
    """A ProfilerStep#N range (a user_annotation, or a cpu_op in PyTorch before 2.0): a step, never
    a host range."""
    return re.fullmatch(r"ProfilerStep#[0-9]+", name) is not None
