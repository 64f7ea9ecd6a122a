"""Queries over HTTP answered on a real GPU: a loopback server on the CUDA backend."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
from serve_fixtures import reached, serving, write_config

from vyre_async.graphs import rmat

SCALE = 14


async def test_concurrent_http_reach_queries_share_gpu_batches_and_equal_scipys(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """300 concurrent reach queries over HTTP to an R-MAT 14 graph resident on device 0:
    each answer is SciPy's, they ran in fewer batches than queries, and the server
    reports the graph on the CUDA device."""
    section = {"kind": "rmat", "scale": SCALE, "edge_factor": 16, "seed": 7}
    config = await write_config(
        tmp_path,
        {"g": section},
        server={"backend": "cuda", "devices": 0},
        batching={"max_batch": 256, "max_delay_ms": 2.0},
    )
    graph = await anyio.to_thread.run_sync(rmat, SCALE, 16, 7)
    sources = [int(s) for s in rng.integers(0, graph.num_vertices, 300)]
    got: dict[int, int] = {}
    async with serving(config) as served:
        # The traversal kernels compile on first use (minutes on a cold kernel cache):
        # once here, with no HTTP client's timeout running.
        session = served.session("g")
        await session.query("reach", sources[0])
        await session.query_many("reach", sources[:4])

        async def ask(source: int) -> None:
            answer = await served.client.post("/v1/graphs/g/reach", json={"source": source})
            assert answer.status_code == 200, answer.text
            got[source] = answer.json()["answer"]

        async with anyio.create_task_group() as tg:
            for source in sources:
                tg.start_soon(ask, source)
        described = (await served.client.get("/v1/graphs/g")).json()
        stats = session.batch_stats()
    expected = await anyio.to_thread.run_sync(lambda: {s: reached(graph, s) for s in got})
    assert sorted(got) == sorted(set(sources))
    assert got == expected
    assert stats is not None
    assert stats.batches < stats.served, "concurrent queries shared batches"
    assert described["vertices"] == graph.num_vertices
    assert described["replicas"] == 1
    assert described["state"] == "ready"
