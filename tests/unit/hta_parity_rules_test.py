"""The comparison rules of hta_parity.py on a hand-made reference and `hta` blocks: an exact copy
passes, and each tolerance holds at its edge and fails just past it. Needs neither gapwatch nor data.

    hta_parity_rules_test.py
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hta_parity as hp  # noqa: E402

# Two ranks, the shapes of hta-reference/*.json: a stream with all three categories, one with only
# `other` at 0 and a null ratio (HTA's stream 203 in sampled_rank-*), small and zero counts.
REFERENCE = {
    "trace_dir": "made_up",
    "ranks": [0, 1],
    "temporal_breakdown": [
        {"rank": 0, "idle_time(us)": 1000.0, "compute_time(us)": 6000.0, "non_compute_time(us)": 3000.0,
         "kernel_time(us)": 10000.0, "idle_time_pctg": 10.0, "compute_time_pctg": 60.0,
         "non_compute_time_pctg": 30.0},
        {"rank": 1, "idle_time(us)": 500.0, "compute_time(us)": 500.0, "non_compute_time(us)": 0.0,
         "kernel_time(us)": 1000.0, "idle_time_pctg": 50.0, "compute_time_pctg": 50.0,
         "non_compute_time_pctg": 0.0},
    ],
    "idle_breakdown": [
        {"rank": 0, "stream": 7, "idle_category": "host_wait", "idle_time": 20000.0, "idle_time_ratio": 0.8},
        {"rank": 0, "stream": 7, "idle_category": "kernel_wait", "idle_time": 50.0, "idle_time_ratio": 0.0},
        {"rank": 0, "stream": 7, "idle_category": "other", "idle_time": 4950.0, "idle_time_ratio": 0.2},
        {"rank": 0, "stream": 203, "idle_category": "other", "idle_time": 0.0, "idle_time_ratio": None},
        {"rank": 1, "stream": 7, "idle_category": "host_wait", "idle_time": 500.0, "idle_time_ratio": 1.0},
        {"rank": 1, "stream": 7, "idle_category": "other", "idle_time": 0.0, "idle_time_ratio": 0.0},
    ],
    "launch_stats": {
        "0": {"launches": 5000, "short_kernels": 3000, "runtime_outliers": 11, "launch_delay_outliers": 0,
              "mean_launch_delay": 200.0},
        "1": {"launches": 10, "short_kernels": 1, "runtime_outliers": 0, "launch_delay_outliers": 2,
              "mean_launch_delay": 5.5},
    },
    "comm_comp_overlap": [{"rank": 0, "comp_comm_overlap_pctg": 12.5}, {"rank": 1, "comp_comm_overlap_pctg": None}],
}


def report_from(reference):
    return {"processes": [{"rank": r, "hta": hp.block_from_reference(reference, r)} for r in reference["ranks"]]}


def fails(report, reference=REFERENCE):
    return hp.compare_report(report, reference, "made_up")


CASES = []


def case(expect_failure):
    def register(fn):
        CASES.append((fn.__name__, expect_failure, fn))
        return fn
    return register


def rank0(report):
    return report["processes"][0]["hta"]


def idle_row(block, stream, category):
    return next(r for r in block["idle_breakdown"] if r["stream"] == stream and r["idle_category"] == category)


@case(False)
def exact_copy(r): pass


@case(False)
def pctg_off_by_0_1_point(r): rank0(r)["temporal_breakdown"]["idle_time_pctg"] = 10.1


@case(True)
def pctg_off_by_0_11_point(r): rank0(r)["temporal_breakdown"]["idle_time_pctg"] = 10.11


@case(False)
def time_off_by_0_1_percent_of_kernel_time(r): rank0(r)["temporal_breakdown"]["compute_time_us"] = 6010


@case(True)
def time_off_by_more(r): rank0(r)["temporal_breakdown"]["compute_time_us"] = 6011


@case(True)
def temporal_key_missing(r): del rank0(r)["temporal_breakdown"]["non_compute_time_pctg"]


@case(True)
def launches_off_by_one(r): rank0(r)["launch_stats"]["launches"] = 5001


@case(False)
def short_kernels_off_by_1_percent(r): rank0(r)["launch_stats"]["short_kernels"] = 3030


@case(True)
def short_kernels_off_by_more(r): rank0(r)["launch_stats"]["short_kernels"] = 2969


@case(True)
def small_count_off_by_one(r): rank0(r)["launch_stats"]["runtime_outliers"] = 12


@case(True)
def zero_count_not_zero(r): rank0(r)["launch_stats"]["launch_delay_outliers"] = 1


@case(True)
def mean_delay_off_by_more_than_1_percent(r): rank0(r)["launch_stats"]["mean_launch_delay_us"] = 202.5


@case(False)
def idle_off_by_1_percent(r): idle_row(rank0(r), 7, "host_wait")["idle_time_us"] = 20200


@case(True)
def idle_off_by_more(r): idle_row(rank0(r), 7, "host_wait")["idle_time_us"] = 20201


@case(True)
def tiny_idle_off_by_one_us(r): idle_row(rank0(r), 7, "kernel_wait")["idle_time_us"] = 51


@case(True)
def zero_idle_not_zero(r): idle_row(rank0(r), 203, "other")["idle_time_us"] = 1


@case(True)
def row_with_time_missing(r):
    rank0(r)["idle_breakdown"] = [x for x in rank0(r)["idle_breakdown"] if x["idle_category"] != "kernel_wait"]


@case(False)
def zero_row_missing(r):
    rank0(r)["idle_breakdown"] = [x for x in rank0(r)["idle_breakdown"] if x["stream"] != 203]


@case(False)
def extra_zero_row(r):
    r["processes"][1]["hta"]["idle_breakdown"].append(
        {"stream": 7, "idle_category": "kernel_wait", "idle_time_us": 0, "idle_time_ratio": 0.0})


@case(True)
def extra_row_with_time(r):
    r["processes"][1]["hta"]["idle_breakdown"].append(
        {"stream": 7, "idle_category": "kernel_wait", "idle_time_us": 3, "idle_time_ratio": 0.0})


@case(True)
def extra_stream_with_time(r):
    rank0(r)["idle_breakdown"].append({"stream": 9, "idle_category": "other", "idle_time_us": 7, "idle_time_ratio": 1.0})


@case(True)
def row_listed_twice(r): rank0(r)["idle_breakdown"].append(dict(idle_row(rank0(r), 7, "other")))


@case(True)
def null_ratio_given_a_number(r): idle_row(rank0(r), 203, "other")["idle_time_ratio"] = 0.0


@case(True)
def ratio_off_by_two_steps(r): idle_row(rank0(r), 7, "other")["idle_time_ratio"] = 0.22


@case(False)
def rows_in_another_order(r): rank0(r)["idle_breakdown"].reverse()


@case(True)
def overlap_null_given_a_number(r): r["processes"][1]["hta"]["comm_comp_overlap_pctg"] = 0.0


@case(True)
def overlap_off_by_more_than_0_1(r): rank0(r)["comm_comp_overlap_pctg"] = 12.65


@case(True)
def no_hta_block(r): r["processes"][0]["hta"] = None


@case(True)
def rank_missing(r): r["processes"].pop()


@case(True)
def rank_twice(r): r["processes"].append(copy.deepcopy(r["processes"][0]))


@case(True)
def extra_rank(r): r["processes"].append({"rank": 5, "hta": copy.deepcopy(rank0(r))})


def check_gpu_events():
    """gpu_events is compared only where the reference has it (live references)."""
    reference = copy.deepcopy(REFERENCE)
    reference["gpu_events"] = {"0": 139, "1": 12}
    report = report_from(reference)
    problems = []
    if fails(report, reference):
        problems.append("gpu_events: an exact copy fails: %s" % fails(report, reference))
    report["processes"][0]["hta"]["gpu_events"] = 140
    if not fails(report, reference):
        problems.append("gpu_events: 140 against HTA's 139 passes")
    return problems


def check_trace_facts():
    """The block's own fields against what the trace says (steps, cut, GPU events)."""
    facts = {"rank": 0, "profiler_steps": 3, "gpu_events_total": 100}
    good = {"profiler_steps": 3, "cut": "before_last_step_start", "gpu_events": 60, "gpu_events_dropped": 40}
    problems = []
    if hp.compare_trace_facts(good, facts, "facts"):
        problems.append("trace facts: an agreeing block fails: %s" % hp.compare_trace_facts(good, facts, "facts"))
    for change in ({"profiler_steps": 2}, {"cut": "all"}, {"gpu_events_dropped": 41}, {"gpu_events": None}):
        if not hp.compare_trace_facts({**good, **change}, facts, "facts"):
            problems.append(f"trace facts: {change} passes")
    for steps, cut in ((0, "all"), (1, "all"), (2, "before_last_step_start")):
        if hp.expected_cut(steps) != cut:
            problems.append(f"expected_cut({steps}) = {hp.expected_cut(steps)}, HTA's is {cut}")
    return problems


def check_reference_names():
    problems = []
    for name, want in (("train_control.json", ["train_control"]), ("nccl_rank-0.json", ["nccl_rank-0"]),
                       ("sampled_rank-0_rank-1.json", ["sampled_rank-0", "sampled_rank-1"])):
        if hp.traces_of_reference(name) != want:
            problems.append(f"traces_of_reference({name!r}) = {hp.traces_of_reference(name)}, expected {want}")
    return problems


def main():
    problems = []
    for name, expect_failure, change in CASES:
        report = report_from(REFERENCE)
        change(report)
        found = fails(report)
        if bool(found) != expect_failure:
            problems.append(f"{name}: expected {'a failure' if expect_failure else 'no failure'}, got {found}")
        else:
            print(f"ok {name}" + (f": {found[0]}" if found else ""))
    problems += check_gpu_events() + check_trace_facts() + check_reference_names()
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
