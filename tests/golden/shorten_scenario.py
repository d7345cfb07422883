"""Prints a scenario (examples/scenarios/*.json) with fewer steps, for the golden recordings:
min(steps.count, 6), but never fewer than every op and recompile needs (its latest from_step,
until_step or at_step, plus one). The scenario is otherwise unchanged.

    shorten_scenario.py SCENARIO.json > SHORT.json
"""
import json
import sys

KEEP_STEPS = 6


def latest_step(value):
    latest = 0
    if isinstance(value, dict):
        for key in ("from_step", "at_step"):
            if isinstance(value.get(key), int):
                latest = max(latest, value[key] + 1)
        if isinstance(value.get("until_step"), int):
            latest = max(latest, value["until_step"])
        for child in value.values():
            latest = max(latest, latest_step(child))
    elif isinstance(value, list):
        for child in value:
            latest = max(latest, latest_step(child))
    return latest


scenario = json.load(open(sys.argv[1]))
steps = scenario["steps"]
steps["count"] = min(steps["count"], max(KEEP_STEPS, latest_step(steps), latest_step(scenario.get("recompiles", []))))
scenario.pop("expect", None)  # the expectations are about the full scenario
json.dump(scenario, sys.stdout, indent=2)
sys.stdout.write("\n")
