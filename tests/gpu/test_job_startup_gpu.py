"""A CUDA job's start-up on every GPU of the host: each device's stages, in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from job_files import committed, expected_reach, job_file, random_sources, rmat_graph

from vyre_async.algorithms import lookup
from vyre_async.jobs import JobRunner, load_job


def _startup_events(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "log.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "startup"]


async def test_a_job_on_every_gpu_starts_each_device_before_its_first_block(
    tmp_path: Path,
) -> None:
    """A reach job on every GPU logs, for each device, its kind's kernels loaded and its
    graph uploaded before the first block, and commits SciPy's counts."""
    graph = rmat_graph()
    sources = random_sources(3000, 17, graph.num_vertices)
    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        job={"backend": "cuda", "devices": "all"},
        output={"commit_items": 1024, "first_commit_items": 64},
        batching={"max_batch": 256},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path).run()
    assert summary.status == "complete", summary.message
    events = await anyio.to_thread.run_sync(_startup_events, tmp_path / "out")
    at = {(e["stage"], e.get("device")): e for e in events}
    devices = summary.device.count(" + ") + 1
    first_block = at[("first_block_started", None)]["at_s"]
    kernels = len(lookup("reach").kernels(spec.workload[0].params))
    for device in map(str, range(devices)):
        assert at[("kernels_loaded", device)]["modules"] == kernels
        assert at[("kernels_loaded", device)]["at_s"] <= first_block
        assert at[("graph_uploaded", device)]["at_s"] <= first_block
    assert events[-1]["stage"] == "first_chunk_committed"
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]
