"""Jobs on Ray actors: a local Ray instance, two logical GPUs, CPU-backend actors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
import ray
from job_files import (
    committed,
    expected_reach,
    item_array,
    job_file,
    random_sources,
    rmat_graph,
    write_job,
)

import vyre_async as va
from vyre_async.cluster import GraphStore, KeptGraph
from vyre_async.cluster._executor import _address
from vyre_async.cluster._store import KEEP, NAMESPACE, STORE_NAME
from vyre_async.cluster._wire import ActorJob
from vyre_async.graphs import save_npz
from vyre_async.jobs import JobRunner, load_job
from vyre_async.jobs.graph import graph_fingerprint, graph_loads
from vyre_async.jobs.runner._graph_start import GraphStart
from vyre_async.testing import capture_logs


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """One local Ray instance for the module: 2 CPUs, 2 logical GPUs."""
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture
def anyio_backend() -> str:
    """Ray's awaitables are asyncio futures: these tests run on asyncio."""
    return "asyncio"


def _actor_names(job: str) -> list[str]:
    """Names of the live actors of runs of ``job`` (``vyre-<job>-<run id>-<i>``)."""
    return sorted(n for n in ray.util.list_named_actors() if n.startswith(f"vyre-{job}-"))


async def _folder(path: Path) -> Path:
    await anyio.Path(path).mkdir()
    return path


async def _run(job: Path, out: Path | None = None) -> va.jobs.JobSummary:
    spec = await anyio.to_thread.run_sync(load_job, job)
    return await JobRunner(spec, job_file=job, out=out).run()


@pytest.mark.usefixtures("ray_instance")
async def test_a_ray_job_commits_the_same_result_set_as_a_local_one(tmp_path: Path) -> None:
    """executor='ray' (two actors, one logical GPU each) = the local run, item for item."""
    workload = [
        {"kind": "bfs", "sources": {"random": 400, "seed": 8}},
        {"kind": "khop", "k": 2, "sources": [0, 1, 2, 3], "readback": "levels"},
    ]
    ray_job = await job_file(tmp_path, workload, job={"executor": "ray"})
    summary = await _run(ray_job)
    assert summary.status == "complete"
    assert summary.backend == "ray/cpu"
    assert summary.batches is not None
    assert len(summary.batches["blocks_per_actor"]) == 2
    local_job = tmp_path / "local"
    await anyio.Path(local_job).mkdir()
    local_file = await job_file(local_job, workload)
    await _run(local_file)
    got = await committed(tmp_path / "out")
    want = await committed(local_job / "out")
    key = lambda r: (r.id, r.source, r.reached, r.max_level, r.array is None)  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, want))
    local = {r.id: r for r in want}
    for record in got:
        if record.array is not None:
            mine = await item_array(tmp_path / "out", record)
            theirs = await item_array(local_job / "out", local[record.id])
            assert np.array_equal(mine, theirs)
    graph = rmat_graph()
    sources = random_sources(400, 8, graph.num_vertices)
    for record in got:
        if record.workload == 0:
            assert record.reached == expected_reach(graph, sources[record.id])


@pytest.mark.usefixtures("ray_instance")
async def test_killing_an_actor_mid_job_still_commits_every_item_once(tmp_path: Path) -> None:
    """ray.kill of one actor while blocks run: retried elsewhere, full set, no duplicates."""
    items = 6000
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": items, "seed": 5}}],
        job={"executor": "ray"},
        graph={"scale": 11},
    )
    summary: list[va.jobs.JobSummary] = []

    async def run() -> None:
        summary.append(await _run(job))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        manifest = anyio.Path(tmp_path / "out" / "manifest.json")
        with anyio.fail_after(120):
            # A few commits in, both actors are running blocks. (The manifest is written
            # by the runner's commit thread; there is no event to wait on.)
            while not (  # noqa: ASYNC110
                await manifest.exists()
                and len(json.loads(await manifest.read_text())["chunks"]) >= 3
            ):
                await anyio.sleep(0.01)
        names = await anyio.to_thread.run_sync(_actor_names, "test-job")
        actor = await anyio.to_thread.run_sync(ray.get_actor, names[0])
        await anyio.to_thread.run_sync(lambda: ray.kill(actor, no_restart=False))
    assert summary[0].status == "complete"
    records = await committed(tmp_path / "out")
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)), "a record was committed twice"
    assert sorted(ids) == list(range(items))
    assert all(r.ok for r in records)
    local = await job_file(
        await _folder(tmp_path / "local"),
        [{"kind": "reach", "sources": {"random": items, "seed": 5}}],
        graph={"scale": 11},
    )
    await _run(local)
    want = await committed(tmp_path / "local" / "out")
    assert sorted((r.id, r.source, r.reached) for r in records) == sorted(
        (r.id, r.source, r.reached) for r in want
    )


@pytest.mark.usefixtures("ray_instance")
async def test_two_concurrent_runs_of_one_job_on_one_instance_do_not_collide(
    tmp_path: Path,
) -> None:
    """Two runs of one job at once on one Ray instance: distinct actors, equal full results."""
    items = 1500
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": items, "seed": 6}}],
        job={"executor": "ray", "ray_workers": 1},
        graph={"scale": 10},
    )
    spec = await anyio.to_thread.run_sync(load_job, job)
    summaries: dict[str, va.jobs.JobSummary] = {}

    async def run(name: str) -> None:
        summaries[name] = await JobRunner(spec, job_file=job, out=tmp_path / name).run()

    with capture_logs() as logs, anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "first")
            tg.start_soon(run, "second")
    assert [s.status for s in summaries.values()] == ["complete", "complete"]
    events = [e for e in logs if e["event"] in ("ray_actors_started", "job_finished")]
    started = [e for e in events if e["event"] == "ray_actors_started"]
    # Both runs had their actors up before either finished: they did run side by side.
    assert [e["event"] for e in events[:2]] == ["ray_actors_started"] * 2
    assert started[0]["run"] != started[1]["run"]
    first, second = await committed(tmp_path / "first"), await committed(tmp_path / "second")
    assert sorted((r.id, r.reached) for r in first) == sorted((r.id, r.reached) for r in second)
    assert sorted(r.id for r in first) == list(range(items))


@pytest.mark.usefixtures("ray_instance")
async def test_actors_get_the_graph_from_the_object_store_not_the_loader(tmp_path: Path) -> None:
    """A file graph is loaded once, by the driver; actors call no loader and hold shared views."""
    graph = rmat_graph()
    await anyio.to_thread.run_sync(save_npz, graph, tmp_path / "graph.npz")
    workload = [{"kind": "bfs", "sources": {"random": 300, "seed": 2}}]
    job = await job_file(
        tmp_path, workload, job={"executor": "ray"}, graph={"kind": "npz", "path": "graph.npz"}
    )
    loads = graph_loads()
    with anyio.fail_after(180):
        summary = await _run(job)
    assert summary.status == "complete"
    assert graph_loads() == loads + 1, "the driver loads the graph file exactly once"
    assert summary.batches is not None
    assert summary.batches["graph_loads_per_actor"] == [0, 0]
    assert summary.batches["graph_shared_per_actor"] == [True, True]
    assert sum(summary.batches["blocks_per_actor"]) > 0
    sources = random_sources(300, 2, graph.num_vertices)
    for record in await committed(tmp_path / "out"):
        assert record.reached == expected_reach(graph, sources[record.id])


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_a_ray_job_under_trio_is_refused_with_a_fix(tmp_path: Path) -> None:
    """Under trio, executor='ray' raises ConfigurationError saying asyncio only."""
    job = await job_file(tmp_path, [{"kind": "reach", "sources": [0]}], job={"executor": "ray"})
    with pytest.raises(va.ConfigurationError, match=r"asyncio only.*Fix:"):
        await _run(job)


def _kept_graphs() -> list[KeptGraph]:
    """What the cluster's graph store keeps now."""
    store = ray.get_actor(STORE_NAME, namespace=NAMESPACE)
    return msgspec.msgpack.decode(ray.get(store.graphs.remote()), type=list[KeptGraph])


@pytest.mark.usefixtures("ray_instance")
async def test_a_later_job_of_the_same_graph_starts_from_the_cluster_store(
    tmp_path: Path,
) -> None:
    """The first job lends its graph and the store keeps a copy; a later job of the same
    graph (other workloads, another folder) starts its actors from that copy and puts
    nothing; both equal SciPy."""
    graph_section = {"kind": "rmat", "scale": 9, "edge_factor": 8, "seed": 23}
    graph = va.graphs.rmat(9, 8, 23)
    first = await job_file(
        await _folder(tmp_path / "first"),
        [{"kind": "reach", "sources": {"random": 200, "seed": 3}}],
        job={"executor": "ray"},
        graph=graph_section,
    )
    second = await job_file(
        await _folder(tmp_path / "second"),
        [{"kind": "bfs", "sources": {"random": 150, "seed": 4}}],
        job={"executor": "ray"},
        graph=graph_section,
    )
    spec = await anyio.to_thread.run_sync(load_job, first)
    key = await anyio.to_thread.run_sync(graph_fingerprint, spec, first)
    with capture_logs() as logs, anyio.fail_after(240):
        assert (await _run(first)).status == "complete"
    assert [e["origin"] for e in logs if e["event"] == "ray_graph"] == ["driver"]
    assert [e["status"] for e in logs if e["event"] == "ray_graph_kept"] == ["kept"]
    kept = await anyio.to_thread.run_sync(_kept_graphs)
    assert key in [k.key for k in kept]
    nbytes = graph.offsets.nbytes + graph.indices.nbytes
    assert [k.nbytes for k in kept if k.key == key] == [nbytes]
    with capture_logs() as logs, anyio.fail_after(240):
        assert (await _run(second)).status == "complete"
    assert [e["origin"] for e in logs if e["event"] == "ray_graph"] == ["cluster"]
    started = [e for e in logs if e["event"] == "ray_actors_started"]
    assert [e["graph"] for e in started] == ["in the cluster's store"]
    assert not [e for e in logs if e["event"] == "ray_graph_kept"], "nothing was lent"
    for folder, count, seed in (("first", 200, 3), ("second", 150, 4)):
        sources = random_sources(count, seed, graph.num_vertices)
        records = await committed(tmp_path / folder / "out")
        assert sorted(r.id for r in records) == list(range(count))
        for record in records:
            assert record.reached == expected_reach(graph, sources[record.id])


@pytest.mark.usefixtures("ray_instance")
async def test_no_actor_is_created_with_arguments_in_the_object_store(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A graph and a source list far over Ray's inline limit (100 KiB) stay out of the
    actors' constructor arguments, so Ray logs no error line about restarts."""
    sources = list(range(0, 8192, 1))
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        job={"executor": "ray"},
        graph={"kind": "rmat", "scale": 13, "edge_factor": 16, "seed": 2},
    )
    with anyio.fail_after(240):
        assert (await _run(job)).status == "complete"
    graph = va.graphs.rmat(13, 16, 2)
    assert graph.indices.nbytes > 100 * 1024, "the graph must be too large to inline"
    err = (await anyio.to_thread.run_sync(capfd.readouterr)).err
    assert "constructor arguments in the object store" not in err


@pytest.mark.usefixtures("ray_instance")
def test_the_store_keeps_the_most_recently_used_graphs() -> None:
    """Past KEEP graphs, the least recently used one (looked up or kept) goes first."""
    store = ray.remote(GraphStore).remote()  # a store of its own, not the cluster's
    rng = np.random.default_rng()

    def keep(key: str) -> None:
        lent = [ray.put(rng.integers(0, 9, 4)), ray.put(rng.integers(0, 9, 7)), None, False]
        assert ray.get(store.keep.remote(key, "run", lent)) == "kept"

    for i in range(KEEP):
        keep(f"g{i}")
    assert ray.get(store.lookup.remote("g0")) is not None  # g0 is now the most recent
    keep("new")
    kept = msgspec.msgpack.decode(ray.get(store.graphs.remote()), type=list[KeptGraph])
    assert [k.key for k in kept] == [*(f"g{i}" for i in range(2, KEEP)), "g0", "new"]
    assert ray.get(store.lookup.remote("g1")) is None
    got = ray.get(store.lookup.remote("new"))
    assert len(got) == 4
    assert got[2] is None
    assert got[3] is False
    assert [k.nbytes for k in kept][-1] == 11 * np.dtype(np.int64).itemsize
    ray.kill(store)


def test_the_cluster_address_comes_from_the_job_file_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ray_address wins over RAY_ADDRESS; with neither, a local instance starts."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0]}], job={"executor": "ray"})
    spec = load_job(job)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert _address(spec) == (None, "none")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.7:6379")
    assert _address(spec) == ("10.0.0.7:6379", "RAY_ADDRESS")
    spec = msgspec.structs.replace(spec, job=msgspec.structs.replace(spec.job, ray_address="auto"))
    assert _address(spec) == ("auto", "ray_address")


def test_an_actor_is_created_with_a_few_hundred_bytes_whatever_the_sources(
    tmp_path: Path,
) -> None:
    """A million listed sources do not travel to the actors (blocks carry theirs)."""
    sources = np.random.default_rng().integers(0, 256, 1_000_000).tolist()
    job = write_job(tmp_path, [{"kind": "khop", "k": 2, "sources": sources}])
    spec = load_job(job)
    encoded = msgspec.msgpack.encode(ActorJob.of(spec, "0" * 64, "run"))
    assert len(encoded) < 1024
    decoded = msgspec.msgpack.decode(encoded, type=ActorJob)
    assert [(w.kind, w.params["k"]) for w in decoded.workloads] == [("khop", 2)]


def _warm_actors() -> dict[str, list[str]]:
    store = ray.get_actor(STORE_NAME, namespace=NAMESPACE)
    return ray.get(store.warm_actors.remote())


def _alive(names: list[str]) -> list[str]:
    """Which of the named kept actors still exist (kept actors live in NAMESPACE)."""
    listed = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)}
    return [n for n in names if n in listed]


@pytest.mark.usefixtures("ray_instance")
async def test_kept_actors_take_a_later_job_of_their_graph_and_leave_for_another(
    tmp_path: Path,
) -> None:
    """ray_keep_actors_s: the actors wait after the job; a later job of the graph (other
    workload and batching) runs on them without starting any; a job of another graph
    that needs their devices has them removed; results equal SciPy throughout."""
    graph_a = {"kind": "rmat", "scale": 9, "edge_factor": 8, "seed": 31}
    graph_b = {"kind": "rmat", "scale": 9, "edge_factor": 8, "seed": 32}

    blocks: dict[str, int] = {}

    async def run(name: str, graph: dict[str, Any], keep: float, batch: int) -> list[Any]:
        job = await job_file(
            await _folder(tmp_path / name),
            [{"kind": "reach", "sources": {"random": 120, "seed": 9}}],
            job={"executor": "ray", "ray_keep_actors_s": keep},
            graph=graph,
            batching={"max_batch": batch},
        )
        with capture_logs() as logs, anyio.fail_after(240):
            summary = await _run(job)
        assert summary.status == "complete"
        assert summary.batches is not None
        blocks[name] = sum(summary.batches["blocks_per_actor"])
        sources = random_sources(120, 9, 1 << 9)
        reference = va.graphs.rmat(9, 8, graph["seed"])
        records = await committed(tmp_path / name / "out")
        assert sorted(r.id for r in records) == list(range(120))
        for record in records:
            assert record.reached == expected_reach(reference, sources[record.id])
        return logs

    logs = await run("first", graph_a, 120.0, 16)
    assert [e["warm"] for e in logs if e["event"] == "ray_actors_started"] == [0]
    warm = await anyio.to_thread.run_sync(_warm_actors)
    assert len(warm) == 1
    (kept,) = warm.values()
    assert len(kept) == 2
    logs = await run("second", graph_a, 120.0, 16)
    assert [e["warm"] for e in logs if e["event"] == "ray_actors_started"] == [2]
    ready = [e for e in logs if e["event"] == "ray_actor_ready"]
    assert sorted(e["actor"] for e in ready) == sorted(kept)
    assert all(e["warm"] for e in ready), "no actor was started anew"
    assert blocks["second"] == blocks["first"], "an adopted actor counts this job's blocks"
    logs = await run("batching", graph_a, 0.0, 32)  # another batching: a new session
    assert [e["warm"] for e in logs if e["event"] == "ray_actors_started"] == [2]
    assert await anyio.to_thread.run_sync(_warm_actors) == {}, "keep 0: removed after"
    logs = await run("third", graph_a, 120.0, 16)
    kept = next(iter((await anyio.to_thread.run_sync(_warm_actors)).values()))
    logs = await run("other", graph_b, 0.0, 16)
    evicted = [e["actors"] for e in logs if e["event"] == "ray_actors_evicted"]
    assert evicted == [2], "the idle actors of the other graph held both devices"
    assert await anyio.to_thread.run_sync(_warm_actors) == {}
    with anyio.fail_after(60):
        while await anyio.to_thread.run_sync(_alive, kept):  # noqa: ASYNC110 - Ray's own
            await anyio.sleep(0.05)


@pytest.mark.usefixtures("ray_instance")
async def test_a_kept_actor_exits_once_idle_for_its_time(tmp_path: Path) -> None:
    """An actor kept 1 s after its job leaves the store's list and exits on its own."""
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": 50, "seed": 2}}],
        job={"executor": "ray", "ray_keep_actors_s": 1.0, "ray_workers": 1},
    )
    with anyio.fail_after(240):
        assert (await _run(job)).status == "complete"
    with anyio.fail_after(60):
        while await anyio.to_thread.run_sync(_warm_actors):  # noqa: ASYNC110 - Ray's own
            await anyio.sleep(0.05)
        names = [
            a["name"]
            for a in await anyio.to_thread.run_sync(
                lambda: ray.util.list_named_actors(all_namespaces=True)
            )
            if a["name"].startswith("vyre-test-job-")
        ]
        while await anyio.to_thread.run_sync(_alive, names):  # noqa: ASYNC110 - Ray's own
            await anyio.sleep(0.05)


@pytest.mark.usefixtures("ray_instance")
async def test_a_kept_actor_exits_when_the_store_is_gone(tmp_path: Path) -> None:
    """Killing the graph store (which drops its list of kept actors) does not strand a
    kept actor: it exits once idle, as it would have."""
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": 40, "seed": 3}}],
        job={"name": "orphan", "executor": "ray", "ray_keep_actors_s": 1.0, "ray_workers": 1},
    )
    with anyio.fail_after(240):
        assert (await _run(job)).status == "complete"
    names = [n for names in (await anyio.to_thread.run_sync(_warm_actors)).values() for n in names]
    assert len(names) == 1
    store = await anyio.to_thread.run_sync(lambda: ray.get_actor(STORE_NAME, namespace=NAMESPACE))
    await anyio.to_thread.run_sync(lambda: ray.kill(store, no_restart=True))
    with anyio.fail_after(60):
        while await anyio.to_thread.run_sync(_alive, names):  # noqa: ASYNC110 - Ray's own
            await anyio.sleep(0.05)


@pytest.mark.usefixtures("ray_instance")
async def test_kept_actors_outlast_a_driver_slower_than_their_idle_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver that sends its first block 2 s after its actors are ready (idle time
    0.5 s) keeps them: its pauses are not a dead driver's, and its items all commit."""
    take = GraphStart.take
    logs: list[dict[str, Any]] = []

    async def slow_take(self: GraphStart) -> Any:
        graph = await take(self)
        while len([e for e in logs if e["event"] == "ray_actor_ready"]) < 2:  # noqa: ASYNC110
            await anyio.sleep(0.05)  # the actors' start is Ray's: no event to wait on
        await anyio.sleep(2.0)  # real time: the actors' idle clock is their processes'
        return graph

    graph = {"kind": "rmat", "scale": 9, "edge_factor": 8, "seed": 41}
    first = await job_file(  # puts the graph into the store, so actors start without us
        await _folder(tmp_path / "first"),
        [{"kind": "reach", "sources": [0]}],
        job={"executor": "ray", "ray_workers": 1},
        graph=graph,
    )
    with anyio.fail_after(240):
        assert (await _run(first)).status == "complete"
    monkeypatch.setattr(GraphStart, "take", slow_take)
    job = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": {"random": 300, "seed": 4}}],
        job={"executor": "ray", "ray_keep_actors_s": 0.5, "ray_workers": 2},
        graph=graph,
        limits={"retries": 0},
    )
    with capture_logs() as captured, anyio.fail_after(240):
        logs = captured
        summary = await _run(job)
    assert [e["warm"] for e in logs if e["event"] == "ray_actors_started"] == [0]
    assert summary.status == "complete"
    assert summary.items_failed == 0
    assert sorted(r.id for r in await committed(tmp_path / "out")) == list(range(300))
