"""Host overhead per BFS level: a reference tree against this one, in one process.

``bench/level_overhead.py`` measures one tree. Comparing two trees in separate
processes mixes in what differs between processes and hosts (often more than the
change) and, across versions whose R-MAT generator changed, even the graph. Here
both packages run in one process, on one device and one graph: the reference tree's
``vyre_async`` package is copied under another name, each tree opens its own backend
and resident session, and the rounds alternate which tree goes first. Each round
measures ``session.reach_count`` over the same sources with
``level_overhead.measure``: host time per level = (wall - device time) / levels.

Target (issue 17): not worse than the reference, and <= 10 us per level on an H200
at scale 22.

Prepare the reference package, then run::

    git archive <commit> vyre_async | tar -x -C /tmp/reference
    python bench/level_overhead_ab.py --reference /tmp/reference/vyre_async \\
        --out bench/results/level_overhead-ab-<gpu>.json
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import numpy as np

import vyre_async as va
from vyre_async.graphs import CsrGraph, rmat

sys.path.insert(0, str(Path(__file__).parent))
from level_overhead import RUNS, measure

REFERENCE_NAME = "vyre_reference"
TARGET_US_PER_LEVEL = 10.0


def load_reference(package: Path, into: Path) -> Any:
    """Import a copy of ``package`` (a ``vyre_async`` folder) named ``vyre_reference``."""
    if not (package / "__init__.py").is_file():
        raise SystemExit(f"{package} is not a package folder (no __init__.py)")
    copy = into / REFERENCE_NAME
    shutil.copytree(package, copy)
    for path in copy.rglob("*"):
        if path.is_file() and path.suffix in {".py", ".cu", ".cuh", ".toml"}:
            text = path.read_text()
            if "vyre_async" in text:
                path.write_text(text.replace("vyre_async", REFERENCE_NAME))
    sys.path.insert(0, str(into))
    return importlib.import_module(REFERENCE_NAME)


def session_of(package: Any, backend: Any, graph: Any) -> Any:
    """A resident session; older trees make it with ``backend.resident_graph``."""
    factory = getattr(package, "resident_graph", None)
    return factory(backend, graph) if factory is not None else backend.resident_graph(graph)


async def run(reference: Any, scale: int, rounds: int) -> dict[str, Any]:
    """Every round measures both trees on the same sources, alternating the order."""
    graph = rmat(scale, 16, seed=1)
    # The reference's own CsrGraph over the same arrays: one graph for both trees.
    reference_graph = importlib.import_module(f"{REFERENCE_NAME}.graphs").CsrGraph(
        graph.offsets, graph.indices, graph.weights, symmetric=graph.symmetric
    )
    assert isinstance(graph, CsrGraph)
    rng = np.random.default_rng(2)
    candidates = np.flatnonzero(np.diff(graph.offsets) > 0)
    sources = [int(s) for s in rng.choice(candidates, RUNS, replace=False)]
    out: dict[str, Any] = {"scale": scale, "sources": len(sources), "rounds": []}
    async with (
        va.open_backend("cuda") as this_backend,
        session_of(va, this_backend, graph) as this_session,
        reference.open_backend("cuda") as reference_backend,
        session_of(reference, reference_backend, reference_graph) as reference_session,
    ):
        info = this_backend.device_info  # type: ignore[attr-defined]
        out["device"] = {"name": info.name, "driver_version": info.driver_version}
        out["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        for source in sources * 3:  # warm-up; both trees must agree
            mine = await this_session.reach_count(source)
            theirs = await reference_session.reach_count(source)
            if mine != theirs:
                raise SystemExit(f"reach_count({source}): {mine} here, {theirs} in the reference")
        trees = [
            ("reference", reference_session, reference_backend),
            ("this", this_session, this_backend),
        ]
        for index in range(rounds):
            row = {}
            for name, session, backend in trees if index % 2 == 0 else trees[::-1]:
                row[name] = await measure(session, backend, sources)
            out["rounds"].append(row)
            print(
                f"round {index}: "
                + ", ".join(
                    f"{name} {row[name]['overhead_us_per_level']:.2f} us/level "
                    f"(wall {row[name]['wall_us']:.1f} us)"
                    for name in ("reference", "this")
                ),
                flush=True,
            )
    return out


def summarise(out: dict[str, Any]) -> None:
    """Medians and means over the rounds, rounds won, and the targets."""
    rows = out["rounds"]
    per_level = {t: [r[t]["overhead_us_per_level"] for r in rows] for t in ("reference", "this")}
    out["median_us_per_level"] = {t: statistics.median(v) for t, v in per_level.items()}
    out["mean_us_per_level"] = {t: statistics.fmean(v) for t, v in per_level.items()}
    out["median_phases_us"] = {
        t: {k: statistics.median(r[t][k] for r in rows) for k in rows[0][t]}
        for t in ("reference", "this")
    }
    out["rounds_this_tree_lower"] = sum(
        r["this"]["overhead_us_per_level"] < r["reference"]["overhead_us_per_level"] for r in rows
    )
    median = out["median_us_per_level"]
    out["targets_met"] = {
        "not worse than the reference (median)": median["this"] <= median["reference"],
        f"<= {TARGET_US_PER_LEVEL:g} us per level (median)": median["this"] <= TARGET_US_PER_LEVEL,
    }


def main() -> None:
    """Run, print a summary, write the JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", type=Path, required=True, help="a vyre_async folder")
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        reference = load_reference(args.reference.resolve(), Path(folder))
        out = anyio.run(run, reference, args.scale, args.rounds)
    summarise(out)
    for key in ("median_us_per_level", "mean_us_per_level", "rounds_this_tree_lower"):
        print(key, out[key])
    print("targets", out["targets_met"])
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
