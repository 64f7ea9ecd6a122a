"""Steady-state items/s of the jobs in a log, from their ``job_progress`` lines.

A job's end-to-end rate includes its start (graph load, Ray start, actors loading
the graph); this takes the rate between the second progress line and the last one
before the end, when every device is busy.

Usage: ``python bench/steady_rate.py LOG``
"""

from __future__ import annotations

import datetime
import re
import sys

_PROGRESS = re.compile(r"^(\S+Z) \[info\s*\] job_progress .*items_done=(\d+)")
_STARTED = re.compile(r"job_started .*job=(\S+)")


def main() -> None:
    """Print one line per job: name, first and last items counted, steady items/s."""
    points: dict[str, list[tuple[float, int]]] = {}
    job = ""
    with open(sys.argv[1]) as log:
        for line in log:
            started = _STARTED.search(line)
            if started:
                job = started.group(1)
                points[job] = []
            progress = _PROGRESS.match(line)
            if progress and job:
                when = datetime.datetime.fromisoformat(progress.group(1).replace("Z", "+00:00"))
                points[job].append((when.timestamp(), int(progress.group(2))))
    for name, seen in points.items():
        if len(seen) < 4:
            print(f"{name}: too few progress lines ({len(seen)})")
            continue
        (t0, n0), (t1, n1) = seen[1], seen[-2]
        print(f"{name}: items {n0}..{n1} in {t1 - t0:.1f} s: {(n1 - n0) / (t1 - t0):,.0f} items/s")


if __name__ == "__main__":
    main()
