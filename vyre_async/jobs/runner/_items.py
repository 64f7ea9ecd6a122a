"""A job's items: one query per source, or one run of a kind without sources, from 0.

Workloads are numbered in file order and their items follow each other: workload 0
holds ids ``0 .. n0-1``, workload 1 the next ``n1``, and so on. Sources are made
lazily, in blocks, so a job of a hundred million random sources never holds them all;
random sources are drawn in fixed-size chunks from a generator seeded by the file,
so every run (and every resume) sees the same source for the same id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import numpy.typing as npt

from ...errors import ConfigurationError, ValidationError
from ...graphs import CsrGraph
from ..spec import JobSpec, RandomSources, WorkloadSection

#: Random sources drawn per generator call. Part of the sources' definition (it
#: orders the draws), so keep it fixed.
SOURCE_CHUNK = 1 << 16
#: Host bytes of rows (full levels, say) one block may bring back.
LEVELS_BLOCK_BYTES = 256 << 20

Ids = npt.NDArray[np.int64]


class ItemBlock:
    """Consecutive items of one workload that run together.

    Attributes:
        workload: Index of the workload in the job file.
        ids: Item ids (int64), ascending.
        sources: Source vertex per item (int64); empty for a kind without sources.
    """

    __slots__ = ("ids", "sources", "workload")

    def __init__(self, workload: int, ids: Ids, sources: Ids) -> None:
        self.workload = workload
        self.ids = ids
        self.sources = sources

    def __len__(self) -> int:
        return int(self.ids.size)

    def split(self) -> list[ItemBlock]:
        """One block per item (to find which item of a failed block is at fault)."""
        if self.sources.size == 0:
            return [self]
        return [
            ItemBlock(self.workload, self.ids[i : i + 1], self.sources[i : i + 1])
            for i in range(len(self))
        ]


def workload_items(workload: WorkloadSection) -> int:
    """Items of one workload: its sources, or one run of a kind without sources."""
    if workload.sources is None:
        return 1
    if isinstance(workload.sources, RandomSources):
        return workload.sources.random
    return len(workload.sources)


def total_items(spec: JobSpec) -> int:
    """Items of the whole job."""
    return sum(workload_items(w) for w in spec.workload)


def block_size(workload: WorkloadSection, max_batch: int, num_vertices: int) -> int:
    """Items per block: a batch's worth, fewer when large rows (full levels) come back."""
    unit = workload.unit
    if not unit.takes_sources:
        return 1
    row = unit.row_bytes(workload.params, num_vertices)
    return max(1, min(max_batch, LEVELS_BLOCK_BYTES // max(1, row)))


def sources_out_degree(spec: JobSpec, graph: CsrGraph) -> Ids | None:
    """The graph's out-degrees when a workload draws sources by them (else ``None``)."""
    for workload in spec.workload:
        if isinstance(workload.sources, RandomSources) and workload.sources.min_out_degree:
            return np.diff(graph.offsets).astype(np.int64, copy=False)
    return None


def listed_source_arrays(spec: JobSpec) -> dict[int, Ids]:
    """Each workload's listed sources as one int64 array, by workload index.

    Converting a long list takes milliseconds: call it off the event loop, once, and
    hand the arrays to :func:`check_sources` and :func:`iter_blocks`.
    """
    return {
        i: np.asarray(w.sources, dtype=np.int64)
        for i, w in enumerate(spec.workload)
        if isinstance(w.sources, list)
    }


def check_sources(
    spec: JobSpec,
    num_vertices: int,
    job_file: str,
    out_degree: Ids | None = None,
    listed: Mapping[int, Ids] | None = None,
) -> None:
    """Refuse listed sources outside the graph (and random ones from an empty graph).

    Args:
        spec: The job.
        num_vertices: Vertices of its graph.
        job_file: The file, for the messages.
        out_degree: The graph's out-degrees; with them, random sources that must have
            ``min_out_degree`` out-edges are refused when no vertex has that many.
        listed: The listed sources as :func:`listed_source_arrays` made them.

    Raises:
        ConfigurationError: Naming the file, the path inside it and the vertex.
    """
    for i, workload in enumerate(spec.workload):
        sources = workload.sources
        if sources is None:
            continue
        if num_vertices == 0:
            raise ConfigurationError(
                f"{job_file}: $.workload[{i}].sources: the graph has no vertices",
                fix="point [graph] at a graph with vertices.",
            )
        if isinstance(sources, RandomSources):
            wanted = sources.min_out_degree
            if wanted and out_degree is not None and int(out_degree.max()) < wanted:
                raise ConfigurationError(
                    f"{job_file}: $.workload[{i}].sources.min_out_degree: no vertex has "
                    f"{wanted} out-edges (the most is {int(out_degree.max())})",
                    fix=f"lower min_out_degree to at most {int(out_degree.max())}.",
                )
            continue
        ids = listed[i] if listed is not None else np.asarray(sources, dtype=np.int64)
        if ids.size and int(ids.max()) >= num_vertices:
            j = int(np.argmax(ids >= num_vertices))  # the first one out of range
            raise ConfigurationError(
                f"{job_file}: $.workload[{i}].sources[{j}]: vertex {int(ids[j])} is out "
                f"of range for a graph of {num_vertices} vertices",
                fix=f"list vertex ids in [0, {num_vertices - 1}].",
            )


def check_workloads(
    spec: JobSpec, job_file: str, *, num_vertices: int | None, weighted: bool | None
) -> None:
    """Refuse a workload its kind cannot run on the job's graph (or with its parameters).

    Args:
        spec: The job.
        job_file: The file, for the messages.
        num_vertices: Vertices of its graph (``None``: not known yet).
        weighted: Whether the graph has edge weights (``None``: not known yet).

    Raises:
        ConfigurationError: Naming the file, the workload and the kind's fix.
    """
    for i, workload in enumerate(spec.workload):
        where = f"{job_file}: $.workload[{i}]"
        unit, params = workload.unit, workload.params
        if weighted is not None:
            problem = unit.graph_problem(params, weighted=weighted)
            if problem is not None:
                raise ConfigurationError(f"{where}: {problem}", fix=unit.graph_fix)
        if num_vertices is not None:
            try:
                unit.check_params(params, num_vertices)
            except ValidationError as exc:
                raise ConfigurationError(f"{where}: {exc.what}", fix=exc.fix) from None


def iter_blocks(
    spec: JobSpec,
    num_vertices: int,
    committed: npt.NDArray[np.bool_],
    out_degree: Ids | None = None,
    listed: Mapping[int, Ids] | None = None,
) -> Iterator[ItemBlock]:
    """The job's items in id order, in blocks, leaving out ``committed`` ids.

    Args:
        spec: The job.
        num_vertices: Vertices of the loaded graph (random sources are drawn below it).
        committed: One flag per item id; set ids are skipped.
        out_degree: The graph's out-degrees; needed when random sources have a
            ``min_out_degree``.
        listed: The listed sources as :func:`listed_source_arrays` made them (else
            each run of them is converted here).

    Raises:
        ValueError: Random sources have a ``min_out_degree`` and no ``out_degree``
            was given.
    """
    base = 0
    for index, workload in enumerate(spec.workload):
        count = workload_items(workload)
        size = block_size(workload, spec.batching.max_batch, num_vertices)
        if workload.sources is None:
            if not committed[base]:
                yield ItemBlock(index, np.array([base], np.int64), np.empty(0, np.int64))
        else:
            runs = (
                [(0, listed[index])]
                if listed is not None and index in listed
                else _source_runs(workload, num_vertices, count, out_degree)
            )
            for start, sources in runs:
                for at in range(0, sources.size, size):
                    part = sources[at : at + size]
                    ids = np.arange(base + start + at, base + start + at + part.size)
                    keep = ~committed[ids]
                    if keep.all():
                        yield ItemBlock(index, ids, part)
                    elif keep.any():
                        yield ItemBlock(index, ids[keep], part[keep])
        base += count


def _source_runs(
    workload: WorkloadSection, num_vertices: int, count: int, out_degree: Ids | None
) -> Iterator[tuple[int, Ids]]:
    """``(offset, sources)`` runs covering the workload's sources in order."""
    sources = workload.sources
    if isinstance(sources, RandomSources):
        rng = np.random.default_rng(sources.seed)
        eligible: Ids | None = None
        if sources.min_out_degree:
            if out_degree is None:
                raise ValueError("random sources with a min_out_degree need the out-degrees")
            eligible = np.flatnonzero(out_degree >= sources.min_out_degree).astype(np.int64)
        for start in range(0, count, SOURCE_CHUNK):
            size = min(SOURCE_CHUNK, count - start)
            if eligible is None:
                yield start, rng.integers(0, num_vertices, size, dtype=np.int64)
            else:
                yield start, eligible[rng.integers(0, eligible.size, size, dtype=np.int64)]
    elif sources is not None:
        for start in range(0, count, SOURCE_CHUNK):
            yield start, np.asarray(sources[start : start + SOURCE_CHUNK], dtype=np.int64)
