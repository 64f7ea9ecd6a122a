"""Hostile and absurd job inputs: each refused by validate and by run with exit 2 and a fix,
quickly and within bounded memory (a child process under an address-space limit and a
timeout), never a traceback, crash or hang, and before the output folder is made."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

CHILD = Path(__file__).with_name("cli_child.py")
#: Address space each child may map: far below what any of these inputs would take.
ADDRESS_SPACE = 3 << 30
#: Seconds each child may take for both commands.
TIMEOUT_S = 60
RMAT = {"kind": "rmat", "scale": 6}


def _job(**sections: object) -> dict[str, object]:
    data: dict[str, object] = {
        "job": {"name": "hostile", "backend": "cpu"},
        "graph": RMAT,
        "workload": [{"kind": "reach", "sources": [0]}],
        "output": {"dir": "out"},
    }
    data.update(sections)
    return data


def _json(folder: Path, data: object, name: str = "job.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def _edges_job(folder: Path, graph_path: str, kind: str = "edges") -> Path:
    return _json(folder, _job(graph={"kind": kind, "path": graph_path}))


def deep_yaml(folder: Path) -> Path:
    path = folder / "job.yaml"
    path.write_text("- " * 50_000 + "x\n")
    return path


def deep_toml(folder: Path) -> Path:
    path = folder / "job.toml"
    path.write_text("x = " + "[" * 500 + "]" * 500 + "\n")
    return path


def deep_json(folder: Path) -> Path:
    path = folder / "job.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def fifo_job(folder: Path) -> Path:
    path = folder / "job.json"
    os.mkfifo(path)
    return path


def dev_zero_job(folder: Path) -> Path:
    path = folder / "job.json"
    path.symlink_to("/dev/zero")
    return path


def huge_job(folder: Path) -> Path:
    return _json(folder, _job(workload=[{"kind": "bfs", "sources": [1] * 9_000_000}]))


def repeated_json_key(folder: Path) -> Path:
    path = folder / "job.json"
    text = json.dumps(_job())
    path.write_text(text.replace('"name": "hostile"', '"name": "hostile", "name": "other"'))
    return path


def repeated_yaml_key(folder: Path) -> Path:
    path = folder / "job.yaml"
    path.write_text(
        "job: {name: hostile, backend: cpu}\ngraph: {kind: rmat, scale: 6}\n"
        "workload:\n  - kind: reach\n    sources: [0]\n    kind: bfs\noutput: {dir: out}\n"
    )
    return path


def source_2_63(folder: Path) -> Path:
    return _json(folder, _job(workload=[{"kind": "bfs", "sources": [2**63]}]))


def nul_in_output_dir(folder: Path) -> Path:
    return _json(folder, _job(output={"dir": "o\x00ut"}))


def unknown_output_format(folder: Path) -> Path:
    return _json(folder, _job(output={"dir": "out", "format": "csv"}))


def nul_in_graph_path(folder: Path) -> Path:
    return _json(folder, _job(graph={"kind": "edges", "path": "g\x00.txt"}))


def absurd_k(folder: Path) -> Path:
    return _json(folder, _job(workload=[{"kind": "khop", "k": 10**12, "sources": [0]}]))


def infinite_tol(folder: Path) -> Path:
    path = folder / "job.toml"
    path.write_text(
        '[job]\nname = "hostile"\nbackend = "cpu"\n[graph]\nkind = "rmat"\nscale = 6\n'
        '[[workload]]\nkind = "pagerank"\ntol = inf\n[output]\ndir = "out"\n'
    )
    return path


def pagerank_with_no_sources(folder: Path) -> Path:
    return _json(folder, _job(workload=[{"kind": "pagerank", "sources": []}]))


def rmat_scale_28(folder: Path) -> Path:
    return _json(folder, _job(graph={"kind": "rmat", "scale": 28}))


def rmat_scale_30_ef_1024(folder: Path) -> Path:
    return _json(folder, _job(graph={"kind": "rmat", "scale": 30, "edge_factor": 1024}))


def ten_billion_items(folder: Path) -> Path:
    workload = [{"kind": "reach", "sources": {"random": 10**8, "seed": i}} for i in range(100)]
    return _json(folder, _job(workload=workload))


def edge_list_with_a_huge_id(folder: Path) -> Path:
    (folder / "g.txt").write_text("0 2147483645\n")
    return _edges_job(folder, "g.txt")


def mtx_of_2_31_vertices(folder: Path) -> Path:
    (folder / "g.mtx").write_text(
        "%%MatrixMarket matrix coordinate pattern general\n2147483647 2147483647 1\n1 2\n"
    )
    return _edges_job(folder, "g.mtx", kind="mtx")


def npz_header_of_4e9_items(folder: Path) -> Path:
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, np.int32))
    header["shape"] = (4_000_000_000,)
    with zipfile.ZipFile(folder / "g.npz", "w") as archive:
        for name in ("offsets", "indices"):
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array_header_1_0(member, header)
                member.write(b"\0" * 64)
    return _edges_job(folder, "g.npz", kind="npz")


def fifo_graph(folder: Path) -> Path:
    os.mkfifo(folder / "g.txt")
    return _edges_job(folder, "g.txt")


def dev_zero_graph(folder: Path) -> Path:
    (folder / "g.txt").symlink_to("/dev/zero")
    return _edges_job(folder, "g.txt")


def one_line_edge_list(folder: Path) -> Path:
    (folder / "g.txt").write_bytes(b"1 " * 3_000_000)
    return _edges_job(folder, "g.txt")


def graph_outside_the_job_folder(folder: Path) -> Path:
    (folder.parent / "secret.txt").write_text("root:x:0:0:top-secret-words\n")
    return _edges_job(folder, "../secret.txt")


def graph_inside_with_a_long_bad_line(folder: Path) -> Path:
    (folder / "g.txt").write_text("0 1\n" + "7 " * 2000 + "\n")
    return _edges_job(folder, "g.txt")


def over_the_configured_memory(folder: Path) -> Path:
    (folder / "g.mtx").write_text(
        "%%MatrixMarket matrix coordinate pattern general\n100000 100000 1\n1 2\n"
    )
    data = _job(graph={"kind": "mtx", "path": "g.mtx"}, limits={"max_host_memory_gib": 0.001})
    return _json(folder, data)


#: Each input, and what the message must say.
CORPUS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "YAML list 50,000 deep": (deep_yaml, "nested more than 32 deep"),
    "TOML array 500 deep": (deep_toml, "nested more than 32 deep"),
    "JSON array 100,000 deep": (deep_json, "nested more than 32 deep"),
    "job file is a FIFO": (fifo_job, "FIFO"),
    "job file is /dev/zero": (dev_zero_job, "character device"),
    "job file of 18 MB": (huge_job, "at most 16,777,216 bytes"),
    "JSON key twice": (repeated_json_key, "$.job: the key 'name' appears more than once"),
    "YAML key twice": (repeated_yaml_key, "$.workload[0]: the key 'kind' appears more than once"),
    "source 2**63": (source_2_63, "$.workload[0].sources[0]"),
    "NUL in output.dir": (nul_in_output_dir, "$.output.dir"),
    "NUL in graph.path": (nul_in_graph_path, "$.graph.path"),
    "output.format = 'csv'": (unknown_output_format, "expected one of 'jsonl', 'parquet'"),
    "k = 10**12": (absurd_k, "$.workload[0].k"),
    "tol = inf": (infinite_tol, "$.workload[0].tol"),
    "pagerank with sources = []": (pagerank_with_no_sources, "pagerank takes no sources"),
    "R-MAT scale 28": (rmat_scale_28, "of host memory"),
    "R-MAT scale 30, edge_factor 1024": (rmat_scale_30_ef_1024, "of host memory"),
    "100 workloads of 1e8 sources": (ten_billion_items, "10,000,000,000 items"),
    "edge list '0 2147483645'": (edge_list_with_a_huge_id, "2,147,483,646 vertices"),
    ".mtx of 2**31 - 1 vertices": (mtx_of_2_31_vertices, "2,147,483,647 vertices"),
    ".npz header of 4e9 items": (npz_header_of_4e9_items, "declares 4,000,000,000 items"),
    "graph file is a FIFO": (fifo_graph, "FIFO"),
    "graph file is /dev/zero": (dev_zero_graph, "character device"),
    "6 MB single-line edge list": (one_line_edge_list, "longer than 65,536 bytes"),
    "graph file outside the job's folder": (graph_outside_the_job_folder, "secret.txt line 1"),
    "long bad line inside the job's folder": (graph_inside_with_a_long_bad_line, "line 2"),
    "graph above max_host_memory_gib": (over_the_configured_memory, "the configured limit"),
}


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.mark.parametrize(("make", "says"), CORPUS.values(), ids=CORPUS.keys())
def test_a_hostile_input_exits_2_quickly_in_bounded_memory_with_a_fix(
    tmp_path: Path, make: Callable[[Path], Path], says: str
) -> None:
    """validate and run: exit 2, the problem and a fix in a short message, no folder made."""
    folder = tmp_path / "job"
    folder.mkdir()
    job = make(folder)
    out = tmp_path / "o"
    calls = [["validate", str(job)], ["run", str(job), "--out", str(out)]]
    child = subprocess.run(  # noqa: S603 - this repository's own child script
        [sys.executable, str(CHILD), json.dumps(calls)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=_limit_address_space,  # only sets an rlimit
        check=False,
    )
    err = child.stderr
    assert child.returncode == 0, err[-3000:]
    assert json.loads(child.stdout.splitlines()[-1]) == [2, 2], err[-3000:]
    messages = [part for part in err.split("--- exit 2") if part.strip()]
    assert len(messages) == 2
    for message in messages:
        assert says in message, message
        assert "Fix:" in message
        assert "Traceback" not in message
        assert len(message) < 1500, "an error quotes at most a short excerpt"
        assert "top-secret" not in message
        assert "7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7" not in message
    assert not out.exists(), "a refused run made its output folder"
