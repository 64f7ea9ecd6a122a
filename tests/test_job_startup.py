"""A job's start-up timeline in its log: each stage once, in the order they depend on."""

from __future__ import annotations

import functools
import json
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from job_files import committed, expected_reach, job_file, random_sources, rmat_graph, write_job

from vyre_async.algorithms import lookup
from vyre_async.cli import main
from vyre_async.errors import UnsupportedFeatureError
from vyre_async.jobs import JobRunner, load_job, read_records
from vyre_async.jobs.runner import BlockResult

sys.path.insert(0, str(Path(__file__).parent))
import cuda_sim

#: Stages every local job goes through, each after the one before it.
CHAIN = (
    "devices_checked",
    "job_checked",
    "device_arrays",
    "first_block_started",
    "first_block_done",
    "first_chunk_committed",
)


def startup_events(folder: Path) -> list[dict[str, Any]]:
    """The ``startup`` events of a job folder's ``log.jsonl``, in the order logged."""
    lines = (folder / "log.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "startup"]


async def test_a_jobs_log_holds_its_startup_stages_in_order(tmp_path: Path) -> None:
    """A two-device CPU job logs each stage once, each after those it waits for, every
    device's upload, and nothing after its first commit; its records equal SciPy's."""
    graph = rmat_graph()
    sources = random_sources(200, 3, graph.num_vertices)
    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        job={"devices": [0, 1]},
        output={"first_commit_items": 16, "commit_items": 64},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path).run()
    assert summary.status == "complete"
    events = await anyio.to_thread.run_sync(startup_events, tmp_path / "out")
    at = {(e["stage"], e.get("device")): e["at_s"] for e in events}
    assert len(at) == len(events), "a stage was logged twice"
    chain = [at[(stage, None)] for stage in CHAIN]
    assert chain == sorted(chain)
    assert chain[0] >= 0
    assert chain[-1] <= summary.seconds + 1.0
    # A generated graph waits for the devices' check, not for the output folder.
    assert at[("devices_checked", None)] <= at[("graph_ready", None)] <= at[("device_arrays", None)]
    for device in ("0", "1"):
        uploaded = at[("graph_uploaded", device)]
        assert at[("graph_ready", None)] <= uploaded <= at[("first_block_started", None)]
        assert at[("kernels_loaded", device)] <= at[("first_block_started", None)]
    assert events[-1]["stage"] == "first_chunk_committed"
    assert events[-1]["items"] >= 16
    ready = next(e for e in events if e["stage"] == "graph_ready")
    assert ready["origin"] == "host"
    assert 0 <= ready["took_s"] <= ready["at_s"]
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


def test_the_command_lines_timeline_counts_from_the_process_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vyre-async run`` logs the process's start at 0, then its imports and the job
    file's load, before the runner's stages."""
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}])
    assert main(["run", str(job)]) == 0
    capsys.readouterr()
    events = startup_events(tmp_path / "out")
    stages = [e["stage"] for e in events]
    assert stages[:4] == ["process_started", "imported", "job_loaded", "devices_checked"]
    assert events[0]["at_s"] == 0.0
    assert 0 < events[1]["at_s"] <= events[2]["at_s"] <= events[3]["at_s"]


async def test_each_device_starts_once_with_the_jobs_kernels_all_devices_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CUDA job on four simulated devices (its blocks computed by SciPy: the simulator
    runs no traversal) makes each device's context once, loads there only the kernels
    of its workload's kind, each once, and uploads the graph in one copy; the devices
    make their contexts, load their first modules and allocate their graphs at the
    same time, and close at the same time; every context is let go and every record
    equals SciPy's."""
    sim = cuda_sim.install(monkeypatch, devices=4)
    sim.meet("cuDevicePrimaryCtxRetain", "cuModuleLoadData", "cuMemAlloc", "cuStreamDestroy")
    graph = rmat_graph()
    sources = random_sources(64, 9, graph.num_vertices)

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    path = await job_file(
        tmp_path,
        [{"kind": "reach", "sources": sources}],
        job={"backend": "cuda", "devices": "all"},
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path, execute=by_scipy).run()
    assert summary.status == "complete", summary.message
    kernels = set(lookup("reach").kernels(spec.workload[0].params))
    # int64 offsets and int32 indices (and the transpose's), int32 out-degrees
    copies = 1 if graph.symmetric else 2
    graph_bytes = copies * (8 * (graph.num_vertices + 1) + 4 * graph.num_edges)
    graph_bytes += 4 * graph.num_vertices
    for device, counts in enumerate(sim.per_device):
        assert counts["contexts_created"] == 1, f"device {device}: {counts}"
        assert counts["cuModuleLoadData"] == len(kernels), f"device {device}: {counts}"
        assert counts["cuMemcpyHtoDAsync"] == 1, f"device {device}: {counts}"
        assert counts["bytes_to_device"] >= graph_bytes
    assert sim.apart == set(), "devices started or closed one after another"
    assert sim.live_contexts == 0
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


def hold_driver_until_the_graph_is_read(
    monkeypatch: pytest.MonkeyPatch, sim: cuda_sim.SimulatedDriver
) -> list[bool]:
    """Make the simulated driver's initialisation (cuInit) wait until a graph file is
    being read; the list it returns gets, per initialisation, whether one was."""
    from vyre_async.cuda import _driver
    from vyre_async.jobs.graph import _graph_prep

    reading = threading.Event()
    overlapped: list[bool] = []

    def initialise(import_module: object) -> cuda_sim.SimulatedDriver:
        overlapped.append(reading.wait(timeout=10.0))  # only a failing run waits it out
        return sim

    read = _graph_prep.load_section_graph

    def reading_graph(*args: Any) -> Any:
        reading.set()
        return read(*args)

    monkeypatch.setattr(_driver, "_driver", None)
    monkeypatch.setattr(_driver, "_initialise", initialise)
    monkeypatch.setattr(_graph_prep, "load_section_graph", reading_graph)
    return overlapped


def write_npz_job(folder: Path, graph: Any, sources: list[int], **job: Any) -> Path:
    """A CUDA job file over ``graph`` saved as ``folder/graph.npz``."""
    from vyre_async.graphs import save_npz

    save_npz(graph, folder / "graph.npz")
    path = write_job(
        folder, [{"kind": "reach", "sources": sources}], job={"backend": "cuda", **job}
    )
    data = json.loads(path.read_text())
    data["graph"] = {"kind": "npz", "path": "graph.npz"}
    path.write_text(json.dumps(data))
    return path


async def test_a_cuda_jobs_graph_is_read_while_the_driver_initialises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulated driver's initialisation (cuInit) waits until the graph file is
    being read, which it is: the graph's read does not wait for the devices' check;
    the job completes with SciPy's records."""
    sim = cuda_sim.install(monkeypatch, devices=1)
    overlapped = hold_driver_until_the_graph_is_read(monkeypatch, sim)
    graph = rmat_graph()
    sources = random_sources(32, 4, graph.num_vertices)

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    path = await anyio.to_thread.run_sync(write_npz_job, tmp_path, graph, sources)
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path, execute=by_scipy).run()
    assert summary.status == "complete", summary.message
    assert overlapped == [True]
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


async def test_a_refused_device_cancels_the_graph_read_and_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CUDA job asking for device 3 of one simulated device is refused while its graph
    file is being read (the driver held until then): the read ends, nothing is left."""
    sim = cuda_sim.install(monkeypatch, devices=1)
    overlapped = hold_driver_until_the_graph_is_read(monkeypatch, sim)
    graph = rmat_graph()
    path = await anyio.to_thread.run_sync(
        functools.partial(write_npz_job, tmp_path, graph, [0, 1], devices=3)
    )
    spec = await anyio.to_thread.run_sync(load_job, path)
    with pytest.raises(UnsupportedFeatureError) as info:
        await JobRunner(spec, job_file=path).run()
    assert "device 3 was asked for" in info.value.what
    assert overlapped == [True]
    assert not await anyio.to_thread.run_sync((tmp_path / "out").exists)


def test_the_command_line_initialises_the_driver_once_while_the_graph_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vyre-async run`` leaves the devices' check to the runner: the simulated
    driver initialises once, while the job's graph file is read, and the run exits 0."""
    sim = cuda_sim.install(monkeypatch, devices=1)
    overlapped = hold_driver_until_the_graph_is_read(monkeypatch, sim)
    graph = rmat_graph()
    path = write_npz_job(tmp_path, graph, [0, 1, 2])

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    monkeypatch.setattr("vyre_async.cli.JobRunner", functools.partial(JobRunner, execute=by_scipy))
    assert main(["run", str(path)]) == 0, capsys.readouterr().err
    assert overlapped == [True]
    records = sorted(read_records(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in (0, 1, 2)]


async def test_each_device_copies_a_large_graph_from_host_memory_all_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CUDA job on four simulated devices over a graph of megabytes copies it to
    every device straight from the host arrays (one ``cuMemcpyHtoD`` per array, no
    page-locked staging block per device), the devices' first copies at the same time;
    every record equals SciPy's."""
    from vyre_async.graphs import rmat, save_npz

    sim = cuda_sim.install(monkeypatch, devices=4)
    sim.meet("cuMemcpyHtoD")
    graph = rmat(14, 16, 3)
    sources = random_sources(8, 5, graph.num_vertices)

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    def write() -> Path:
        save_npz(graph, tmp_path / "graph.npz")
        path = write_job(
            tmp_path,
            [{"kind": "reach", "sources": sources}],
            job={"backend": "cuda", "devices": "all"},
        )
        data = json.loads(path.read_text())
        data["graph"] = {"kind": "npz", "path": "graph.npz"}
        path.write_text(json.dumps(data))
        return path

    path = await anyio.to_thread.run_sync(write)
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path, execute=by_scipy).run()
    assert summary.status == "complete", summary.message
    arrays = 3 if graph.symmetric else 5  # offsets, indices, out-degrees (a transpose's)
    graph_bytes = 4 * graph.num_vertices + (arrays - 1) // 2 * (
        8 * (graph.num_vertices + 1) + 4 * graph.num_edges
    )
    assert graph_bytes > 1 << 20
    for device, counts in enumerate(sim.per_device):
        assert counts["cuMemcpyHtoD"] == arrays, f"device {device}: {counts}"
        assert counts.get("cuMemcpyHtoDAsync", 0) == 0, f"device {device}: {counts}"
        assert counts.get("cuMemHostAlloc", 0) == 0, f"device {device}: {counts}"
        assert counts["bytes_to_device"] >= graph_bytes
    assert sim.apart == set(), "devices copied one after another"
    records = sorted(await committed(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in sources]


def test_the_command_line_starts_the_driver_before_it_configures_logging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``vyre-async run`` of a CUDA job starts initialising the simulated driver before
    it configures logging (which imports structlog), so the two overlap; it exits 0."""
    from vyre_async import cli
    from vyre_async.cuda import _driver

    sim = cuda_sim.install(monkeypatch, devices=1)
    began = threading.Event()
    overlapped: list[bool] = []

    def initialise(import_module: object) -> cuda_sim.SimulatedDriver:
        began.set()
        return sim

    configure = cli.configure_logging

    def configuring(*args: Any, **kwargs: Any) -> None:
        overlapped.append(began.wait(timeout=10.0))  # only a failing run waits it out
        configure(*args, **kwargs)

    graph = rmat_graph()

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    monkeypatch.setattr(_driver, "_driver", None)
    monkeypatch.setattr(_driver, "_initialise", initialise)
    monkeypatch.setattr(cli, "configure_logging", configuring)
    monkeypatch.setattr(cli, "JobRunner", functools.partial(JobRunner, execute=by_scipy))
    job = write_job(tmp_path, [{"kind": "reach", "sources": [0, 1, 2]}], job={"backend": "cuda"})
    assert main(["run", str(job)]) == 0, capsys.readouterr().err
    assert overlapped == [True]
    records = sorted(read_records(tmp_path / "out"), key=lambda r: r.id)
    assert [r.reached for r in records] == [expected_reach(graph, s) for s in (0, 1, 2)]


async def test_a_graph_ready_before_the_folder_is_made_is_in_the_jobs_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulated driver's initialisation waits until the graph is ready, so the
    ``graph_ready`` event comes before the output folder may be made: ``log.jsonl``
    still holds it (origin, vertex and edge counts), before the job's other events."""
    from vyre_async.cuda import _driver
    from vyre_async.jobs.graph import _graph_prep

    sim = cuda_sim.install(monkeypatch, devices=1)
    ready = threading.Event()
    overlapped: list[bool] = []

    def initialise(import_module: object) -> cuda_sim.SimulatedDriver:
        overlapped.append(ready.wait(timeout=10.0))  # only a failing run waits it out
        return sim

    stage = _graph_prep.startup_stage

    def marking(name: str, **fields: Any) -> None:
        stage(name, **fields)
        ready.set()

    monkeypatch.setattr(_driver, "_driver", None)
    monkeypatch.setattr(_driver, "_initialise", initialise)
    monkeypatch.setattr(_graph_prep, "startup_stage", marking)
    graph = rmat_graph()

    async def by_scipy(session: object, workload: object, block: np.ndarray) -> BlockResult:
        return BlockResult(np.array([expected_reach(graph, int(s)) for s in block]))

    path = await anyio.to_thread.run_sync(write_npz_job, tmp_path, graph, [0, 1, 2])
    spec = await anyio.to_thread.run_sync(load_job, path)
    summary = await JobRunner(spec, job_file=path, execute=by_scipy).run()
    assert summary.status == "complete", summary.message
    assert overlapped == [True]
    text = await anyio.to_thread.run_sync((tmp_path / "out" / "log.jsonl").read_text)
    events = [json.loads(line) for line in text.splitlines()]
    names = [e["event"] for e in events]
    assert names.count("graph_ready") == 1
    assert names.index("graph_ready") < names.index("job_started")
    ready_event = events[names.index("graph_ready")]
    assert ready_event["origin"] == "file"
    assert (ready_event["vertices"], ready_event["edges"]) == (graph.num_vertices, graph.num_edges)
